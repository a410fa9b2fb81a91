"""The Git seam on real repositories made with ``git init``: reading a checkout (detached
HEAD, exact tags, per-path revisions, remote URLs without credentials), committing (byte
for byte, never empty, no hooks, verbatim message, safe from two threads), and the pure
classification of push results. Pushes against a real remote: tests/integration/test_git_push.py."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from git import PushInfo

from lockgate import git

BOT = git.Author("lockgate-bot", "bot@example.com")
IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@example.com"]


def sh(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", *IDENTITY, *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env=None if env is None else {**os.environ, **env},
    ).stdout.strip()


def raw(cwd: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True).stdout


def _commit_all(repo: Path, message: str, when: int) -> str:
    sh(repo, "add", "-A")
    stamp = {"GIT_AUTHOR_DATE": f"@{when} +0000", "GIT_COMMITTER_DATE": f"@{when} +0000"}
    sh(repo, "commit", "-q", "-m", message, env=stamp)
    return sh(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two commits: apps/a (at 1700000000), then apps/b (at 1700000100)."""
    path = tmp_path / "repo"
    sh(tmp_path, "init", "-q", "-b", "main", str(path))
    for sub, when in (("a", 1700000000), ("b", 1700000100)):
        (path / "apps" / sub).mkdir(parents=True)
        (path / "apps" / sub / "x.yaml").write_text(f"{sub}: 1\n")
        _commit_all(path, sub, when)
    return path


# --- reading --------------------------------------------------------------------------


def test_branch_head_and_commit_time(repo: Path) -> None:
    info = git.read_checkout(repo)
    assert info == git.CheckoutInfo(
        remote=None, ref_name="main", sha=sh(repo, "rev-parse", "HEAD"), commit_time=1700000100
    )


def test_from_a_file_and_a_subdirectory_the_checkout_is_found(repo: Path) -> None:
    head = sh(repo, "rev-parse", "HEAD")
    for where in (repo / "apps" / "a", repo / "apps" / "a" / "x.yaml"):
        info = git.read_checkout(where)
        assert info is not None and info.sha == head


def test_detached_head_without_a_tag_has_no_ref_name(repo: Path) -> None:
    first = sh(repo, "rev-parse", "HEAD~1")
    sh(repo, "checkout", "-q", "--detach", first)
    with git.Repository.open(repo) as checkout:
        assert checkout.branch() is None
        assert checkout.exact_tag() is None
    info = git.read_checkout(repo)
    assert info is not None and (info.ref_name, info.sha, info.commit_time) == (None, first, 1700000000)


@pytest.mark.parametrize("kind", [["-a", "-m", "release"], []], ids=["annotated", "lightweight"])
def test_detached_at_a_tag_names_the_exact_tag(repo: Path, kind: list[str]) -> None:
    sh(repo, "tag", *kind, "v1.0.0", "HEAD~1")
    sh(repo, "tag", *kind, "v2.0.0", "HEAD")
    sh(repo, "checkout", "-q", "--detach", "v1.0.0")
    info = git.read_checkout(repo)
    assert info is not None and info.ref_name == "v1.0.0"
    assert info.sha == sh(repo, "rev-parse", "HEAD~0")


def test_on_a_branch_the_branch_wins_over_a_tag(repo: Path) -> None:
    sh(repo, "tag", "v2.0.0")
    info = git.read_checkout(repo)
    assert info is not None and info.ref_name == "main"


def test_per_path_is_the_last_commit_touching_the_directory(repo: Path) -> None:
    first = sh(repo, "rev-parse", "HEAD~1")
    info = git.read_checkout(repo / "apps" / "a", per_path=True)
    assert info is not None and (info.sha, info.commit_time) == (first, 1700000000)
    # a file: the directory it is in, as before
    info = git.read_checkout(repo / "apps" / "b" / "x.yaml", per_path=True)
    assert info is not None and info.sha == sh(repo, "rev-parse", "HEAD")


def test_per_path_with_no_commit_touching_it_reads_nothing(repo: Path) -> None:
    (repo / "new").mkdir()
    assert git.read_checkout(repo / "new", per_path=True) is None
    assert git.read_checkout(repo / "new") is not None


@pytest.mark.parametrize(
    ("configured", "annotated"),
    [
        ("https://user:tok3n@git.example.com/org/repo.git", "https://git.example.com/org/repo.git"),
        ("https://x-access-token:ghs_abc@github.com/org/repo", "https://github.com/org/repo"),
        ("git@github.com:org/repo.git", "git@github.com:org/repo.git"),
        ("ssh://git@example.com/org/repo.git", "ssh://git@example.com/org/repo.git"),
    ],
    ids=["https token", "github app token", "scp-like ssh", "ssh url"],
)
def test_remote_url_without_userinfo(repo: Path, configured: str, annotated: str) -> None:
    sh(repo, "remote", "add", "origin", configured)
    info = git.read_checkout(repo)
    assert info is not None and info.remote == annotated


def test_configured_url_is_as_written_and_remote_url_as_git_resolves_it(repo: Path) -> None:
    sh(repo, "remote", "add", "origin", "gh:acme/app")
    sh(repo, "config", "url.https://github.com/.insteadOf", "gh:")
    with git.Repository.open(repo) as checkout:
        assert checkout.configured_url("origin") == "gh:acme/app"
        assert checkout.remote_url("origin") == "https://github.com/acme/app"
        assert checkout.configured_url("upstream") is None
        assert checkout.remote_url("upstream") == ""


def test_outside_a_checkout_and_before_the_first_commit(tmp_path: Path) -> None:
    assert git.Repository.find(tmp_path) is None
    assert git.read_checkout(tmp_path) is None
    with pytest.raises(git.NotACheckoutError, match="not inside a Git checkout"):
        git.Repository.open(tmp_path)
    sh(tmp_path, "init", "-q", "-b", "main", "empty")
    assert git.read_checkout(tmp_path / "empty") is None
    sh(tmp_path, "init", "-q", "--bare", "bare.git")
    assert git.read_checkout(tmp_path / "bare.git") is None


def test_without_git_installed_reading_gives_nothing_and_opening_says_why(repo: Path) -> None:
    """GitPython runs ``git version`` when imported: without git that import fails."""
    script = (
        "import sys; from pathlib import Path; from lockgate import git\n"
        "print(git.read_checkout(Path(sys.argv[1])))\n"
        "try:\n    git.Repository.open(Path(sys.argv[1]))\n"
        "except git.GitError as exc:\n    print(exc)\n"
    )
    env = {**os.environ, "PATH": "/nonexistent"}
    run = subprocess.run([sys.executable, "-c", script, str(repo)], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    nothing, why = run.stdout.splitlines()
    assert nothing == "None"
    assert why.startswith(f"git is needed to read {repo} and cannot be run: ")


def test_redact_takes_userinfo_out_of_free_text() -> None:
    said = "fatal: unable to access 'https://bot:ghp_s3cret@github.com/o/r.git/': 403"
    assert git.redact(said) == "fatal: unable to access 'https://github.com/o/r.git/': 403"
    assert git.redact("git@github.com:o/r.git") == "git@github.com:o/r.git"


# --- committing -----------------------------------------------------------------------


def test_commit_keeps_the_bytes_written_even_where_git_would_normalise(repo: Path) -> None:
    (repo / ".gitattributes").write_text("* text=auto\n")
    sh(repo, "config", "core.autocrlf", "true")
    written = b"image: redis:7.2.4\r\nreplicas: 2\r\n"
    (repo / "apps" / "a" / "x.yaml").write_bytes(written)
    with git.Repository.open(repo) as checkout:
        sha = checkout.commit(["apps/a/x.yaml"], message="update\n", author=BOT)
    assert sha is not None
    assert raw(repo, "cat-file", "blob", f"{sha}:apps/a/x.yaml") == written
    assert sh(repo, "rev-parse", "HEAD") == sha
    assert (repo / "apps" / "a" / "x.yaml").read_bytes() == written  # the file is left alone


def test_nothing_changed_makes_no_commit(repo: Path) -> None:
    head = sh(repo, "rev-parse", "HEAD")
    (repo / "apps" / "a" / "x.yaml").write_text("a: 1\n")  # the same bytes, rewritten
    with git.Repository.open(repo) as checkout:
        assert checkout.commit(["apps/a/x.yaml"], message="update\n", author=BOT) is None
    assert sh(repo, "rev-parse", "HEAD") == head


def test_commit_is_git_commit_verbatim_without_hooks(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    for hook in ("pre-commit", "commit-msg", "prepare-commit-msg"):
        (hooks / hook).write_text("#!/bin/sh\necho 'hook ran' > \"$GIT_DIR/../hook-ran\"\nexit 1\n")
        (hooks / hook).chmod(0o755)
    message = "Automated update\n\n# not a comment\n  indented\n\n\n"
    (repo / "apps" / "a" / "x.yaml").write_text("a: 2\n")
    parent = sh(repo, "rev-parse", "HEAD")
    with git.Repository.open(repo) as checkout:
        sha = checkout.commit(["apps/a/x.yaml"], message=message, author=BOT)
    assert sha is not None and not (repo / "hook-ran").exists()
    header, _, body = raw(repo, "cat-file", "commit", sha).decode().partition("\n\n")
    assert body == message
    lines = header.splitlines()
    assert lines[1] == f"parent {parent}"
    assert lines[2].startswith("author lockgate-bot <bot@example.com> ")
    assert lines[3].startswith("committer lockgate-bot <bot@example.com> ")
    assert sh(repo, "status", "--porcelain") == ""  # the index GitPython wrote matches HEAD
    assert sh(repo, "log", "-1", "--format=%D") == "HEAD -> main"


def test_the_first_commit_of_an_empty_repository(tmp_path: Path) -> None:
    sh(tmp_path, "init", "-q", "-b", "main", "empty")
    (tmp_path / "empty" / "f.txt").write_text("f\n")
    with git.Repository.open(tmp_path / "empty") as checkout:
        sha = checkout.commit(["f.txt"], message="first\n", author=BOT)
        assert sha is not None and checkout.head() == sha and checkout.branch() == "main"
    assert sh(tmp_path / "empty", "log", "--format=%s") == "first"


def test_paths_are_relative_to_the_directory_opened(repo: Path) -> None:
    (repo / "apps" / "b" / "x.yaml").write_text("b: 2\n")
    with git.Repository.open(repo / "apps") as checkout:
        assert checkout.root == repo.resolve()
        sha = checkout.commit(["b/x.yaml"], message="b\n", author=BOT)
    assert sha is not None
    assert sh(repo, "show", "--name-only", "--format=", sha) == "apps/b/x.yaml"


def test_two_threads_committing_in_two_checkouts_each_commit_their_own_bytes(tmp_path: Path) -> None:
    """GitPython's IndexFile.add chdirs into the work tree while it reads the files."""
    repos = []
    for name in ("one", "two"):
        path = tmp_path / name
        sh(tmp_path, "init", "-q", "-b", "main", str(path))
        (path / "f.txt").write_text("seed\n")
        _commit_all(path, "seed", 1700000000)
        repos.append(path)
    cwd = os.getcwd()
    wrong: list[str] = []

    def run(path: Path) -> None:
        with git.Repository.open(path) as checkout:
            for i in range(25):
                (path / "f.txt").write_text(f"{path.name} {i}\n")
                sha = checkout.commit(["f.txt"], message=f"{i}\n", author=BOT)
                got = sh(path, "show", f"{sha}:f.txt")
                if got != f"{path.name} {i}":
                    wrong.append(f"{path.name} {i}: {got}")

    threads = [threading.Thread(target=run, args=(path,)) for path in repos]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert os.getcwd() == cwd
    assert not wrong


def test_an_index_gitpython_cannot_read_is_a_git_error(repo: Path) -> None:
    sh(repo, "update-index", "--index-version", "4")
    (repo / "apps" / "a" / "x.yaml").write_text("a: 2\n")
    with git.Repository.open(repo) as checkout, pytest.raises(git.GitError, match=r"staging apps/a/x\.yaml"):
        checkout.commit(["apps/a/x.yaml"], message="a\n", author=BOT)


def test_tracked_changes_ignore_untracked_files(repo: Path) -> None:
    (repo / "untracked.txt").write_text("x\n")
    with git.Repository.open(repo) as checkout:
        assert checkout.tracked_changes() == ""
        (repo / "apps" / "a" / "x.yaml").write_text("edited\n")
        assert checkout.tracked_changes() == "M apps/a/x.yaml"


# --- what a push's results mean ---------------------------------------------------------

E, REJ, REM = PushInfo.ERROR, PushInfo.REJECTED, PushInfo.REMOTE_REJECTED
MAIN = "refs/heads/main"
LOCK = "[remote rejected] (cannot lock ref 'refs/heads/main': is at 1111 but expected 2222)"
SAID_LOCK = "remote: error: cannot lock ref 'refs/heads/main': is at 3add9f4 but expected 7a7d84d"
FAILED_UPDATE = (E | REM, MAIN, "[remote rejected] (failed to update ref)")
Case = tuple[str, list[tuple[int, str, str]], list[str], git.PushStatus]

PUSHES: list[Case] = [
    ("fastForward", [(PushInfo.FAST_FORWARD, MAIN, "73d7c2f..5c60cd1")], [], git.PushStatus.PUSHED),
    ("newBranch", [(PushInfo.NEW_HEAD, MAIN, "[new branch]")], [], git.PushStatus.PUSHED),
    ("upToDate", [(PushInfo.UP_TO_DATE, MAIN, "[up to date]")], [], git.PushStatus.PUSHED),
    ("fetchFirst", [(E | REJ, MAIN, "[rejected] (fetch first)")], [], git.PushStatus.REMOTE_MOVED),
    ("nonFastForward", [(E | REJ, MAIN, "[rejected] (non-fast-forward)")], [], git.PushStatus.REMOTE_MOVED),
    ("lostRefLockToldByTheRemote", [FAILED_UPDATE], [SAID_LOCK], git.PushStatus.REMOTE_MOVED),
    ("lostRefLockInTheSummary", [(E | REM, MAIN, LOCK)], [], git.PushStatus.REMOTE_MOVED),
    (
        "lostRefLockOldServer",
        [(E | REM, MAIN, "[remote rejected] (incorrect old value provided)")],
        [],
        git.PushStatus.REMOTE_MOVED,
    ),
    ("failedToUpdateRefOtherwise", [FAILED_UPDATE], ["remote: error: disk full"], git.PushStatus.REFUSED),
    (
        "lostLockOfAnotherRef",
        [FAILED_UPDATE],
        [SAID_LOCK.replace("refs/heads/main", "refs/heads/other")],
        git.PushStatus.REFUSED,
    ),
    (
        "hookDeclined",
        [(E | REM, MAIN, "[remote rejected] (pre-receive hook declined)")],
        ["remote: main is protected"],
        git.PushStatus.REFUSED,
    ),
    (
        "remoteFailure",
        [(E | PushInfo.REMOTE_FAILURE, MAIN, "[remote failure] (timeout)")],
        [],
        git.PushStatus.REFUSED,
    ),
    ("noMatch", [(E, MAIN, "[no match]")], [], git.PushStatus.REFUSED),
    (
        "movedAndRefused",
        [(E | REJ, MAIN, "[rejected] (fetch first)"), (E | REM, "refs/heads/b", "[remote rejected] (x)")],
        [],
        git.PushStatus.REFUSED,
    ),
    (
        "refusedThenMoved",
        [(E | REM, "refs/heads/b", "[remote rejected] (x)"), (E | REJ, MAIN, "[rejected] (fetch first)")],
        [],
        git.PushStatus.REFUSED,
    ),
    ("nothingReported", [], ["fatal: unable to access 'https://h/x.git/'"], git.PushStatus.REFUSED),
]


@pytest.mark.parametrize(("name", "results", "said", "expected"), PUSHES, ids=[case[0] for case in PUSHES])
def test_classify(
    name: str, results: list[tuple[int, str, str]], said: list[str], expected: git.PushStatus
) -> None:
    assert git.classify(results, said) is expected
