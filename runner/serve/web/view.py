"""The status page's JSON documents, from inventories, Events and a running ``serve``'s live state.

Pure. ``overview`` is one row per sync (what ``lockgate status`` prints, plus the link to the
source commit and, under ``serve``, readiness, duration and the next pass); ``detail`` adds
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

from runner.pipeline import status
from runner.plan.inventory import Inventory

#: ``main@sha1:<hex>`` (Flux's and lockgate push's form), ``sha1:<hex>`` or a bare commit
_COMMIT = re.compile(r"(?:^|[@:])([0-9a-f]{7,64})$")
MAX_EVENTS = 20


@dataclass(frozen=True)
class Provenance:
    """The artifact's ``org.opencontainers.image.source`` and ``.revision`` annotations."""

    source: str = ""
    revision: str = ""


@dataclass
class LiveSync:
    """What a running ``serve`` knows about a sync beyond its inventory."""

    ready: bool
    reason: str
    running: bool = False
    suspended: bool = False
    #: RFC 3339; empty when no pass is scheduled (suspended, run by another replica)
    next_pass: str = ""
    #: the last pass or check, RFC 3339, and how long it took
    last_at: str = ""
    last_seconds: float | None = None
    #: the last full pass: {time, revision, outcome, error}
    last_pass: dict[str, Any] | None = None
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


def _provenance(p: Provenance | None) -> dict[str, str] | None:
    if p is None or not (p.source or p.revision):
        return None
    return {"source": p.source, "revision": p.revision, "url": commit_url(p)}


def row(
    inventory: Inventory, *, provenance: Provenance | None = None, live: LiveSync | None = None
) -> dict[str, Any]:
    """One sync of the overview."""
    base = status.to_json(inventory)
    last = base["lastResult"]
    ok = last.get("status") in ("Succeeded", "RolledBack") and base["health"] != "Unhealthy"
    return {
        "name": inventory.name,
        "namespace": inventory.namespace,
        "source": inventory.source,
        "revision": inventory.revision,
        "digest": inventory.digest,
        "commit": _provenance(provenance),
        "verifiedBy": base["verifiedBy"],
        "result": last.get("status", ""),
        "summary": last.get("summary", ""),
        "health": base["health"],
        "ready": live.ready if live is not None else ok,
        "reason": live.reason if live is not None else str(last.get("summary", "")),
        "running": live.running if live is not None else False,
        "suspended": live.suspended if live is not None else False,
        "lastPass": (live.last_at if live is not None and live.last_at else last.get("time", "")),
        "lastSeconds": live.last_seconds if live is not None else None,
        "nextPass": live.next_pass if live is not None else None,
        "members": base["members"],
        "requestPending": inventory.request_pending,
    }


def pending_row(name: str, namespace: str, live: LiveSync) -> dict[str, Any]:
    """A configured sync whose inventory does not exist yet (it has not run, or failed before)."""
    empty = Inventory(name=name, namespace=namespace)
    return row(empty, live=live) | {"result": "", "health": "Unknown"}


def event_json(event: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of an Event the page shows."""
    meta = event.get("metadata") or {}
    return {
        "type": str(event.get("type", "")),
        "reason": str(event.get("reason", "")),
        "message": str(event.get("message", "")),
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
) -> dict[str, Any]:
    """One sync: the overview's row and everything the sync page shows."""
    base = (
        row(inventory, provenance=provenance, live=live)
        if exists or live is None
        else pending_row(inventory.name, inventory.namespace, live)
    )
    shown = sorted((event_json(e) for e in events), key=lambda e: e["time"], reverse=True)[:MAX_EVENTS]
    return base | {
        "live": live is not None,
        "history": [e.to_json() for e in inventory.history],
        "rejected": list(inventory.rejected),
        "requestedAt": inventory.requested_at,
        "lastPassDetail": live.last_pass if live is not None else None,
        "lastChange": live.last_change if live is not None else None,
        "unhealthy": live.unhealthy if live is not None else None,
        "drift": live.drift if live is not None else None,
        "events": shown,
    }
