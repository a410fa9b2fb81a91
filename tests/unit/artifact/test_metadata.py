"""Provenance defaults: explicit flags, GitHub Actions, the Git checkout, SOURCE_DATE_EPOCH."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lockgate.artifact import metadata
from lockgate.errors import UsageError

ACTIONS = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "org/repo",
    "GITHUB_REF_NAME": "main",
    "GITHUB_SHA": "f" * 40,
}


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "apps" / "a").mkdir(parents=True)
    (repo / "apps" / "b").mkdir()
    _git(tmp_path, "init", "-q", "-b", "main", str(repo))
    _git(repo, "remote", "add", "origin", "https://user:tok3n@git.example.com/org/repo.git")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
        "PATH": "/usr/bin:/bin",
    }
    for sub, when in (("a", "1700000000"), ("b", "1700000100")):
        (repo / "apps" / sub / "x.yaml").write_text(sub)
        _git(repo, "add", ".")
        _git(
            repo,
            "commit",
            "-q",
            "-m",
            sub,
            env={**env, "GIT_AUTHOR_DATE": f"@{when} +0000", "GIT_COMMITTER_DATE": f"@{when} +0000"},
        )
    return repo


def test_outside_git_and_actions_created_is_the_epoch(tmp_path: Path) -> None:
    got = metadata.detect(tmp_path, env={})
    assert got == metadata.Provenance(source=None, revision=None, created="1970-01-01T00:00:00Z")


def test_actions_environment(tmp_path: Path) -> None:
    got = metadata.detect(tmp_path, env={**ACTIONS, "SOURCE_DATE_EPOCH": "1700000000"})
    assert got.source == "https://github.com/org/repo"
    assert got.revision == f"main@sha1:{'f' * 40}"
    assert got.created == "2023-11-14T22:13:20Z"


def test_git_checkout_strips_credentials_and_uses_commit_time(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    head = _git(repo, "rev-parse", "HEAD")
    got = metadata.detect(repo, env={})
    assert got.source == "https://git.example.com/org/repo.git"
    assert got.revision == f"main@sha1:{head}"
    assert got.created == "2023-11-14T22:15:00Z"


def test_per_path_revision_is_the_last_commit_touching_the_directory(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    first = _git(repo, "rev-parse", "HEAD~1")
    got = metadata.detect(repo / "apps" / "a", env={}, per_path=True)
    assert got.revision == f"main@sha1:{first}"
    assert got.created == "2023-11-14T22:13:20Z"


def test_explicit_values_win(tmp_path: Path) -> None:
    got = metadata.detect(
        tmp_path, env=ACTIONS, source="s", revision="r", created="2024-01-02T03:04:05+01:00"
    )
    assert (got.source, got.revision, got.created) == ("s", "r", "2024-01-02T02:04:05Z")


@pytest.mark.parametrize("bad", ["yesterday", "2024-01-01T00:00:00"])
def test_bad_created(bad: str) -> None:
    with pytest.raises(UsageError, match="--created"):
        metadata.parse_created(bad)
