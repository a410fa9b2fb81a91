"""The fleet as a value: revisions x clusters, each cell what the verified attestations say.

Pure. A ``Claim`` is one health attestation as read (its cluster, healthy or failing, when, and
whether it verified with a key or identity the reader trusts); ``cell`` decides what a cluster
says about one digest, with the rule a downstream runner applies (``requirements.evaluate``): a
verified failing attestation wins over a healthy one (nothing is ever deleted, so a digest
that was healthy and later failed carries both), healthy counts from its earliest
``healthyAt``. A claim that verifies with no trusted key or identity is shown as
``unverified`` and never as healthy: anyone who can push to the registry can write one.
``build`` makes the ``Fleet``, which renders itself as the table and as JSON.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lockgate import semver, terminal

#: how a cell that holds nothing is drawn in the table
NOTHING = "—"
#: the widest a cluster name or tag is drawn: an unverified attestation names any cluster
WIDEST = 64


class State(enum.StrEnum):
    HEALTHY = "healthy"
    FAILING = "failing"
    #: only attestations no trusted key or identity verifies
    UNVERIFIED = "unverified"
    #: no health attestation for this cluster yet
    NONE = "none"


@dataclass(frozen=True)
class Claim:
    """One health attestation of a digest for ``cluster``, as read from the registry."""

    cluster: str
    healthy: bool
    #: ``healthyAt`` or ``failedAt`` as written ("" when absent)
    at: str
    verified: bool
    #: who signed it (verified claims only)
    signer: str = ""
    sync: str = ""
    #: the referrer manifest that holds it
    referrer: str = ""
    #: why it did not verify (unverified claims only)
    reason: str = ""


@dataclass(frozen=True)
class Cell:
    state: State
    #: the earliest ``healthyAt`` (healthy) or ``failedAt`` (failing)
    since: str = ""
    signers: tuple[str, ...] = ()
    syncs: tuple[str, ...] = ()
    #: claims for this cluster that did not verify (shown whatever the state)
    unverified: int = 0
    #: why the first of them did not verify
    reason: str = ""

    def text(self) -> str:
        if self.state in (State.HEALTHY, State.FAILING):
            return f"{self.state.value} since {self.since}" if self.since else self.state.value
        return self.state.value if self.state is State.UNVERIFIED else NOTHING

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "since": self.since,
            "signers": list(self.signers),
            "syncs": list(self.syncs),
            "unverified": self.unverified,
            "reason": self.reason,
        }


NONE = Cell(State.NONE)


def cell(claims: Iterable[Claim]) -> Cell:
    """What one cluster's claims about one digest say."""
    mine = list(claims)
    verified = [c for c in mine if c.verified]
    unverified = [c for c in mine if not c.verified]
    failing = [c for c in verified if not c.healthy]
    chosen = failing or [c for c in verified if c.healthy]
    reason = unverified[0].reason if unverified else ""
    if not chosen:
        state = State.UNVERIFIED if unverified else State.NONE
        return Cell(state, unverified=len(unverified), reason=reason)
    times = sorted(c.at for c in chosen if c.at)
    return Cell(
        State.FAILING if failing else State.HEALTHY,
        since=times[0] if times else "",
        signers=tuple(sorted({c.signer for c in chosen if c.signer})),
        syncs=tuple(sorted({c.sync for c in chosen if c.sync})),
        unverified=len(unverified),
        reason=reason,
    )


def cells(claims: Iterable[Claim]) -> dict[str, Cell]:
    """Each cluster's cell, for the clusters the claims name."""
    by_cluster: dict[str, list[Claim]] = {}
    for claim in claims:
        by_cluster.setdefault(claim.cluster, []).append(claim)
    return {name: cell(found) for name, found in sorted(by_cluster.items())}


def short(digest: str) -> str:
    """``sha256:`` and the first 12 hex digits, as the status page and ``lockgate status`` show."""
    algorithm, _, hexdigest = digest.partition(":")
    return f"{algorithm}:{hexdigest[:12]}" if hexdigest else digest


@dataclass(frozen=True)
class Revision:
    """One digest of the repository and the tags that point to it."""

    digest: str
    tags: tuple[str, ...] = ()
    #: the manifest's ``org.opencontainers.image.created`` ("" when absent)
    created: str = ""

    @property
    def label(self) -> str:
        return ", ".join(self.tags) if self.tags else short(self.digest)


def _version_key(tag: str) -> tuple[Any, ...]:
    """Sorts versions above other tags, versions by precedence."""
    version = semver.parse_tag(tag)
    return (0,) if version is None else (1, version.key())


def newest_first(revisions: Iterable[Revision]) -> list[Revision]:
    """By ``created`` when the artifacts carry it, then by their highest version tag, then by
    tag (all descending; a digest without tags after those with, by digest)."""
    ordered = sorted(revisions, key=lambda r: (r.tags[:1], r.digest), reverse=True)
    ordered.sort(key=lambda r: max((_version_key(t) for t in r.tags), default=()), reverse=True)
    ordered.sort(key=lambda r: r.created, reverse=True)
    return ordered


def tags_in_order(tags: Iterable[str]) -> tuple[str, ...]:
    """A digest's tags, highest version first, then the others by name."""
    by_name = sorted(set(tags))
    return tuple(sorted(by_name, key=_version_key, reverse=True))


@dataclass(frozen=True)
class Row:
    revision: Revision
    cells: dict[str, Cell] = field(default_factory=dict)

    def cell(self, cluster: str) -> Cell:
        return self.cells.get(cluster, NONE)


@dataclass(frozen=True)
class Fleet:
    """Revisions (newest first) x clusters (by name), as read at ``time``."""

    repository: str
    time: str
    clusters: tuple[str, ...]
    rows: tuple[Row, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "repository": self.repository,
            "time": self.time,
            "clusters": list(self.clusters),
            "revisions": [
                {
                    "revision": row.revision.label,
                    "digest": row.revision.digest,
                    "tags": list(row.revision.tags),
                    "created": row.revision.created,
                    "clusters": {name: row.cell(name).to_json() for name in self.clusters},
                }
                for row in self.rows
            ],
        }

    def table(self) -> str:
        """REVISION, DIGEST and a column per cluster; the reasons of unverified cells below."""
        if not self.rows:
            return f"oci://{self.repository}: no revisions"
        # a forged attestation may name a cluster "\x1b[2J": every cell escaped, and cut
        header = ["REVISION", "DIGEST", *(terminal.shown(c, limit=WIDEST) for c in self.clusters)]
        lines = [header] + [
            [
                terminal.shown(row.revision.label, limit=WIDEST),
                short(row.revision.digest),
                *(terminal.shown(row.cell(c).text(), limit=WIDEST) for c in self.clusters),
            ]
            for row in self.rows
        ]
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        out = [
            "  ".join(text.ljust(w) for text, w in zip(line, widths, strict=True)).rstrip() for line in lines
        ]
        if not self.clusters:
            out.append("(no health attestations yet)")
        notes = [
            f"  {terminal.shown(row.revision.label, limit=WIDEST)} in {terminal.shown(name, limit=WIDEST)}: "
            f"{terminal.shown(row.cell(name).reason)}"
            for row in self.rows
            for name in self.clusters
            if row.cell(name).unverified and row.cell(name).reason
        ]
        if notes:
            out += ["", "unverified (signed by no --key or identity given):", *notes]
        return "\n".join(out)


def build(
    repository: str, revisions: Iterable[Revision], claims: Mapping[str, Sequence[Claim]], *, time: str
) -> Fleet:
    """The fleet of ``revisions`` (any order) from the claims read for each digest."""
    rows = tuple(Row(r, cells(claims.get(r.digest, ()))) for r in newest_first(revisions))
    clusters = tuple(sorted({name for row in rows for name in row.cells}))
    return Fleet(repository, time, clusters, rows)
