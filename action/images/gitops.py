"""Commit and push an image update, safely, with the git CLI (the Git seam of ``images``).

The update itself is a callback: given a working tree it rewrites files and reports what
changed. That is what makes the push race safe (IAC #939): when the remote has moved
(a non-fast-forward rejection), the local commit is dropped, the tree is reset to the
remote head, and the callback runs again on the new content before retrying with
backoff, so concurrent updaters never overwrite each other. Any other rejection (a hook,
branch protection, permissions) stops at once, keeping the commit locally and naming
it. No change means no commit: an empty commit is never made.

The working tree must be clean (tracked files) before we start, because a retry resets
it; untracked files are never touched. Commits are signed through the git CLI when a
``commitsign.Signing`` is given (every retry's commit too).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from action.images import commitsign
from lockgate.errors import LockgateError, UsageError


class GitError(LockgateError):
    """A git command failed in a way we did not expect."""


class PushRejectedError(LockgateError):
    """The remote refused the push for a reason other than having moved on."""

    def __init__(self, message: str, *, commit: str) -> None:
        super().__init__(message)
        self.commit = commit


@dataclass(frozen=True)
class Author:
    name: str
    email: str


@dataclass(frozen=True)
class Applied:
    """What the update callback did to the working tree."""

    paths: tuple[str, ...]  #: files rewritten, relative to the repository root
    message: str  #: the commit message for these changes


@dataclass(frozen=True)
class Backoff:
    attempts: int = 5
    initial: float = 0.2
    factor: float = 2.0
    maximum: float = 5.0

    def delay(self, attempt: int) -> float:
        return float(min(self.maximum, self.initial * self.factor ** (attempt - 1)))


@dataclass(frozen=True)
class Outcome:
    commit: str | None  #: None when nothing changed
    branch: str  #: the branch committed to (and pushed, when pushing)
    pushed: bool
    attempts: int
    applied: Applied | None = None
    retried_after: list[str] = field(default_factory=list)  #: remote heads we rebased onto
    continued: bool = False  #: the push branch already existed on the remote
    signed: bool = False


def git(repo: Path, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})}
    proc = subprocess.run(["git", *args], cwd=repo, env=full_env, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed: {(proc.stderr or proc.stdout).strip()}")
    return proc.stdout + proc.stderr if not check else proc.stdout


def _head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def current_branch(repo: Path) -> str:
    name = git(repo, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).strip()
    if not name or "fatal" in name:
        raise UsageError(f"{repo}: HEAD is detached; pass --branch or check out a branch")
    return name


def remote_url(repo: Path, remote: str = "origin") -> str:
    return git(repo, "remote", "get-url", remote, check=False).strip()


def _require_clean(repo: Path) -> None:
    dirty = git(repo, "status", "--porcelain", "--untracked-files=no").strip()
    if dirty:
        raise UsageError(
            f"{repo}: the working tree has uncommitted changes; commit or stash them first:\n{dirty}"
        )


def _remote_has(repo: Path, remote: str, branch: str) -> bool:
    out = git(repo, "ls-remote", "--heads", remote, f"refs/heads/{branch}")
    return bool(out.strip())


def _switch_to_push_branch(repo: Path, remote: str, push_branch: str) -> bool:
    """As Flux's ``SwitchBranch``: continue an existing update branch, else start one here."""
    if _remote_has(repo, remote, push_branch):
        git(repo, "fetch", "--quiet", remote, f"refs/heads/{push_branch}")
        git(repo, "checkout", "--quiet", "-B", push_branch, "FETCH_HEAD")
        return True
    git(repo, "checkout", "--quiet", "-B", push_branch)
    return False


def _commit(
    repo: Path, applied: Applied, author: Author, signing: commitsign.Signing | None = None
) -> str | None:
    git(repo, "add", "--", *applied.paths)
    if not git(repo, "diff", "--cached", "--name-only").strip():
        return None
    identity = {
        "GIT_AUTHOR_NAME": author.name,
        "GIT_AUTHOR_EMAIL": author.email,
        "GIT_COMMITTER_NAME": author.name,
        "GIT_COMMITTER_EMAIL": author.email,
    }
    sign = [*signing.git_config(), "commit", "-S"] if signing is not None else ["commit"]
    proc = subprocess.run(
        ["git", *sign, "--quiet", "--no-verify", "--cleanup=verbatim", "-F", "-"],
        cwd=repo,
        env={**os.environ, **identity, "LC_ALL": "C"},
        input=applied.message,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        words = (proc.stderr or proc.stdout).strip()
        if signing is not None:
            raise GitError(
                f"signing the commit with {signing.describe()} failed: {words}\n"
                "pass --signing-key (an SSH key file or a GPG key id) or configure git user.signingkey"
            )
        raise GitError(f"git commit failed: {words}")
    return _head(repo)


_STALE = re.compile(r"^\[rejected\] \((?:fetch first|non-fast-forward)\)")
_LOST_LOCK = re.compile(r"but expected|incorrect old value provided")
_STATUS = re.compile(r"^([ +\-*!=])\t[^\t]*\t(.*)$", re.MULTILINE)


def _push(repo: Path, remote: str, branch: str, options: Sequence[str]) -> tuple[str, str]:
    """Push HEAD to ``branch``; returns ("ok" | "moved" | "refused", the remote's words)."""
    args = [
        "push",
        "--porcelain",
        *(f"--push-option={o}" for o in options),
        remote,
        f"HEAD:refs/heads/{branch}",
    ]
    out = git(repo, *args, check=False)
    statuses = _STATUS.findall(out)
    if statuses and all(flag != "!" for flag, _ in statuses):
        return "ok", out.strip()
    # The remote moved: either we pushed onto a stale head, or another push won the ref
    # lock while ours was in flight ("cannot lock ref ...: is at X but expected Y").
    stale = any(flag == "!" and _STALE.search(summary) for flag, summary in statuses)
    lost_lock = bool(_LOST_LOCK.search(out)) and any(
        flag == "!" and "[remote rejected]" in summary for flag, summary in statuses
    )
    return ("moved" if stale or lost_lock else "refused"), out.strip()


def commit_and_push(
    repo: Path,
    apply: Callable[[Path], Applied | None],
    *,
    author: Author,
    remote: str = "origin",
    push_branch: str | None = None,
    push: bool = True,
    push_options: Sequence[str] = (),
    backoff: Backoff = Backoff(),
    sleep: Callable[[float], None] = time.sleep,
    signing: commitsign.Signing | None = None,
) -> Outcome:
    """Run ``apply`` on the checkout at ``repo``, commit what it changed, push, retry races."""
    _require_clean(repo)
    branch = current_branch(repo)
    target = push_branch or branch
    continued = _switch_to_push_branch(repo, remote, target) if target != branch else False
    rebased: list[str] = []
    for attempt in range(1, backoff.attempts + 1):
        applied = apply(repo)
        commit = _commit(repo, applied, author, signing) if applied is not None and applied.paths else None
        signed = commit is not None and signing is not None
        if commit is None or not push:
            return Outcome(commit, target, False, attempt, applied, rebased, continued, signed)
        status, words = _push(repo, remote, target, push_options)
        if status == "ok":
            return Outcome(commit, target, True, attempt, applied, rebased, continued, signed)
        if status == "refused":
            raise PushRejectedError(
                f"push to {remote} {target} was refused; the commit {commit[:12]} is kept on local branch "
                f"{target!r} in {repo}:\n{words}",
                commit=commit,
            )
        git(repo, "fetch", "--quiet", remote, f"refs/heads/{target}")
        git(repo, "reset", "--quiet", "--hard", "FETCH_HEAD")
        rebased.append(_head(repo))
        if attempt < backoff.attempts:
            sleep(backoff.delay(attempt))
    raise PushRejectedError(
        f"push to {remote} {target} kept losing the race after {backoff.attempts} attempts; "
        "nothing was pushed, run the update again",
        commit=_head(repo),
    )
