"""`images update` against a real git remote: commit, push, race, update branch, refusal,
signed commits (SSH and GPG, verified by git), and ``--pr`` against a GitHub stand-in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from action.images import commitsign, gitops, setters, update
from action.images.model import Automation, NamespacedName
from lockgate.errors import ExitCode, UsageError
from tests.integration.images_support import (
    LOCKGATE,
    GitHubStandIn,
    Run,
    flux_config,
    lockgate,
    native_config,
    seed_tags,
)
from tests.world.gitremote import GitRemote
from tests.world.registry import Registry

AUTHOR = gitops.Author("lockgate-bot", "bot@example.com")
#: retries without waiting: the race tests need the retries, not the backoff
NO_WAIT = gitops.Backoff(initial=0.0)
DEPLOY = 'image: docker.io/library/redis:7.0.0 # {"$imagepolicy": "apps:redis"}\n'
VALUES = 'tag: 6.0.0 # {"$imagepolicy": "web:podinfo:tag"}\n'
TEMPLATE = (
    "Automated update by {{ .AutomationObject }}\n\n"
    "{{ range $file, $objects := .Changed.FileChanges -}}\n"
    "{{ $file }}:\n"
    "{{- range $obj, $changes := $objects }}{{ range $changes }}\n"
    "- {{ .Setter }}: {{ .OldValue }} -> {{ .NewValue }}{{ end }}{{ end }}\n"
    "{{ end -}}"
)


def sh(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def seed(git_remote: GitRemote, name: str, tmp_path: Path) -> str:
    url = git_remote.create(name)
    work = tmp_path / "seed"
    sh(tmp_path, "clone", "--quiet", url, str(work))
    (work / "deploy").mkdir()
    (work / "deploy" / "redis.yaml").write_text(DEPLOY)
    (work / "deploy" / "values.yaml").write_text(VALUES)
    sh(work, "add", ".")
    sh(work, "-c", "user.name=seed", "-c", "user.email=seed@example.com", "commit", "--quiet", "-m", "seed")
    sh(work, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    return url


def clone(url: str, path: Path) -> Path:
    sh(path.parent, "clone", "--quiet", "--branch", "main", url, str(path))
    return path


def updater(table: setters.Setters, automation: Automation, barrier: threading.Barrier | None = None):  # type: ignore[no-untyped-def]
    calls: list[int] = []

    def apply(repo: Path) -> gitops.Applied | None:
        calls.append(1)
        tree = update.rewrite_tree(repo, "deploy", table)
        paths = update.write(repo, tree)
        if barrier is not None and len(calls) == 1:
            barrier.wait(timeout=30)  # both updaters have applied before either pushes
        return gitops.Applied(tuple(paths), update.commit_message(automation, tree)) if paths else None

    return apply, calls


REDIS = setters.Setters(
    setters.Setters.for_policy("apps:redis", image="docker.io/library/redis", tag="7.2.4")
)
PODINFO = setters.Setters(
    setters.Setters.for_policy("web:podinfo", image="ghcr.io/stefanprodan/podinfo", tag="6.5.0")
)
APPS = Automation(
    NamespacedName("apps", "images"), "lockgate-bot", "bot@example.com", message_template=TEMPLATE
)
WEB = Automation(NamespacedName("web", "images"), "lockgate-bot", "bot@example.com")


def remote_file(url: str, tmp_path: Path, path: str, branch: str = "main") -> str:
    check = tmp_path / f"check-{branch}"
    if not check.exists():
        sh(tmp_path, "clone", "--quiet", "--branch", branch, url, str(check))
    else:
        sh(check, "pull", "--quiet")
    return (check / path).read_text()


def test_commits_with_author_and_rendered_message_and_pushes(
    git_remote: GitRemote, unique: str, tmp_path: Path
) -> None:
    url = seed(git_remote, unique, tmp_path)
    repo = clone(url, tmp_path / "a")
    apply, _ = updater(REDIS, APPS)
    outcome = gitops.commit_and_push(repo, apply, author=AUTHOR)
    assert outcome.pushed and outcome.commit and outcome.attempts == 1
    assert remote_file(url, tmp_path, "deploy/redis.yaml") == DEPLOY.replace("7.0.0", "7.2.4")
    log = sh(tmp_path / "check-main", "log", "-1", "--format=%an <%ae>|%cn|%B")
    assert log.startswith("lockgate-bot <bot@example.com>|lockgate-bot|Automated update by apps/images\n\n")
    assert (
        "deploy/redis.yaml:\n- apps:redis: docker.io/library/redis:7.0.0 -> docker.io/library/redis:7.2.4"
        in log
    )


def test_nothing_to_change_makes_no_commit(git_remote: GitRemote, unique: str, tmp_path: Path) -> None:
    url = seed(git_remote, unique, tmp_path)
    repo = clone(url, tmp_path / "a")
    head = sh(repo, "rev-parse", "HEAD")
    unrelated = setters.Setters(
        setters.Setters.for_policy("apps:redis", image="docker.io/library/redis", tag="7.0.0")
    )
    apply, _ = updater(unrelated, APPS)
    outcome = gitops.commit_and_push(repo, apply, author=AUTHOR)
    assert outcome.commit is None and not outcome.pushed
    assert sh(repo, "rev-parse", "HEAD") == head
    assert sh(repo, "ls-remote", "origin", "refs/heads/main").split()[0] == head.strip()


def test_two_updaters_pushing_at_once_both_land(git_remote: GitRemote, unique: str, tmp_path: Path) -> None:
    url = seed(git_remote, unique, tmp_path)
    barrier = threading.Barrier(2)
    repos = [clone(url, tmp_path / "a"), clone(url, tmp_path / "b")]
    jobs = [updater(REDIS, APPS, barrier), updater(PODINFO, WEB, barrier)]
    outcomes: list[gitops.Outcome] = []
    errors: list[BaseException] = []

    def run(repo: Path, apply: Callable[[Path], gitops.Applied | None]) -> None:
        try:
            outcomes.append(gitops.commit_and_push(repo, apply, author=AUTHOR, backoff=NO_WAIT))
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=(repo, job[0])) for repo, job in zip(repos, jobs, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, [str(e) for e in errors]
    assert len(outcomes) == 2
    assert sorted(o.attempts for o in outcomes) == [1, 2]  # the loser re-applied on the new head
    assert sorted(len(calls) for _, calls in jobs) == [1, 2]
    assert remote_file(url, tmp_path, "deploy/redis.yaml") == DEPLOY.replace("7.0.0", "7.2.4")
    assert remote_file(url, tmp_path, "deploy/values.yaml") == VALUES.replace("6.0.0", "6.5.0")
    assert len(sh(tmp_path / "check-main", "log", "--format=%H").split()) == 3


def test_push_branch_is_created_then_continued(git_remote: GitRemote, unique: str, tmp_path: Path) -> None:
    url = seed(git_remote, unique, tmp_path)
    first = clone(url, tmp_path / "a")
    apply, _ = updater(REDIS, APPS)
    outcome = gitops.commit_and_push(first, apply, author=AUTHOR, push_branch="image-updates")
    assert outcome.pushed and outcome.branch == "image-updates"
    second = clone(url, tmp_path / "b")
    apply, _ = updater(PODINFO, WEB)
    gitops.commit_and_push(second, apply, author=AUTHOR, push_branch="image-updates")
    assert remote_file(url, tmp_path, "deploy/redis.yaml", "image-updates") == DEPLOY.replace(
        "7.0.0", "7.2.4"
    )
    assert remote_file(url, tmp_path, "deploy/values.yaml", "image-updates") == VALUES.replace(
        "6.0.0", "6.5.0"
    )
    assert remote_file(url, tmp_path, "deploy/redis.yaml") == DEPLOY  # main untouched


def test_refused_push_stops_and_keeps_the_commit(git_remote: GitRemote, unique: str, tmp_path: Path) -> None:
    url = seed(git_remote, unique, tmp_path)
    hook = git_remote.base / f"{unique}.git" / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'branch is protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    repo = clone(url, tmp_path / "a")
    apply, calls = updater(REDIS, APPS)
    with pytest.raises(gitops.PushRejectedError, match="refused") as caught:
        gitops.commit_and_push(repo, apply, author=AUTHOR, backoff=NO_WAIT)
    assert len(calls) == 1
    assert "branch is protected" in caught.value.message
    assert sh(repo, "cat-file", "-t", caught.value.commit).strip() == "commit"
    assert "7.2.4" in sh(repo, "show", f"{caught.value.commit}:deploy/redis.yaml")


def test_dirty_working_tree_is_refused(git_remote: GitRemote, unique: str, tmp_path: Path) -> None:
    url = seed(git_remote, unique, tmp_path)
    repo = clone(url, tmp_path / "a")
    (repo / "deploy" / "redis.yaml").write_text("edited\n")
    apply, calls = updater(REDIS, APPS)
    with pytest.raises(UsageError, match="uncommitted changes"):
        gitops.commit_and_push(repo, apply, author=AUTHOR)
    assert not calls


def test_ssh_signed_commit_verifies_with_allowed_signers(
    git_remote: GitRemote, unique: str, tmp_path: Path
) -> None:
    key = tmp_path / "signing" / "id_ed25519"
    key.parent.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bot", "-f", str(key)], check=True)
    allowed = tmp_path / "signing" / "allowed_signers"
    allowed.write_text(f"bot@example.com {key.with_suffix('.pub').read_text().strip()}\n")
    url = seed(git_remote, unique, tmp_path)
    repo = clone(url, tmp_path / "a")
    apply, _ = updater(REDIS, APPS)
    signing = commitsign.Signing.from_key(str(key))
    assert signing.format == "ssh"
    outcome = gitops.commit_and_push(repo, apply, author=AUTHOR, signing=signing)
    assert outcome.pushed and outcome.signed and outcome.commit
    remote_file(url, tmp_path, "deploy/redis.yaml")  # a fresh clone of what was pushed
    verified = subprocess.run(
        ["git", "-c", f"gpg.ssh.allowedSignersFile={allowed}", "verify-commit", "--raw", outcome.commit],
        cwd=tmp_path / "check-main",
        capture_output=True,
        text=True,
    )
    assert verified.returncode == 0, verified.stderr
    assert 'Good "git" signature for bot@example.com' in verified.stderr


@pytest.fixture
def gnupg_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty GnuPG home (short path: gpg-agent's socket must fit in sun_path)."""
    home = Path(tempfile.mkdtemp(prefix="gpg-", dir="/tmp"))
    home.chmod(0o700)
    monkeypatch.setenv("GNUPGHOME", str(home))
    yield home
    subprocess.run(
        ["gpgconf", "--kill", "gpg-agent"], env={**os.environ, "GNUPGHOME": str(home)}, check=False
    )
    shutil.rmtree(home, ignore_errors=True)


def test_gpg_signed_commit_verifies(
    git_remote: GitRemote, unique: str, tmp_path: Path, gnupg_home: Path
) -> None:
    subprocess.run(
        [
            "gpg",
            "--batch",
            "--passphrase",
            "",
            "--quick-gen-key",
            "bot <bot@example.com>",
            "ed25519",
            "sign",
            "never",
        ],
        check=True,
        capture_output=True,
    )
    url = seed(git_remote, unique, tmp_path)
    repo = clone(url, tmp_path / "a")
    apply, _ = updater(REDIS, APPS)
    outcome = gitops.commit_and_push(
        repo, apply, author=AUTHOR, signing=commitsign.Signing.from_key("bot@example.com")
    )
    assert outcome.signed and outcome.commit
    verified = subprocess.run(
        ["git", "verify-commit", outcome.commit], cwd=repo, capture_output=True, text=True
    )
    assert verified.returncode == 0, verified.stderr
    assert 'Good signature from "bot <bot@example.com>"' in verified.stderr


def test_signing_without_a_usable_key_fails_before_pushing(
    git_remote: GitRemote, unique: str, tmp_path: Path, gnupg_home: Path
) -> None:
    url = seed(git_remote, unique, tmp_path)
    repo = clone(url, tmp_path / "a")
    apply, _ = updater(REDIS, APPS)
    with pytest.raises(gitops.GitError, match="pass --signing-key"):
        gitops.commit_and_push(repo, apply, author=AUTHOR, signing=commitsign.Signing())
    assert (
        sh(repo, "ls-remote", "origin", "refs/heads/main").split()[0]
        == sh(repo, "rev-parse", "origin/main").strip()
    )


def _automation_repo(git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path) -> str:
    """A repository holding a native ImageAutomation and one marked file, pushed to main."""
    url = git_remote.create(unique)
    work = tmp_path / "seed"
    sh(tmp_path, "clone", "--quiet", url, str(work))
    native_config(work, [f"{{name: app, image: '{registry.host}/{unique}', semver: '*'}}"])
    (work / "deploy").mkdir()
    (work / "deploy" / "app.yaml").write_text(
        f'image: {registry.host}/{unique}:1.0.0 # {{"$imagepolicy": "apps:app"}}\n'
    )
    sh(work, "add", ".")
    sh(work, "-c", "user.name=seed", "-c", "user.email=seed@example.com", "commit", "--quiet", "-m", "seed")
    sh(work, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    return url


def test_pr_opens_then_updates_one_pull_request(
    git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """GitHub is played by GitHubStandIn, a local HTTP endpoint recording the REST calls."""
    url = _automation_repo(git_remote, registry, unique, tmp_path)
    seed_tags(registry.host, unique, ["1.0.0", "1.1.0"])
    token = "ghs_test-token-9d2e"
    with GitHubStandIn().running() as github:
        env = {"GITHUB_TOKEN": token, "GITHUB_API_URL": github.url, "GITHUB_REPOSITORY": "acme/app"}

        def update(run_name: str) -> Run:
            checkout = clone(url, tmp_path / run_name)
            return lockgate(
                "images", "update", "--path", str(checkout), "--pr", "--branch", "image-updates", env=env
            )

        first = update("first")
        assert first.code == 0, first.err
        assert "pull request #1 opened: https://github.test/pull/1" in first.out
        listing, created = github.calls
        assert listing["method"] == "GET" and listing["path"] == "/repos/acme/app/pulls"
        assert listing["query"] == {"head": "acme:image-updates", "base": "main", "state": "open"}
        assert created["method"] == "POST"
        body = created["body"]
        assert isinstance(body, dict)
        assert (body["head"], body["base"], body["title"]) == (
            "image-updates",
            "main",
            "Update from image update automation",
        )
        assert f"{registry.host}/{unique}:1.1.0" in str(body["body"])
        assert all(call["authorization"] == f"Bearer {token}" for call in github.calls)
        assert remote_file(url, tmp_path, "deploy/app.yaml", "image-updates").startswith(
            f"image: {registry.host}/{unique}:1.1.0 "
        )
        assert remote_file(url, tmp_path, "deploy/app.yaml").startswith(
            f"image: {registry.host}/{unique}:1.0.0 "
        )

        seed_tags(registry.host, unique, ["1.2.0"])
        second = update("second")
        assert second.code == 0, second.err
        assert "pull request #1 updated" in second.out
        patched = github.calls[-1]
        assert patched["method"] == "PATCH" and patched["path"] == "/repos/acme/app/pulls/1"
        assert f"{registry.host}/{unique}:1.2.0" in str(patched["body"])
        assert len(github.pulls) == 1

        third = update("third")  # nothing new: no commit, no PATCH, the pull request stays
        assert third.code == 0, third.err
        assert [c["method"] for c in github.calls] == ["GET", "POST", "GET", "PATCH", "GET"]
        for run_ in (first, second, third):
            assert token not in run_.out + run_.err


def test_pr_without_token_stops_before_committing(
    git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path
) -> None:
    url = _automation_repo(git_remote, registry, unique, tmp_path)
    seed_tags(registry.host, unique, ["1.0.0", "1.1.0"])
    checkout = clone(url, tmp_path / "a")
    head = sh(checkout, "rev-parse", "HEAD")
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
    flags = ["--pr", "--forge=github", "--branch=image-updates"]
    proc = subprocess.run(
        [*LOCKGATE, "images", "update", "--path", str(checkout), *flags],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == ExitCode.USAGE
    assert "--pr needs GITHUB_TOKEN" in proc.stderr
    assert sh(checkout, "rev-parse", "HEAD") == head
    assert not sh(checkout, "ls-remote", "origin", "refs/heads/image-updates").strip()


def test_cli_commit_and_push_with_ssh_signing(
    git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path
) -> None:
    url = _automation_repo(git_remote, registry, unique, tmp_path)
    seed_tags(registry.host, unique, ["1.0.0", "1.3.0"])
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    checkout = clone(url, tmp_path / "a")
    result = lockgate(
        "images",
        "update",
        "--path",
        str(checkout),
        "--commit",
        "--push",
        "--signing-key",
        str(key),
        "--output",
        "json",
    )
    assert result.code == 0, result.err
    (automation,) = json.loads(result.out)["automations"]
    assert automation["pushed"] and automation["signed"] and automation["branch"] == "main"
    assert sh(checkout, "log", "-1", "--format=%G?").strip() in ("G", "U", "N")  # N: no allowed signers given
    assert "gpgsig" in sh(checkout, "cat-file", "commit", automation["commit"])


def _shared_repo(
    git_remote: GitRemote,
    registry: Registry,
    unique: str,
    tmp_path: Path,
    *,
    extra: dict[str, str] | None = None,
) -> str:
    """One repository carrying markers for three automations' namespaces, pushed to main.

    ``apps`` is the native ImageAutomation run here; ``ops:db`` is a Flux policy defined in
    the files read (its automation lives elsewhere); ``web:podinfo`` is defined nowhere here.
    """
    app, db = f"{registry.host}/{unique}", f"{registry.host}/{unique}-db"
    seed_tags(registry.host, unique, ["1.0.0", "1.1.0"])
    seed_tags(registry.host, f"{unique}-db", ["1.0.0", "1.1.0"])
    url = git_remote.create(unique)
    work = tmp_path / "seed"
    sh(tmp_path, "clone", "--quiet", url, str(work))
    native_config(work, [f"{{name: app, image: '{app}', semver: '*'}}"])
    (work / "ops.yaml").write_text(
        "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\n"
        f"metadata: {{name: db, namespace: ops}}\nspec:\n  image: {db}\n"
        "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\n"
        "metadata: {name: db, namespace: ops}\n"
        "spec:\n  imageRepositoryRef: {name: db}\n  policy: {semver: {range: '*'}}\n"
    )
    (work / "deploy").mkdir()
    (work / "deploy" / "app.yaml").write_text(f'image: {app}:1.0.0 # {{"$imagepolicy": "apps:app"}}\n')
    (work / "deploy" / "shared.yaml").write_text(SHARED.format(app=app, db=db))
    for name, text in (extra or {}).items():
        (work / "deploy" / name).write_text(text)
    sh(work, "add", ".")
    sh(work, "-c", "user.name=seed", "-c", "user.email=seed@example.com", "commit", "--quiet", "-m", "seed")
    sh(work, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    return url


SHARED = (
    'app: {app}:1.0.0 # {{"$imagepolicy": "apps:app"}}\n'
    'db: {db}:1.0.0 # {{"$imagepolicy": "ops:db"}}\n'
    'web: ghcr.io/acme/web:6.0.0 # {{"$imagepolicy": "web:podinfo"}}\n'
)


def test_markers_of_other_namespaces_are_notices_and_the_rest_is_updated(
    git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path
) -> None:
    url = _shared_repo(git_remote, registry, unique, tmp_path)
    checkout = clone(url, tmp_path / "a")
    result = lockgate("images", "update", "--path", str(checkout), "--commit", "--push", "--output", "json")
    assert result.code == 0, result.err
    (automation,) = json.loads(result.out)["automations"]
    assert automation["pushed"]
    assert [(p["file"], p["line"], p["kind"]) for p in automation["problems"]] == [
        ("deploy/shared.yaml", 2, "out-of-scope"),
        ("deploy/shared.yaml", 3, "out-of-scope"),
    ]
    app, db = f"{registry.host}/{unique}", f"{registry.host}/{unique}-db"
    assert remote_file(url, tmp_path, "deploy/app.yaml").startswith(f"image: {app}:1.1.0 ")
    assert remote_file(url, tmp_path, "deploy/shared.yaml") == SHARED.format(app=app, db=db).replace(
        f"{app}:1.0.0", f"{app}:1.1.0"
    )


def test_unknown_policy_in_the_automations_namespace_still_fails_and_keeps_its_file(
    git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path
) -> None:
    broken = 'image: example.com/gone:1.0.0 # {"$imagepolicy": "apps:gone"}\n'
    url = _shared_repo(git_remote, registry, unique, tmp_path, extra={"broken.yaml": broken})
    checkout = clone(url, tmp_path / "a")
    result = lockgate("images", "update", "--path", str(checkout), "--commit", "--push")
    assert result.code == ExitCode.PARTIAL, result.err
    assert "deploy/broken.yaml:1: unknown-policy: marker names unknown image policy 'apps:gone'" in result.err
    assert remote_file(url, tmp_path, "deploy/broken.yaml") == broken
    assert remote_file(url, tmp_path, "deploy/app.yaml").startswith(f"image: {registry.host}/{unique}:1.1.0 ")


def test_strict_makes_out_of_scope_markers_a_failure(
    git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path
) -> None:
    url = _shared_repo(git_remote, registry, unique, tmp_path)
    checkout = clone(url, tmp_path / "a")
    result = lockgate("images", "update", "--path", str(checkout), "--commit", "--push", "--strict")
    assert result.code == ExitCode.PARTIAL, result.err
    assert "deploy/shared.yaml:3: out-of-scope: marker 'web:podinfo' skipped" in result.err
    assert "--strict" in result.err
    # the run still did all it could, as every partial run does
    assert remote_file(url, tmp_path, "deploy/app.yaml").startswith(f"image: {registry.host}/{unique}:1.1.0 ")


ENVIRON_WALK = "{{ with .__class__.__init__.__globals__.os.environ }}{{ .GITHUB_TOKEN }}{{ end }}"


@pytest.mark.parametrize(
    ("template", "field"),
    [("{{ .Values.__class__ }}", ".Values.__class__"), (ENVIRON_WALK, ".__class__")],
    ids=["values-class", "environ-walk"],
)
def test_template_reaching_past_its_data_is_refused_and_nothing_is_committed(
    git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path, template: str, field: str
) -> None:
    """Issue 21 item 4: a template resolves only the fields Flux documents, never Python attributes."""
    url = git_remote.create(unique)
    work = tmp_path / "seed"
    sh(tmp_path, "clone", "--quiet", url, str(work))
    flux_config(work, "app", f"{registry.host}/{unique}")
    quoted = template.replace("'", "''")
    (work / "automation.yaml").write_text(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
        "metadata: {name: images, namespace: apps}\n"
        "spec:\n  git:\n    commit:\n      author: {email: bot@example.com}\n"
        f"      messageTemplate: '{quoted}'\n      messageTemplateValues: {{cluster: prod}}\n"
        "  update: {path: deploy}\n"
    )
    (work / "deploy").mkdir()
    (work / "deploy" / "app.yaml").write_text(
        f'image: {registry.host}/{unique}:1.0.0 # {{"$imagepolicy": "apps:app"}}\n'
    )
    sh(work, "add", ".")
    sh(work, "-c", "user.name=seed", "-c", "user.email=seed@example.com", "commit", "--quiet", "-m", "seed")
    sh(work, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    seed_tags(registry.host, unique, ["1.0.0", "1.1.0"])
    checkout = clone(url, tmp_path / "a")
    head = sh(checkout, "rev-parse", "HEAD")
    token = "ghs_never-in-a-commit-5b1f"
    result = lockgate(
        "images", "update", "--path", str(checkout), "--commit", "--push", env={"GITHUB_TOKEN": token}
    )
    assert result.code == ExitCode.USAGE, (result.code, result.out, result.err)
    assert field in result.err and "commit message template" in result.err
    assert token not in result.out + result.err
    assert sh(checkout, "rev-parse", "HEAD") == head
    assert sh(checkout, "status", "--porcelain") == ""  # no file was rewritten either
    assert sh(checkout, "ls-remote", "origin", "refs/heads/main").split()[0] == head.strip()


def test_dry_run_never_says_updated_and_a_run_with_nothing_to_do_says_so(
    git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path
) -> None:
    broken = 'image: example.com/gone:1.0.0 # {"$imagepolicy": "apps:gone"}\n'
    url = _shared_repo(git_remote, registry, unique, tmp_path, extra={"broken.yaml": broken})
    checkout = clone(url, tmp_path / "a")
    dry = lockgate("images", "update", "--path", str(checkout), "--dry-run")
    assert dry.code == ExitCode.PARTIAL, dry.err
    said = (dry.out + dry.err).replace(unique, "NAME")  # the test's name is in the image names
    assert "updated" not in said.lower(), said
    assert "2 value(s) in 2 file(s) would change; nothing was written (--dry-run)" in dry.out
    assert "some files were skipped (see above); nothing was written (--dry-run)" in dry.err
    assert sh(checkout, "status", "--porcelain") == ""
    (checkout / "deploy" / "broken.yaml").unlink()
    sh(checkout, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "drop broken")
    done = lockgate("images", "update", "--path", str(checkout))
    assert done.code == 0, done.err
    assert "2 value(s) in 2 file(s) changed" in done.out, done.out
    again = lockgate("images", "update", "--path", str(checkout), "--dry-run")
    assert again.code == 0, again.err
    assert again.out.strip().endswith("nothing to update: every marked value is its policy's latest"), (
        again.out
    )
