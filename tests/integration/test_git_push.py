"""The Git seam's pushes against the world's git daemon: what each kind of push result is
classified as (from GitPython's ``PushInfo``), push options reaching the remote's hooks,
and continuing a branch that exists on the remote (``has_branch``, ``fetch``, ``reset_hard``)."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from lockgate import git
from tests.world.gitremote import GitRemote

BOT = git.Author("lockgate-bot", "bot@example.com")


def sh(cwd: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args]
    return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _remote(git_remote: GitRemote, name: str, tmp_path: Path) -> tuple[str, Path]:
    """A remote with one commit on main, and its bare repository on disk (for hooks)."""
    url = git_remote.create(name)
    seed = tmp_path / "seed"
    sh(tmp_path, "clone", "--quiet", url, str(seed))
    (seed / "f.txt").write_text("seed\n")
    sh(seed, "add", ".")
    sh(seed, "commit", "--quiet", "-m", "seed")
    sh(seed, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    return url, git_remote.base / f"{name}.git"


def _clone_and_change(url: str, path: Path, content: str) -> git.Repository:
    sh(path.parent, "clone", "--quiet", "--branch", "main", url, str(path))
    (path / "f.txt").write_text(content)
    checkout = git.Repository.open(path)
    assert checkout.commit(["f.txt"], message=f"{content}\n", author=BOT) is not None
    return checkout


def _hook(bare: Path, script: str) -> None:
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\n" + script)
    hook.chmod(0o755)


def test_a_fast_forward_and_a_new_branch_are_pushed(
    git_remote: GitRemote, unique: str, tmp_path: Path
) -> None:
    url, _ = _remote(git_remote, unique, tmp_path)
    with _clone_and_change(url, tmp_path / "a", "a") as checkout:
        head = checkout.head()
        assert checkout.push("origin", "main").status is git.PushStatus.PUSHED
        assert checkout.push("origin", "updates").status is git.PushStatus.PUSHED
    for branch in ("main", "updates"):
        assert sh(tmp_path, "ls-remote", url, f"refs/heads/{branch}").split()[0] == head


def test_a_non_fast_forward_rejection_is_the_remote_moving(
    git_remote: GitRemote, unique: str, tmp_path: Path
) -> None:
    url, _ = _remote(git_remote, unique, tmp_path)
    with (
        _clone_and_change(url, tmp_path / "a", "a") as first,
        _clone_and_change(url, tmp_path / "b", "b") as second,
    ):
        assert first.push("origin", "main").status is git.PushStatus.PUSHED
        moved = second.push("origin", "main")
        assert moved.status is git.PushStatus.REMOTE_MOVED, moved.words
        assert "[rejected] (fetch first)" in moved.words
        # what the updater does next: take the remote head and start again from it
        head = second.fetch("origin", "main")
        assert head == first.head()
        second.reset_hard(head)
        assert (tmp_path / "b" / "f.txt").read_text() == "a"
        assert second.head() == head


def test_a_pre_receive_hook_refusal_is_refused_with_the_remotes_words(
    git_remote: GitRemote, unique: str, tmp_path: Path
) -> None:
    url, bare = _remote(git_remote, unique, tmp_path)
    _hook(bare, "echo 'main is protected: open a pull request' >&2\nexit 1\n")
    with _clone_and_change(url, tmp_path / "a", "a") as checkout:
        refused = checkout.push("origin", "main")
    assert refused.status is git.PushStatus.REFUSED, refused.words
    assert "remote: main is protected: open a pull request" in refused.words
    assert "[remote rejected] (pre-receive hook declined)" in refused.words
    remote_head = sh(tmp_path, "ls-remote", url, "refs/heads/main").split()[0]
    assert remote_head != sh(tmp_path / "a", "rev-parse", "HEAD")


def test_losing_the_ref_lock_to_a_concurrent_push_is_the_remote_moving(
    git_remote: GitRemote, unique: str, tmp_path: Path
) -> None:
    """Both pushes pass the fast-forward check against the same old head; the one whose hook
    is held (by the push option ``hold``) then finds the ref moved when it takes the lock."""
    url, bare = _remote(git_remote, unique, tmp_path)
    sh(bare, "config", "receive.advertisePushOptions", "true")
    gate = tmp_path / "gate"
    _hook(
        bare,
        f'if [ "$GIT_PUSH_OPTION_0" = hold ]; then\n'
        f"  touch {gate}.held\n"
        f"  while [ ! -e {gate}.open ]; do sleep 0.05; done\n"
        f"fi\n",
    )
    with (
        _clone_and_change(url, tmp_path / "held", "held") as held,
        _clone_and_change(url, tmp_path / "quick", "quick") as quick,
    ):
        results: list[git.PushResult] = []

        def push_held() -> None:
            results.append(held.push("origin", "main", options=["hold"]))

        pushing = threading.Thread(target=push_held)
        pushing.start()
        deadline = time.monotonic() + 30
        while not Path(f"{gate}.held").exists():
            assert time.monotonic() < deadline, "the held push never reached its hook"
            time.sleep(0.05)
        assert quick.push("origin", "main").status is git.PushStatus.PUSHED
        Path(f"{gate}.open").touch()
        pushing.join(timeout=30)
        (lost,) = results
        assert lost.status is git.PushStatus.REMOTE_MOVED, lost.words
        assert "but expected" in lost.words  # the lock race, not a plain non-fast-forward
        assert sh(tmp_path, "ls-remote", url, "refs/heads/main").split()[0] == quick.head()


def test_push_options_the_remote_does_not_accept_are_refused(
    git_remote: GitRemote, unique: str, tmp_path: Path
) -> None:
    url, _ = _remote(git_remote, unique, tmp_path)
    with _clone_and_change(url, tmp_path / "a", "a") as checkout:
        refused = checkout.push("origin", "main", options=["ci.skip"])
    assert refused.status is git.PushStatus.REFUSED
    assert "does not support push options" in refused.words


def test_an_unreachable_remote_is_refused_without_its_credentials(tmp_path: Path) -> None:
    sh(tmp_path, "init", "--quiet", "-b", "main", "a")
    (tmp_path / "a" / "f.txt").write_text("a\n")
    sh(tmp_path / "a", "add", ".")
    sh(tmp_path / "a", "commit", "--quiet", "-m", "a")
    sh(tmp_path / "a", "remote", "add", "origin", "https://bot:ghp_s3cret@127.0.0.1:9/x.git")
    with git.Repository.open(tmp_path / "a") as checkout:
        refused = checkout.push("origin", "main")
        assert refused.status is git.PushStatus.REFUSED
        assert "127.0.0.1" in refused.words and "s3cret" not in refused.words
        with pytest.raises(git.GitError) as caught:
            checkout.fetch("origin", "main")
        assert "s3cret" not in caught.value.message
        with pytest.raises(git.GitError, match="no remote named 'upstream'"):
            checkout.push("upstream", "main")


def test_an_existing_remote_branch_is_found_and_continued(
    git_remote: GitRemote, unique: str, tmp_path: Path
) -> None:
    url, _ = _remote(git_remote, unique, tmp_path)
    with _clone_and_change(url, tmp_path / "a", "a") as first:
        assert not first.has_branch("origin", "updates")
        assert first.push("origin", "updates").status is git.PushStatus.PUSHED
    sh(tmp_path, "clone", "--quiet", "--branch", "main", url, str(tmp_path / "b"))
    with git.Repository.open(tmp_path / "b") as second:
        assert second.has_branch("origin", "updates")
        second.start_branch("updates", at=second.fetch("origin", "updates"))
        assert second.branch() == "updates"
        assert (tmp_path / "b" / "f.txt").read_text() == "a"
        second.switch("main")
        assert (second.branch(), (tmp_path / "b" / "f.txt").read_text()) == ("main", "seed\n")
