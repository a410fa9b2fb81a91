"""The annotations that say where an artifact came from: created, source, revision.

Defaults come from GitHub Actions' environment, else from the Git checkout holding the
path (read through the ``lockgate.git`` seam), as Flux writes them: ``<branch|tag>@sha1:<sha>``.
``created`` is taken from ``SOURCE_DATE_EPOCH``, else the commit time, else the epoch: never
the wall clock unless asked for with ``now``, so the same commit always gives the same
manifest digest. A revision read from a checkout whose path has uncommitted changes names a
commit whose content the artifact is not: ``Provenance.uncommitted`` lists them and the
``dev.lockgate.vcs.modified: "true"`` annotation records it.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockgate.errors import UsageError

if TYPE_CHECKING:
    from lockgate import git

CREATED = "org.opencontainers.image.created"
SOURCE = "org.opencontainers.image.source"
REVISION = "org.opencontainers.image.revision"
#: set to "true" when the content was packed from a checkout with uncommitted changes under
#: the path, so the revision names a commit whose content it is not; Go's build information
#: calls the same fact ``vcs.modified`` (``go version -m``), hence the name
MODIFIED = "dev.lockgate.vcs.modified"
EPOCH = "1970-01-01T00:00:00Z"


@dataclass(frozen=True)
class Provenance:
    source: str | None
    revision: str | None
    created: str
    #: the checkout's uncommitted changes under the path, when the revision came from it
    uncommitted: tuple[str, ...] = ()

    def annotations(self) -> dict[str, str]:
        values = {CREATED: self.created}
        if self.source:
            values[SOURCE] = self.source
        if self.revision:
            values[REVISION] = self.revision
        if self.uncommitted:
            values[MODIFIED] = "true"
        return values


def rfc3339(epoch: int) -> str:
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    found: list[git.CheckoutInfo | None] = []
    # only a revision read from the checkout can misname the content (a given one is the caller's)
    uncommitted: tuple[str, ...] = ()

    def checkout() -> git.CheckoutInfo | None:
        # the seam (and GitPython) is loaded only when a value is still missing: not for
        # ``lockgate build``, nor a push whose provenance is given or in the environment
        from lockgate import git

        if not found:
            found.append(git.read_checkout(path, per_path=per_path))
        return found[0]

    if source is None:
        if env.get("GITHUB_ACTIONS") == "true" and env.get("GITHUB_REPOSITORY"):
            source = f"{env.get('GITHUB_SERVER_URL', 'https://github.com')}/{env['GITHUB_REPOSITORY']}"
        elif (info := checkout()) is not None:
            source = info.remote
    if revision is None:
        in_actions = env.get("GITHUB_ACTIONS") == "true" and env.get("GITHUB_SHA")
        ref_name = (env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME")) if in_actions else None
        info = checkout() if (per_path or not in_actions) else None
        if info is not None:
            revision = revision_string(ref_name or info.ref_name, info.sha)
            uncommitted = info.uncommitted
        elif in_actions:
            revision = revision_string(ref_name, env["GITHUB_SHA"])
    if created is not None:
        stamp = parse_created(created)
    elif env.get("SOURCE_DATE_EPOCH"):
        epoch = env["SOURCE_DATE_EPOCH"].strip()
        if not epoch.isdigit():
            raise UsageError(f"SOURCE_DATE_EPOCH={epoch!r} is not a number of seconds")
        stamp = rfc3339(int(epoch))
    elif (info := checkout()) is not None:
        stamp = rfc3339(info.commit_time)
    else:
        stamp = EPOCH
    return Provenance(source=source, revision=revision, created=stamp, uncommitted=uncommitted)
