"""Commit and push an image update safely: the retry policy over the ``lockgate.git`` seam.

The update itself is a callback: given a working tree it rewrites files and reports what
changed. That is what makes the push race safe (IAC #939): when the remote has moved
(a non-fast-forward rejection, or a concurrent push winning the ref lock), the local
commit is dropped, the tree is reset to the remote head, and the callback runs again on
the new content before retrying with backoff, so concurrent updaters never overwrite each
other. Any other rejection (a hook, branch protection, permissions) stops at once,
keeping the commit locally and naming it. No change means no commit: an empty commit is
never made.

The working tree must be clean (tracked files) before we start, because a retry resets
it; untracked files are never touched. Commits are signed by git when a
``commitsign.Signing`` is given (every retry's commit too).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from action.images import commitsign
from lockgate import git
from lockgate.errors import LockgateError, UsageError

#: the seam's names, for the update's callers
GitError = git.GitError
Author = git.Author


class PushRejectedError(LockgateError):
    """The remote refused the push for a reason other than having moved on."""

    def __init__(self, message: str, *, commit: str) -> None:
        super().__init__(message)
        self.commit = commit


@dataclass(frozen=True)
class Applied:
    """What the update callback did to the working tree."""

    paths: tuple[str, ...]  #: files rewritten, relative to the checkout directory given
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


def _branch(checkout: git.Repository, repo: Path) -> str:
    name = checkout.branch()
    if name is None:
        raise UsageError(f"{repo}: HEAD is detached; pass --branch or check out a branch")
    return name


def current_branch(repo: Path) -> str:
    """The branch checked out at ``repo``; a detached HEAD is a usage error here."""
    with git.Repository.open(repo) as checkout:
        return _branch(checkout, repo)


def remote_url(repo: Path, remote: str = "origin") -> str:
    with git.Repository.open(repo) as checkout:
        return checkout.remote_url(remote)


def check_out(repo: Path, branch: str) -> None:
    with git.Repository.open(repo) as checkout:
        checkout.switch(branch)


def _require_clean(checkout: git.Repository, repo: Path) -> None:
    dirty = checkout.tracked_changes()
    if dirty:
        raise UsageError(
            f"{repo}: the working tree has uncommitted changes; commit or stash them first:\n{dirty}"
        )


def _switch_to_push_branch(checkout: git.Repository, remote: str, push_branch: str) -> bool:
    """As Flux's ``SwitchBranch``: continue an existing update branch, else start one here."""
    if checkout.has_branch(remote, push_branch):
        checkout.start_branch(push_branch, at=checkout.fetch(remote, push_branch))
        return True
    checkout.start_branch(push_branch)
    return False


def _commit(
    checkout: git.Repository, applied: Applied, author: Author, signing: commitsign.Signing | None
) -> str | None:
    try:
        return checkout.commit(
            applied.paths,
            message=applied.message,
            author=author,
            signing=signing.git_config() if signing is not None else None,
        )
    except git.CommitError as exc:
        if signing is None:
            raise
        raise GitError(
            f"signing the commit with {signing.describe()} failed: {exc.words}\n"
            "pass --signing-key (an SSH key file or a GPG key id) or configure git user.signingkey"
        ) from None


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
    signing: commitsign.Signing | None = None,
) -> Outcome:
    """Run ``apply`` on the checkout at ``repo``, commit what it changed, push, retry races."""
    with git.Repository.open(repo) as checkout:
        _require_clean(checkout, repo)
        branch = _branch(checkout, repo)
        target = push_branch or branch
        continued = _switch_to_push_branch(checkout, remote, target) if target != branch else False
        rebased: list[str] = []
        for attempt in range(1, backoff.attempts + 1):
            applied = apply(repo)
            commit = None
            if applied is not None and applied.paths:
                commit = _commit(checkout, applied, author, signing)
            signed = commit is not None and signing is not None
            if commit is None or not push:
                return Outcome(commit, target, False, attempt, applied, rebased, continued, signed)
            result = checkout.push(remote, target, options=push_options)
            if result.status is git.PushStatus.PUSHED:
                return Outcome(commit, target, True, attempt, applied, rebased, continued, signed)
            if result.status is git.PushStatus.REFUSED:
                raise PushRejectedError(
                    f"push to {remote} {target} was refused; the commit {commit[:12]} is kept on local "
                    f"branch {target!r} in {repo}:\n{result.words}",
                    commit=commit,
                )
            head = checkout.fetch(remote, target)
            checkout.reset_hard(head)
            rebased.append(head)
            if attempt < backoff.attempts:
                time.sleep(backoff.delay(attempt))
        raise PushRejectedError(
            f"push to {remote} {target} kept losing the race after {backoff.attempts} attempts; "
            "nothing was pushed, run the update again",
            commit=checkout.head() or "",
        )
