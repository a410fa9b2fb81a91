"""The revisions a sync went through, newest first, and the digests it rolled back from.

Pure. Like Flux's ``.status.history``: at most ``MAX_ENTRIES`` entries, one per run of
passes of a digest (a pass of the newest entry's digest updates that entry instead of
adding one). An entry changes, and so the inventory is written, only when its result,
health or message changes: a pass that finds everything as it was writes nothing, so
``time`` is when the digest reached its current result. ``was_healthy`` survives later
failures of the same digest, because what a rollback needs is a digest that once ran
healthy, not one that never failed. ``rejected`` lists the digests rolled back from, which
passes do not apply again until a person asks (``lockgate sync``, ``lockgate rollback``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from lockgate.summary import summarise

MAX_ENTRIES = 5
MAX_REJECTED = 5
#: an entry's message is kept whole up to this size (an error listing 20 refused objects
#: fits); beyond it, summarised (``lockgate.summary``), never cut
MAX_MESSAGE = 8000


class Outcome(StrEnum):
    """What a pass did with the entry's digest."""

    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    #: applied again by a rollback (automatic or ``lockgate rollback``)
    ROLLED_BACK = "RolledBack"
    ROLLBACK_FAILED = "RollbackFailed"
    #: the pass stopped before it finished (shutdown), e.g. during its health wait
    ABANDONED = "Abandoned"


class Summary(StrEnum):
    """The health of the entry's objects when the pass ended."""

    HEALTHY = "Healthy"
    UNHEALTHY = "Unhealthy"
    #: nothing was waited for (``wait`` off, no ``healthChecks``), or the pass failed before
    UNKNOWN = "Unknown"


@dataclass(frozen=True)
class Entry:
    digest: str
    revision: str
    verified_by: str
    result: Outcome
    health: Summary
    #: RFC 3339 UTC
    time: str
    message: str = ""
    #: the digest was seen healthy at least once (kept when a later pass of it fails)
    was_healthy: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "digest": self.digest,
            "revision": self.revision,
            "verifiedBy": self.verified_by,
            "result": self.result.value,
            "health": self.health.value,
            "time": self.time,
            "message": self.message,
            "wasHealthy": self.was_healthy,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Entry:
        """Lenient: an unknown result or health word reads as Failed / Unknown."""
        try:
            result = Outcome(doc.get("result", ""))
        except ValueError:
            result = Outcome.FAILED
        try:
            health = Summary(doc.get("health", ""))
        except ValueError:
            health = Summary.UNKNOWN
        return cls(
            digest=str(doc.get("digest", "")),
            revision=str(doc.get("revision", "")),
            verified_by=str(doc.get("verifiedBy", "")),
            result=result,
            health=health,
            time=str(doc.get("time", "")),
            message=str(doc.get("message", "")),
            was_healthy=bool(doc.get("wasHealthy", health is Summary.HEALTHY)),
        )


def timestamp(moment: dt.datetime) -> str:
    """RFC 3339 in UTC with second precision, as Kubernetes writes times."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def record(history: Sequence[Entry], entry: Entry) -> list[Entry]:
    """``history`` with ``entry`` added at the front, or merged into the newest entry of its digest.

    A merge keeps the newest entry's time when nothing but the time would change, and keeps
    ``was_healthy`` once set.
    """
    if len(entry.message) > MAX_MESSAGE:
        entry = replace(entry, message=summarise(entry.message, MAX_MESSAGE))
    if entry.health is Summary.HEALTHY:
        entry = replace(entry, was_healthy=True)
    if history and history[0].digest == entry.digest:
        newest = history[0]
        merged = replace(entry, was_healthy=entry.was_healthy or newest.was_healthy)
        if replace(merged, time=newest.time) == newest:
            return list(history)
        return [merged, *history[1:]]
    return [entry, *history][:MAX_ENTRIES]


def was_healthy(history: Iterable[Entry], digest: str) -> bool:
    return any(e.digest == digest and e.was_healthy for e in history)


def last_healthy(history: Iterable[Entry], *, excluding: Collection[str]) -> Entry | None:
    """The newest entry whose digest once ran healthy and is not in ``excluding``."""
    return next((e for e in history if e.was_healthy and e.digest not in excluding), None)


def find(history: Iterable[Entry], digest: str) -> Entry | None:
    return next((e for e in history if e.digest == digest), None)


def reject(rejected: Sequence[str], digest: str) -> list[str]:
    """``digest`` first among the rejected, each once, at most ``MAX_REJECTED``."""
    return [digest, *(d for d in rejected if d != digest)][:MAX_REJECTED]


def accept(rejected: Sequence[str], digest: str) -> list[str]:
    return [d for d in rejected if d != digest]
