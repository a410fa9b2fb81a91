"""The status page's JSON documents, from inventories, Events and a running ``serve``'s live state.

Pure. ``overview`` is one row per sync (what ``lockgate status`` prints: readiness, the
applied revision and its health, the last attempt; plus the link to the source commit and,
under ``serve``, what it knows newer than the inventory, the duration and the next pass).
Messages come whole with their one-line ``summary`` (``lockgate.summary``), so the page
shows the summary where room is short and the whole one a click away. ``detail`` adds
the history, the last change set with its field-level changes (Secret values are masked by
``lockgate.diff`` before they reach a ``ChangeSet``, so none can reach this module), the
unhealthy objects of the last pass, drift corrections and the sync's Events. Without a live
state (``lockgate status --web``) those parts that only a running ``serve`` knows are None
and the page says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lockgate.summary import summarise
from runner.pipeline import status
from runner.plan import attempt
from runner.plan.inventory import Inventory

#: ``main@sha1:<hex>`` (Flux's and lockgate push's form), ``sha1:<hex>`` or a bare commit
_COMMIT = re.compile(r"(?:^|[@:])([0-9a-f]{7,64})$")
#: the inventory's ``waiting``: ``<revision>: <why>``, the revision ``<tag>@sha256:<hex>`` or the digest
_WAITING = re.compile(r"^(?:[^\s@]*@)?(sha256:[0-9a-f]{64}):")
MAX_EVENTS = 20
#: the overview's column for why a sync is (not) ready: one summarised line
OVERVIEW_SUMMARY = 140


@dataclass(frozen=True)
class Provenance:
    """The artifact's ``org.opencontainers.image.source`` and ``.revision`` annotations."""

    source: str = ""
    revision: str = ""


@dataclass
class LiveSync:
    """What a running ``serve`` knows about a sync beyond its inventory."""

    ready: bool
    #: why (not): the scheduler's words, whole
    reason: str
    #: the Ready reason word of the last outcome seen (``ReconciliationSucceeded``, ``ArtifactFailed``...)
    reason_word: str = ""
    running: bool = False
    suspended: bool = False
    #: RFC 3339; empty when no pass is scheduled (suspended, run by another replica)
    next_pass: str = ""
    #: the last pass or check, RFC 3339, and how long it took
    last_at: str = ""
    last_seconds: float | None = None
    #: the last attempt seen by this serve (a full pass, or a check that failed), as
    #: ``status.attempt_json`` shapes the inventory's
    last_attempt: dict[str, Any] | None = None
    #: the last full pass that changed something: {time, revision, counts, objects}
    last_change: dict[str, Any] | None = None
    #: objects of the last full pass that were not Current: {object, status, message}
    unhealthy: list[dict[str, Any]] = field(default_factory=list)
    #: passes at an unchanged digest that changed something, newest first
    drift: list[dict[str, Any]] = field(default_factory=list)


def commit_url(provenance: Provenance) -> str:
    """A link to the commit the artifact was built from, when its source is an http(s) repository."""
    source = provenance.source.strip()
    match = _COMMIT.search(provenance.revision.strip())
    if not match or not source.startswith(("https://", "http://")):
        return ""
    base = source.removesuffix("/").removesuffix(".git")
    return f"{base}/commit/{match.group(1)}"


def waiting_digest(waiting: str) -> str:
    """The digest a waiting sync wants (its inventory's ``waiting``), or ""."""
    match = _WAITING.match(waiting)
    return match.group(1) if match else ""


def _provenance(p: Provenance | None) -> dict[str, str] | None:
    if p is None or not (p.source or p.revision):
        return None
    return {"source": p.source, "revision": p.revision, "url": commit_url(p)}


def _ready(inventory: Inventory, live: LiveSync | None) -> attempt.Readiness:
    """The parent's Ready condition, or what a running ``serve`` knows newer."""
    recorded = status.readiness(inventory)
    if recorded.reason == attempt.NEVER_RAN and (
        inventory.suspended or (live is not None and live.suspended)
    ):
        recorded = attempt.Readiness(
            "False", recorded.reason, "suspended: no pass runs until spec.suspend is false"
        )
    if live is None:
        return recorded
    if live.ready:
        if recorded.ready:
            return recorded
        return attempt.Readiness("True", attempt.SUCCEEDED_REASON, live.reason)
    if live.reason_word == "Abandoned":
        return attempt.Readiness("Unknown", live.reason_word, live.reason)
    if not live.reason_word and not recorded.ready and recorded.status != "Unknown":
        return recorded  # nothing seen yet in this process: the parent's word stands
    return attempt.Readiness("False", live.reason_word or attempt.NEVER_RAN, live.reason)


def _last_attempt(inventory: Inventory, live: LiveSync | None) -> dict[str, Any] | None:
    if live is not None and live.last_attempt is not None:
        return live.last_attempt
    recorded = status.attempt_json(inventory.last_attempt)
    if recorded is None and inventory.last_result.get("status"):
        # an older runner's parent: its last result stands for the last attempt
        summary = str(inventory.last_result.get("summary", ""))
        recorded = {
            "result": str(inventory.last_result["status"]),
            "time": inventory.history[0].time if inventory.history else "",
            "revision": inventory.revision,
            "digest": inventory.digest,
            "reason": "",
            "message": summary,
            "summary": summarise(summary),
            "exitCode": 0,
        }
    return recorded


def row(
    inventory: Inventory,
    *,
    provenance: Provenance | None = None,
    live: LiveSync | None = None,
    fleet: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One sync of the overview; ``fleet`` is what ``runner.serve.web.fleet`` read of the
    attestations of its digests (None: no policy, or no running ``serve``)."""
    base = status.to_json(inventory)
    return {
        "name": inventory.name,
        "namespace": inventory.namespace,
        "source": inventory.source,
        "revision": inventory.revision,
        "digest": inventory.digest,
        "commit": _provenance(provenance),
        "verifiedBy": base["verifiedBy"],
        "ready": _ready(inventory, live).to_json(OVERVIEW_SUMMARY),
        "suspended": (live.suspended if live is not None else False) or inventory.suspended,
        "running": live.running if live is not None else False,
        "health": base["health"],
        "lastAttempt": _last_attempt(inventory, live),
        "lastPass": live.last_at if live is not None else None,
        "lastSeconds": live.last_seconds if live is not None else None,
        "nextPass": live.next_pass if live is not None else None,
        "members": base["members"],
        "requestPending": inventory.request_pending,
        "waiting": inventory.waiting,
        "fleet": fleet,
    }


def pending_row(name: str, namespace: str, live: LiveSync) -> dict[str, Any]:
    """A configured sync whose inventory does not exist yet (it has not run, or failed before
    anything could be recorded)."""
    return row(Inventory(name=name, namespace=namespace), live=live)


def event_json(event: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of an Event the page shows."""
    meta = event.get("metadata") or {}
    message = str(event.get("message", ""))
    return {
        "type": str(event.get("type", "")),
        "reason": str(event.get("reason", "")),
        "message": message,
        "summary": summarise(message),
        "time": str(
            event.get("lastTimestamp") or event.get("eventTime") or meta.get("creationTimestamp") or ""
        ),
        "count": int(event.get("count") or 1),
    }


def detail(
    inventory: Inventory,
    *,
    events: Sequence[Mapping[str, Any]],
    provenance: Provenance | None = None,
    live: LiveSync | None = None,
    exists: bool = True,
    fleet: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One sync: the overview's row and everything the sync page shows."""
    base = (
        row(inventory, provenance=provenance, live=live, fleet=fleet)
        if exists or live is None
        else pending_row(inventory.name, inventory.namespace, live)
    )
    shown = sorted((event_json(e) for e in events), key=lambda e: e["time"], reverse=True)[:MAX_EVENTS]
    return base | {
        "live": live is not None,
        "history": status.history_json(inventory.history),
        "rejected": list(inventory.rejected),
        "requestedAt": inventory.requested_at,
        "lastChange": live.last_change if live is not None else None,
        "unhealthy": live.unhealthy if live is not None else None,
        "drift": live.drift if live is not None else None,
        "events": shown,
    }
