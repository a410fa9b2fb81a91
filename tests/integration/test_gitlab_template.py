"""The GitLab CI template (workflows/gitlab/lockgate.gitlab-ci.yml) run by ``gitlab-ci-local``.

gitlab-ci-local (npm, pinned in tests/world/npm.py) reads a project's ``.gitlab-ci.yml`` as
GitLab does (include, extends, rules, variables, dotenv reports, its own copy of GitLab's CI
JSON schema) and runs the jobs. No container engine runs here, so ``--force-shell-executor``
runs them on the host, where the venv's ``lockgate`` stands in for the image's: the
``image:`` is the only part not exercised. The project is a clone of a repository of the
world's git remote; artifacts go to the world's registries (the password-protected one for
publish, so the template's credentials from the environment are used). Keyless signing runs
against the world's Sigstore stack: gitlab-ci-local validates ``id_tokens`` but mints no
token, so the test plays GitLab's part and hands the job ``SIGSTORE_ID_TOKEN`` minted by the
world's GitLab-shaped OIDC issuer for this project and commit (tests/world/ci_tokens.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.integration.images_support import native_config, seed_tags
from tests.integration.reconcile_support import configmap, dump
from tests.world import ci_tokens, npm
from tests.world.forges import ForgeStandIn
from tests.world.gitremote import GitRemote
from tests.world.registry import Registry
from tests.world.sigstore import SigstoreStack

TEMPLATE = Path(__file__).resolve().parents[2] / "workflows" / "gitlab" / "lockgate.gitlab-ci.yml"
VENV_BIN = Path(sys.executable).parent


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def project(git_remote: GitRemote, name: str, tmp_path: Path, jobs: Mapping[str, object]) -> Path:
    """A clone of a new world repository on main, holding the template (included locally, as
    a copy of it is) and a ``.gitlab-ci.yml`` of ``jobs``."""
    url = git_remote.create(name)
    work = tmp_path / "project"
    git(tmp_path, "clone", "--quiet", url, str(work))
    git(work, "checkout", "--quiet", "-b", "main")
    shutil.copy(TEMPLATE, work / "lockgate.gitlab-ci.yml")
    pipeline = {"include": [{"local": "lockgate.gitlab-ci.yml"}], **jobs}
    (work / ".gitlab-ci.yml").write_text(yaml.safe_dump(pipeline, sort_keys=False))
    return work


def commit_all(work: Path, message: str = "seed") -> None:
    git(work, "add", "-A")
    git(work, "-c", "user.name=seed", "-c", "user.email=seed@example.com", "commit", "--quiet", "-m", message)
    git(work, "push", "--quiet", "origin", "HEAD:refs/heads/main")


def gitlab_ci_local(
    work: Path, *args: str, variables: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [
        *npm.command(npm.GITLAB_CI_LOCAL),
        "--force-shell-executor",
        "--no-color",
        "--home",
        str(work.parent / "gcl-home"),
        # its state (and the copy of the tree it makes) outside the checkout, as a runner's
        "--state-dir",
        os.path.relpath(work.parent / "gcl-state", work),
        "--ignore-predefined-vars",
        "CI_PIPELINE_SOURCE",
    ]
    for key, value in (variables or {}).items():
        argv += ["--variable", f"{key}={value}"]
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("KUBECONFIG", None)
    return subprocess.run([*argv, *args], cwd=work, capture_output=True, text=True, env=env, timeout=600)


def lockgate(*args: str) -> dict[str, Any]:
    done = subprocess.run([str(VENV_BIN / "lockgate"), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    value: dict[str, Any] = json.loads(done.stdout)
    return value


def test_publish_pushes_with_the_jobs_registry_login_and_values_with_spaces_intact(
    git_remote: GitRemote, auth_registry: Registry, unique: str, tmp_path: Path
) -> None:
    work = project(git_remote, unique, tmp_path, {"publish": {"extends": ".lockgate-publish"}})
    (work / "my deploy").mkdir()
    (work / "my deploy" / "cm.yaml").write_text(dump(configmap("web", "apps", {"v": "1"})))
    commit_all(work)
    url = auth_registry.oci(f"{unique}/manifests", ":v1")
    assert auth_registry.username and auth_registry.password
    ran = gitlab_ci_local(
        work,
        "publish",
        variables={
            "LOCKGATE_PATH": "my deploy",
            "LOCKGATE_URL": url,
            "LOCKGATE_TAGS": "latest,\nstable",
            "LOCKGATE_SOURCE": "https://gitlab.example/group/app with spaces",
            "LOCKGATE_REGISTRY_HOST": auth_registry.host,
            "LOCKGATE_REGISTRY_USERNAME": auth_registry.username,
            "LOCKGATE_REGISTRY_PASSWORD": auth_registry.password,
        },
    )
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert auth_registry.password not in ran.stdout + ran.stderr
    report = json.loads((work / "lockgate-publish.json").read_text())
    env = dict(line.split("=", 1) for line in (work / "lockgate.env").read_text().split())
    assert env["LOCKGATE_DIGEST"] == report["digest"]
    creds = f"{auth_registry.username}:{auth_registry.password}"
    base = url.rsplit(":", 1)[0]
    for tag in ("v1", "latest", "stable"):
        seen = lockgate("inspect", f"{base}:{tag}", "--creds", creds, "-o", "json")
        assert seen["digest"] == report["digest"], tag
    annotations = seen["annotations"]
    assert annotations["org.opencontainers.image.source"] == "https://gitlab.example/group/app with spaces"
    sha = git(work, "rev-parse", "HEAD").strip()
    assert annotations["org.opencontainers.image.revision"] == f"main@sha1:{sha}"
    # the password reached lockgate through its environment: no Docker config was written
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("lockgate-*/docker/config.json"))
    assert not (work / ".docker").exists()


def test_image_update_commits_and_pushes_the_newest_allowed_tag(
    git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path
) -> None:
    work = project(git_remote, unique, tmp_path, {"image-update": {"extends": ".lockgate-image-update"}})
    image = f"{registry.host}/{unique}"
    seed_tags(registry.host, unique, ["1.0.0", "1.3.0", "2.0.0-rc.1"])
    native_config(work, [f"{{name: app, image: '{image}', semver: '^1'}}"])
    (work / "deploy").mkdir()
    (work / "deploy" / "app.yaml").write_text(f'image: {image}:1.0.0 # {{"$imagepolicy": "apps:app"}}\n')
    commit_all(work)
    ran = gitlab_ci_local(work, "image-update", variables={"CI_PIPELINE_SOURCE": "schedule"})
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    check = tmp_path / "check"
    git(tmp_path, "clone", "--quiet", "--branch", "main", git_remote.url(unique), str(check))
    assert (check / "deploy" / "app.yaml").read_text().startswith(f"image: {image}:1.3.0 ")
    assert git(check, "log", "-1", "--format=%ae").strip() == "bot@example.com"


def test_a_signed_publish_then_diff_reports_the_change_and_fails_only_when_it_cannot_diff(
    git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path
) -> None:
    jobs = {"publish": {"extends": ".lockgate-publish"}, "diff": {"extends": ".lockgate-diff"}}
    work = project(git_remote, unique, tmp_path, jobs)
    (work / "deploy").mkdir()
    (work / "deploy" / "cm.yaml").write_text(dump(configmap("web", "apps", {"v": "1"})))
    commit_all(work)
    url = registry.oci(f"{unique}/manifests", ":latest")
    common = {"LOCKGATE_PATH": "deploy", "LOCKGATE_URL": url, "LOCKGATE_REGISTRY_HOST": ""}
    # signed with a cosign key: the key a File variable, its password a masked variable
    keys = tmp_path / "keys"
    keys.mkdir()
    made = subprocess.run(
        [str(VENV_BIN / "lockgate"), "keygen", "--output-key-prefix", str(keys / "cosign")],
        capture_output=True,
        text=True,
        env={**os.environ, "LOCKGATE_PASSWORD": "pass word"},
    )
    assert made.returncode == 0, made.stderr
    signing = {
        "LOCKGATE_SIGN": "key",
        "LOCKGATE_KEY": str(keys / "cosign.key"),
        "LOCKGATE_PASSWORD": "pass word",
    }
    published = gitlab_ci_local(work, "publish", variables={**common, **signing, "LOCKGATE_TAGS": ""})
    assert published.returncode == 0, published.stdout[-4000:] + published.stderr[-2000:]
    assert "pass word" not in published.stdout + published.stderr
    verified = subprocess.run(
        [str(VENV_BIN / "lockgate"), "verify", url, "--key", str(keys / "cosign.pub")],
        capture_output=True,
        text=True,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    unsigned = gitlab_ci_local(work, "publish", variables={**common, "LOCKGATE_SIGN": "key"})
    assert unsigned.returncode != 0 and "LOCKGATE_SIGN=key needs LOCKGATE_KEY" in unsigned.stdout, (
        unsigned.stdout
    )

    (work / "deploy" / "cm.yaml").write_text(dump(configmap("web", "apps", {"v": "2"})))
    commit_all(work, "change")
    mr = {**common, "CI_PIPELINE_SOURCE": "merge_request_event"}
    ran = gitlab_ci_local(work, "diff", variables=mr)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert f"lockgate: deploy differs from {url}" in ran.stdout
    diff = (work / "lockgate-diff.txt").read_text()
    assert "~ ConfigMap/apps/web (configured)" in diff and 'data.v: "1" -> "2"' in diff, diff

    missing = gitlab_ci_local(
        work, "diff", variables={**mr, "LOCKGATE_URL": registry.oci(f"{unique}/nothing", ":x")}
    )
    assert missing.returncode != 0 and f"{unique}/nothing" in missing.stdout, missing.stdout[-4000:]


def test_image_update_with_a_merge_request_branch_keeps_one_merge_request(
    git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """GitLab's API is a stand-in (tests/world/forges.py) recording the merge request calls;
    the job reaches it through LOCKGATE_FORGE_API_URL (in GitLab CI: $CI_API_V4_URL)."""
    work = project(git_remote, unique, tmp_path, {"image-update": {"extends": ".lockgate-image-update"}})
    image = f"{registry.host}/{unique}"
    seed_tags(registry.host, unique, ["1.0.0", "1.3.0"])
    native_config(work, [f"{{name: app, image: '{image}', semver: '^1'}}"])
    (work / "deploy").mkdir()
    (work / "deploy" / "app.yaml").write_text(f'image: {image}:1.0.0 # {{"$imagepolicy": "apps:app"}}\n')
    commit_all(work)
    token = "glpat-template-token-0123"
    with ForgeStandIn("gitlab", ("PRIVATE-TOKEN", token)).running() as gitlab:
        ran = gitlab_ci_local(
            work,
            "image-update",
            variables={
                "CI_PIPELINE_SOURCE": "schedule",
                "LOCKGATE_MR_BRANCH": "image-updates",
                "LOCKGATE_MR_LABELS": "images,automated",
                "GITLAB_TOKEN": token,
                "LOCKGATE_FORGE_API_URL": f"{gitlab.url}/api/v4",
            },
        )
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert token not in ran.stdout + ran.stderr
    [pull] = gitlab.pulls.values()
    assert (pull["source_branch"], pull["target_branch"]) == ("image-updates", "main")
    assert pull["labels"] == "images,automated"
    assert f"`{image}:1.0.0` -> `{image}:1.3.0`" in pull["description"]
    assert [c.method for c in gitlab.calls] == ["GET", "POST"]
    check = tmp_path / "check"
    git(tmp_path, "clone", "--quiet", "--branch", "image-updates", git_remote.url(unique), str(check))
    assert (check / "deploy" / "app.yaml").read_text().startswith(f"image: {image}:1.3.0 ")
    main = json.loads((work / "lockgate-images.json").read_text())
    assert main["automations"][0]["pullRequest"]["action"] == "opened"
def test_keyless_publish_signs_with_the_jobs_id_token_as_the_project_and_commit(
    git_remote: GitRemote, registry: Registry, sigstore_stack: SigstoreStack, unique: str, tmp_path: Path
) -> None:
    work = project(git_remote, unique, tmp_path, {"publish": {"extends": ".lockgate-publish"}})
    (work / "deploy").mkdir()
    (work / "deploy" / "cm.yaml").write_text(dump(configmap("web", "apps", {"v": "1"})))
    commit_all(work)
    sha = git(work, "rev-parse", "HEAD").strip()
    url = registry.oci(f"{unique}/manifests", ":main")
    keyless = {
        "LOCKGATE_PATH": "deploy",
        "LOCKGATE_URL": url,
        "LOCKGATE_TAGS": "",
        "LOCKGATE_REGISTRY_HOST": "",
        "LOCKGATE_SIGN": "keyless",
        "LOCKGATE_TRUST_CONFIG": str(sigstore_stack.trust_config),
    }
    # without the ID token the job says which one it needs, before anything is pushed
    untokened = gitlab_ci_local(work, "publish", variables=keyless)
    assert untokened.returncode != 0
    assert "LOCKGATE_SIGN=keyless needs the job ID token SIGSTORE_ID_TOKEN" in untokened.stdout, (
        untokened.stdout[-4000:]
    )

    token = sigstore_stack.gitlab_token(ci_tokens.gitlab_ci(f"group/{unique}", sha=sha))
    published = gitlab_ci_local(work, "publish", variables={**keyless, "SIGSTORE_ID_TOKEN": token})
    assert published.returncode == 0, published.stdout[-4000:] + published.stderr[-2000:]
    assert token not in published.stdout + published.stderr
    digest = json.loads((work / "lockgate-publish.json").read_text())["digest"]

    project_url = f"https://gitlab.example.com/group/{unique}"
    verified = lockgate(
        "verify", url,
        "--certificate-identity", f"{project_url}//.gitlab-ci.yml@refs/heads/main",
        "--certificate-oidc-issuer", sigstore_stack.gitlab.url,
        "--certificate-source-repository-uri", project_url,
        "--certificate-source-repository-digest", sha,
        "--certificate-build-trigger", "push",
        "--trusted-root", str(sigstore_stack.trusted_root),
        "-o", "json",
    )  # fmt: skip
    assert verified["digest"] == digest and verified["mode"] == "keyless", verified
    assert verified["signer"] == f"{project_url}//.gitlab-ci.yml@refs/heads/main"
