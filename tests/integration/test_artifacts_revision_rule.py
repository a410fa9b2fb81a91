"""One revision rule: `push DIR` and `push --each` give a directory the same revision and digest
(its last commit), so a commit elsewhere in the repository makes no new artifact."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.artifacts_support import lockgate
from tests.world.registry import Registry


@pytest.fixture(autouse=True)
def _plain_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    for name in ("GITHUB_ACTIONS", "SOURCE_DATE_EPOCH", "GITHUB_SHA"):
        monkeypatch.delenv(name, raising=False)


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return done.stdout.strip()


def test_push_and_push_each_agree(registry: Registry, unique: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for app in ("a", "b"):
        (repo / "apps" / app).mkdir(parents=True)
        (repo / "apps" / app / "cm.yaml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {app}-{unique}\n"
        )
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "apps/a")
    _git(repo, "commit", "-qm", "a")
    first = _git(repo, "rev-parse", "HEAD")
    _git(repo, "add", "apps/b")
    _git(repo, "commit", "-qm", "b")
    assert _git(repo, "rev-parse", "HEAD") != first

    single = lockgate("push", "apps/a", registry.oci(f"{unique}-single", ":v1"), "-o", "json", cwd=repo)
    assert single.code == 0, single.err
    each = lockgate(
        "push", "--each", "apps/*", registry.oci(f"{unique}-{{name}}", ":v1"), "-o", "json", cwd=repo
    )
    assert each.code == 0, each.err
    by_name = {r["repository"].rsplit("-", 1)[1]: r for r in json.loads(each.out)}
    pushed = json.loads(single.out)
    assert pushed["digest"] == by_name["a"]["digest"]
    shown = lockgate("inspect", registry.oci(f"{unique}-single", ":v1"), "-o", "json")
    assert json.loads(shown.out)["annotations"]["org.opencontainers.image.revision"] == f"main@sha1:{first}"
