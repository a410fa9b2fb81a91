"""The annotations that say where an artifact came from: created, source, revision.

Defaults come from GitHub Actions' environment, else from the Git checkout holding the
path, as Flux writes them (``<branch|tag>@sha1:<sha>``). ``created`` is taken from
``SOURCE_DATE_EPOCH``, else the commit time, else the epoch: never the wall clock unless
asked for with ``now``, so the same commit always gives the same manifest digest.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lockgate.errors import UsageError

CREATED = "org.opencontainers.image.created"
SOURCE = "org.opencontainers.image.source"
REVISION = "org.opencontainers.image.revision"
EPOCH = "1970-01-01T00:00:00Z"


@dataclass(frozen=True)
class GitInfo:
    """What the checkout says about ``path``: remote URL, branch or tag, commit and commit time."""

    remote: str | None
    ref_name: str | None
    sha: str
    commit_time: int


@dataclass(frozen=True)
class Provenance:
    source: str | None
    revision: str | None
    created: str

    def annotations(self) -> dict[str, str]:
        values = {CREATED: self.created}
        if self.source:
            values[SOURCE] = self.source
        if self.revision:
            values[REVISION] = self.revision
        return values


def rfc3339(epoch: int) -> str:
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _git(cwd: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else None


def strip_userinfo(url: str) -> str:
    """Drop ``user:token@`` from an http(s) remote URL, so no credential lands in an annotation."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("http", "https") and "@" in parts.netloc:
        return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
    return url


def git_info(path: Path, *, per_path: bool = False) -> GitInfo | None:
    """Read the checkout around ``path``; ``per_path`` takes the last commit that touched ``path``."""
    cwd = path if path.is_dir() else path.parent
    if _git(cwd, "rev-parse", "--is-inside-work-tree") != "true":
        return None
    sha = _git(cwd, "log", "-1", "--format=%H", "--", ".") if per_path else _git(cwd, "rev-parse", "HEAD")
    if sha is None:
        return None
    when = _git(cwd, "show", "-s", "--format=%ct", sha)
    branch = _git(cwd, "symbolic-ref", "--short", "-q", "HEAD")
    ref_name = branch or _git(cwd, "describe", "--tags", "--exact-match", "HEAD")
    remote = _git(cwd, "config", "--get", "remote.origin.url")
    return GitInfo(
        remote=strip_userinfo(remote) if remote else None,
        ref_name=ref_name,
        sha=sha,
        commit_time=int(when) if when and when.isdigit() else 0,
    )


def revision_string(ref_name: str | None, sha: str) -> str:
    return f"{ref_name}@sha1:{sha}" if ref_name else f"sha1:{sha}"


def parse_created(value: str) -> str:
    """``now``, an epoch in seconds, or an RFC 3339 time; returned as RFC 3339 UTC."""
    if value == "now":
        return rfc3339(int(dt.datetime.now(tz=dt.UTC).timestamp()))
    if value.isdigit():
        return rfc3339(int(value))
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--created {value!r}: expected 'now', seconds since the epoch or RFC 3339"
        ) from None
    if parsed.tzinfo is None:
        raise UsageError(f"--created {value!r}: give a time zone (e.g. 2024-01-01T00:00:00Z)")
    return rfc3339(int(parsed.timestamp()))


def detect(
    path: Path,
    *,
    source: str | None = None,
    revision: str | None = None,
    created: str | None = None,
    per_path: bool = False,
    env: Mapping[str, str] | None = None,
) -> Provenance:
    """Explicit values win; then GitHub Actions; then the Git checkout; ``created`` as described above."""
    env = os.environ if env is None else env
    found: list[GitInfo | None] = []

    def checkout() -> GitInfo | None:
        # git is asked only when a value is still missing: up to five subprocesses
        if not found:
            found.append(git_info(path, per_path=per_path))
        return found[0]

    if source is None:
        if env.get("GITHUB_ACTIONS") == "true" and env.get("GITHUB_REPOSITORY"):
            source = f"{env.get('GITHUB_SERVER_URL', 'https://github.com')}/{env['GITHUB_REPOSITORY']}"
        elif (git := checkout()) is not None:
            source = git.remote
    if revision is None:
        in_actions = env.get("GITHUB_ACTIONS") == "true" and env.get("GITHUB_SHA")
        ref_name = (env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME")) if in_actions else None
        git = checkout() if (per_path or not in_actions) else None
        if git is not None:
            revision = revision_string(ref_name or git.ref_name, git.sha)
        elif in_actions:
            revision = revision_string(ref_name, env["GITHUB_SHA"])
    if created is not None:
        stamp = parse_created(created)
    elif env.get("SOURCE_DATE_EPOCH"):
        epoch = env["SOURCE_DATE_EPOCH"].strip()
        if not epoch.isdigit():
            raise UsageError(f"SOURCE_DATE_EPOCH={epoch!r} is not a number of seconds")
        stamp = rfc3339(int(epoch))
    elif (git := checkout()) is not None:
        stamp = rfc3339(git.commit_time)
    else:
        stamp = EPOCH
    return Provenance(source=source, revision=revision, created=stamp)
