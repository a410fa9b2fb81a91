"""The one seam between lockgate and Git, on GitPython: read a checkout, commit, push.

Two callers. The provenance annotations (``lockgate.artifact.metadata``) read the checkout
around a path: origin URL, branch or exact tag, HEAD or the last commit touching the path,
and its commit time. The image update (``action.images.gitops``) commits the files it
rewrote and pushes them, retrying when the remote moved; the retry policy is there, the
Git operations are here.

GitPython reads refs, config and the index in process and writes blobs, trees and
unsigned commits itself; it reads objects through a ``git cat-file`` process. What only
git answers well goes through GitPython's command wrapper: ``describe`` (git's rule for
choosing among tags), ``log -- path``, ``status``, ``checkout``, ``reset``, ``ls-remote``,
and signing (GitPython cannot sign).

GitPython is imported on first use, never with this module: ``import git`` costs tens of
milliseconds (it runs ``git version``), and ``lockgate build``, or a push whose
provenance is all given, never needs it. ``TYPE_CHECKING`` imports keep the types.

A push's outcome comes from GitPython's ``PushInfo`` flags, not from git's wording, except
where the flags cannot tell: a ``[remote rejected]`` update whose ref lock a concurrent
push took ("is at X but expected Y") means the remote moved, not that it refused.
Messages carry what git and the remote said with any ``user:token@`` taken out of URLs.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from lockgate.errors import LockgateError, UsageError

if TYPE_CHECKING:
    import git as gitpython


class GitError(LockgateError):
    """A git operation failed in a way we did not expect; the message has git's words."""


class NotACheckoutError(UsageError):
    """The path is not inside a Git work tree."""


class CommitError(GitError):
    """``git commit`` failed (for a signed commit: the key or the signing program)."""

    def __init__(self, message: str, *, words: str) -> None:
        super().__init__(message)
        self.words = words


class PushStatus(Enum):
    PUSHED = "pushed"
    #: the branch moved on under us (non-fast-forward, or a concurrent push won the ref lock)
    REMOTE_MOVED = "remote moved"
    #: a hook, branch protection, permissions, no connection: trying again cannot help
    REFUSED = "refused"


@dataclass(frozen=True)
class PushResult:
    status: PushStatus
    words: str  #: what the remote and git said, credentials removed


@dataclass(frozen=True)
class Author:
    name: str
    email: str


@dataclass(frozen=True)
class CheckoutInfo:
    """What a checkout says about a path: remote URL, branch or tag, commit, commit time."""

    remote: str | None  #: ``remote.origin.url`` as configured, without userinfo
    ref_name: str | None  #: the branch, else a tag exactly at HEAD
    sha: str
    commit_time: int
    #: ``git status --porcelain`` lines of the path: what differs from the commit (untracked
    #: files included, ignored ones not); empty for a clean path
    uncommitted: tuple[str, ...] = ()


def strip_userinfo(url: str) -> str:
    """Drop ``user:token@`` from an http(s) URL, so no credential lands in an annotation."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("http", "https") and "@" in parts.netloc:
        return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
    return url


_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


def redact(text: str) -> str:
    """Take ``user:token@`` out of every URL in free text (git's messages, a remote's)."""
    return _USERINFO.sub("", text)


# A concurrent push updated the ref between our ref advertisement and our update: the
# remote says "cannot lock ref 'refs/heads/x': is at X but expected Y" on its stderr and
# reports the ref as "[remote rejected] (failed to update ref)"; some servers put the
# reason in the summary itself, older ones as "incorrect old value provided".
_LOST_LOCK_REF = re.compile(r"cannot lock ref '([^']+)': is at [0-9a-f]+ but expected [0-9a-f]+")
_LOST_LOCK = re.compile(r"but expected|incorrect old value provided")


def classify(results: Iterable[tuple[int, str, str]], remote_said: Iterable[str] = ()) -> PushStatus:
    """What a push means, from GitPython ``PushInfo`` (flags, remote ref, summary) per ref
    and the lines the remote wrote (``remote: ...``), which name a lost ref lock."""
    from git import PushInfo

    lost = {found.group(1) for line in remote_said if (found := _LOST_LOCK_REF.search(line))}
    failed = PushInfo.ERROR | PushInfo.REJECTED | PushInfo.REMOTE_REJECTED | PushInfo.REMOTE_FAILURE
    failed |= PushInfo.NO_MATCH
    status: PushStatus | None = None
    for flags, ref, summary in results:
        lost_lock = ref in lost or bool(_LOST_LOCK.search(summary))
        if not flags & failed:
            status = status or PushStatus.PUSHED
        # A client-side rejection of a plain (unforced) branch push is only ever
        # "non-fast-forward" or "fetch first": the remote has commits we do not.
        elif flags & PushInfo.REJECTED or (flags & PushInfo.REMOTE_REJECTED and lost_lock):
            status = PushStatus.REMOTE_MOVED
        else:
            return PushStatus.REFUSED
    # no per-ref result at all: git stopped before updating anything (connection, auth)
    return status or PushStatus.REFUSED


@functools.cache
def _quiet_gitpython() -> None:
    # GitPython logs a warning with git's error lines when a push is rejected; with no
    # handler configured Python would print it on stderr. The push result carries them.
    import logging

    logging.getLogger("git").addHandler(logging.NullHandler())


_EMPTY_TREE = bytes.fromhex("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

# IndexFile.add changes the process's working directory while it reads the files: two
# threads staging at once would read each other's checkouts. Staging is serialised.
_STAGING = threading.Lock()


class Repository:
    """A Git work tree opened through GitPython; ``close`` it, or use it in ``with``.

    Relative paths given to it are relative to the directory it was opened at, as git's
    are to its working directory.
    """

    def __init__(self, repo: gitpython.Repo, where: Path) -> None:
        self._repo = repo
        self.where = where.resolve()
        self.root = Path(str(repo.working_tree_dir)).resolve()
        # never wait for a password prompt in CI
        repo.git.update_environment(GIT_TERMINAL_PROMPT="0")

    @classmethod
    def find(cls, path: Path) -> Repository | None:
        """The work tree holding ``path`` (a file: its directory), or None outside any.

        Raises ``GitError`` when git itself is missing (GitPython needs the program).
        """
        try:
            import git as gitpython
        except ImportError as exc:  # GitPython's import runs ``git version``
            said = (str(exc).splitlines() or ["no git"])[0]
            raise GitError(f"git is needed to read {path} and cannot be run: {said}") from None

        _quiet_gitpython()
        where = path if path.is_dir() else path.parent
        try:
            repo = gitpython.Repo(where, search_parent_directories=True)
        except (gitpython.InvalidGitRepositoryError, gitpython.NoSuchPathError):
            return None
        if repo.bare or repo.working_tree_dir is None:
            repo.close()
            return None
        return cls(repo, where)

    @classmethod
    def open(cls, path: Path) -> Repository:
        found = cls.find(path)
        if found is None:
            raise NotACheckoutError(f"{path}: not inside a Git checkout (a work tree)")
        return found

    def close(self) -> None:
        """Stop the ``git cat-file`` processes GitPython keeps for reading objects."""
        self._repo.close()

    def __enter__(self) -> Repository:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- running git through GitPython's wrapper ---------------------------------------
    def _git(self, command: str, *args: str, **options: Any) -> tuple[int, str, str]:
        method = getattr(self._repo.git, command.replace("-", "_"))
        status, out, err = method(*args, with_extended_output=True, with_exceptions=False, **options)
        return int(status), str(out), str(err)

    def _check(self, command: str, *args: str) -> str:
        status, out, err = self._git(command, *args)
        if status != 0:
            raise GitError(f"git {command} {' '.join(args)} failed: {redact((err or out).strip())}")
        return out

    def _from_root(self, path: Path | str) -> Path:
        full = self.where / path
        # resolve the directories only: a symlink among ``paths`` is staged as the link
        relative = Path(os.path.relpath(full.parent.resolve() / full.name, self.root))
        if relative.parts[:1] == ("..",):
            raise GitError(f"{path}: outside the checkout at {self.root}")
        return relative

    # --- reading ------------------------------------------------------------------------
    def head(self) -> str | None:
        """HEAD's commit, or None on a branch with no commit yet."""
        from git import SymbolicReference

        try:
            return SymbolicReference.dereference_recursive(self._repo, "HEAD")
        except ValueError:
            return None

    def branch(self) -> str | None:
        """The checked-out branch, or None when HEAD is detached."""
        head = self._repo.head
        return None if head.is_detached else head.reference.name

    def exact_tag(self) -> str | None:
        """The tag ``git describe --tags --exact-match`` names for HEAD, or None."""
        # git's choice among several tags on one commit (annotated first, then the newest)
        # is git's rule: ask git rather than re-implement it
        status, out, _ = self._git("describe", "--tags", "--exact-match", "HEAD")
        return (out.strip() or None) if status == 0 else None

    def commit_time(self, sha: str) -> int:
        """The committer time of ``sha``, in seconds since the epoch."""
        from git import Commit

        try:
            return int(Commit(self._repo, bytes.fromhex(sha)).committed_date)
        except (ValueError, OSError) as exc:
            raise GitError(f"{self.root}: cannot read commit {sha}: {redact(str(exc))}") from None

    def last_change(self, path: Path) -> tuple[str, int] | None:
        """The last commit touching ``path`` and its committer time; None if none did."""
        # a history walk with a path filter is git's job: GitPython's iter_commits runs
        # ``git rev-list`` too, and a pure-Python walk would be far slower
        status, out, _ = self._git("log", "-1", "--format=%H %ct", "--", str(self._from_root(path)))
        sha, _, when = out.strip().partition(" ")
        return (sha, int(when)) if status == 0 and sha and when.isdigit() else None

    def read_at(self, revision: str, path: Path) -> str | None:
        """The text of ``path`` as committed at ``revision``; None when it was not there.
        An unknown revision raises ``GitError``."""
        spec = f"{revision}:{self._from_root(path).as_posix()}"
        status, out, err = self._git("show", spec)
        if status == 0:
            return out
        if "exists on disk, but not in" in err or "does not exist in" in err:
            return None
        raise GitError(f"git show {spec} failed: {redact(err.strip())}")

    def configured_url(self, remote: str = "origin") -> str | None:
        """``remote.<name>.url`` as written in the config (no ``insteadOf`` applied)."""
        section = f'remote "{remote}"'
        with self._repo.config_reader() as config:
            # ``get``, not ``get_value``: a URL is a string, never to be read as a number
            return (config.get(section, "url") or None) if config.has_option(section, "url") else None

    def remote_url(self, remote: str = "origin") -> str:
        """The URL git would fetch ``remote`` from (``insteadOf`` applied), or ""."""
        status, out, _ = self._git("remote", "get-url", remote)
        return out.strip() if status == 0 else ""

    def uncommitted(self, path: Path) -> tuple[str, ...]:
        """``git status --porcelain`` lines of ``path`` (modified, staged, deleted and untracked
        files; not ignored ones): what a pack of it holds beyond, or without, its commit."""
        out = self._check("status", "--porcelain", "--untracked-files=all", "--", str(self._from_root(path)))
        return tuple(line.rstrip() for line in out.splitlines() if line.strip())

    def tracked_changes(self) -> str:
        """``git status --porcelain`` for tracked files: "" when the work tree is clean."""
        return self._check("status", "--porcelain", "--untracked-files=no").strip()

    # --- committing ---------------------------------------------------------------------
    def commit(
        self,
        paths: Sequence[str],
        *,
        message: str,
        author: Author,
        signing: Mapping[str, str] | None = None,
    ) -> str | None:
        """Stage ``paths`` byte for byte and commit them; None when nothing would change.

        ``signing`` (git config such as ``gpg.format``, ``user.signingkey``; empty: the
        job's own) makes a signed commit. Hooks never run, as with ``--no-verify``.
        """
        from git import Actor, Commit

        relative = [str(self._from_root(p)) for p in paths]
        index = self._repo.index
        try:
            with _STAGING:
                # GitPython hashes the files as they are on disk: no clean filter and no
                # end-of-line conversion, so the commit holds exactly the bytes written
                index.add(relative)
            tree = index.write_tree()
        except (AssertionError, ValueError, OSError) as exc:
            # AssertionError: GitPython reads index versions 1 to 3 only
            raise GitError(f"{self.root}: staging {', '.join(relative)} failed: {redact(str(exc))}") from None
        head = self.head()
        parents = [Commit(self._repo, bytes.fromhex(head))] if head else []
        if tree.binsha == (parents[0].tree.binsha if parents else _EMPTY_TREE):
            return None  # never an empty commit
        if signing is not None:
            return self._signed_commit(message, author, signing)
        # GitPython writes the commit object itself: no hooks, no commit.gpgsign from the
        # job's config, the message byte for byte; the object is the one ``git commit
        # --cleanup=verbatim`` makes, for the very tree compared above
        actor = Actor(author.name, author.email)
        try:
            made = Commit.create_from_tree(
                self._repo, tree, message, parent_commits=parents, head=True, author=actor, committer=actor
            )
        except (ValueError, OSError) as exc:
            raise GitError(f"{self.root}: writing the commit failed: {redact(str(exc))}") from None
        return made.hexsha

    def _signed_commit(self, message: str, author: Author, signing: Mapping[str, str]) -> str:
        # GitPython cannot sign (IndexFile.commit has no signing), so a signed commit is
        # git's own ``commit -S`` of the index staged above, through GitPython's wrapper
        import tempfile

        identity = {
            "GIT_AUTHOR_NAME": author.name,
            "GIT_AUTHOR_EMAIL": author.email,
            "GIT_COMMITTER_NAME": author.name,
            "GIT_COMMITTER_EMAIL": author.email,
        }
        command = self._repo.git(c=[f"{key}={value}" for key, value in signing.items()])
        with tempfile.TemporaryFile() as stdin:
            stdin.write(message.encode())
            stdin.seek(0)
            status, out, err = command.commit(
                "-S",
                "--quiet",
                "--no-verify",
                "--cleanup=verbatim",
                "-F",
                "-",
                istream=stdin,
                env=identity,
                with_extended_output=True,
                with_exceptions=False,
            )
        if status != 0:
            words = redact(str(err or out).strip())
            raise CommitError(f"git commit failed: {words}", words=words)
        head = self.head()
        assert head is not None  # a commit was just made on it
        return head

    # --- branches and remotes -----------------------------------------------------------
    def start_branch(self, name: str, *, at: str | None = None) -> None:
        """``git checkout -B``: (re)create branch ``name`` at ``at`` (default HEAD), check it out."""
        self._check("checkout", "--quiet", "-B", name, *([at] if at else []))

    def switch(self, name: str) -> None:
        """Check out the existing branch ``name``."""
        self._check("checkout", "--quiet", name)

    def reset_hard(self, sha: str) -> None:
        """Move the branch, index and tracked files to ``sha``; untracked files stay."""
        self._check("reset", "--quiet", "--hard", sha)

    def _remote(self, name: str) -> gitpython.Remote:
        try:
            return self._repo.remote(name)
        except ValueError:
            raise GitError(f"{self.root}: no remote named {name!r}") from None

    def has_branch(self, remote: str, branch: str) -> bool:
        """Whether ``remote`` has ``branch`` (asked over the network)."""
        self._remote(remote)
        return bool(self._check("ls-remote", "--heads", remote, f"refs/heads/{branch}").strip())

    def fetch(self, remote: str, branch: str) -> str:
        """Fetch ``branch`` from ``remote``; returns the commit it is at there."""
        from git import GitCommandError, RemoteProgress

        progress = RemoteProgress()
        try:
            fetched = self._remote(remote).fetch(f"refs/heads/{branch}", progress=progress)
        except GitCommandError:
            said = "\n".join(progress.error_lines or progress.other_lines)
            raise GitError(f"fetching {branch} from {remote} failed: {redact(said)}") from None
        if not fetched:
            raise GitError(f"fetching {branch} from {remote} brought nothing")
        return str(fetched[0].commit.hexsha)

    def push(self, remote: str, branch: str, *, options: Sequence[str] = ()) -> PushResult:
        """Push HEAD to ``branch`` on ``remote`` (``options``: ``--push-option``s)."""
        from git import GitCommandError, PushInfo, RemoteProgress

        progress = RemoteProgress()
        infos: list[PushInfo] = []
        extra: dict[str, Any] = {"push_option": list(options)} if options else {}
        # no per-ref result when git stops early (connection, auth): refused, with git's words
        with contextlib.suppress(GitCommandError):
            infos = list(self._remote(remote).push(f"HEAD:refs/heads/{branch}", progress=progress, **extra))
        remote_said = [line for line in progress.other_lines if line.startswith("remote:")]
        refs = [f"{info.remote_ref_string}: {info.summary.strip()}" for info in infos]
        words = "\n".join([*remote_said, *refs, *progress.error_lines])
        status = classify(((i.flags, i.remote_ref_string, i.summary) for i in infos), remote_said)
        return PushResult(status, redact(words))


def read_checkout(path: Path, *, per_path: bool = False) -> CheckoutInfo | None:
    """Read the checkout around ``path``; ``per_path`` takes the last commit touching it.

    None outside a work tree, before the first commit, or when git cannot read it (or is
    not installed: provenance then comes from elsewhere, or is left out).
    """
    try:
        repo = Repository.find(path)
    except GitError:
        return None
    if repo is None:
        return None
    with repo:
        try:
            if per_path:
                found = repo.last_change(Path("."))
                if found is None:
                    return None
                sha, when = found
            else:
                head = repo.head()
                if head is None:
                    return None
                sha, when = head, repo.commit_time(head)
            remote = repo.configured_url("origin")
            return CheckoutInfo(
                remote=strip_userinfo(remote) if remote else None,
                ref_name=repo.branch() or repo.exact_tag(),
                sha=sha,
                commit_time=when,
                uncommitted=repo.uncommitted(Path(path.name) if path.is_file() else Path(".")),
            )
        except GitError:
            return None
