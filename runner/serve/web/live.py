"""What a running ``serve`` remembers for the status page: each sync's last passes, in memory.

The inventory holds the history; a pass's change set, the health of its objects and the
drift it corrected exist only in its ``Result``. ``Recorder.observe`` hears every outcome
(from ``Service._observe``) and keeps, per sync, the last full pass, the last one that
changed something, the objects that were not healthy and the last drift corrections.
``live`` joins that with the scheduler's snapshot (readiness, running, next pass).
A restart forgets all of it; the page then shows the inventory's history only.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.plan.health import HealthStatus
from runner.plan.history import timestamp
from runner.serve.scheduler import APPLIED, Outcome, SyncState
from runner.serve.web.view import LiveSync

MAX_DRIFT = 10


def _at(epoch: float) -> str:
    return timestamp(dt.datetime.fromtimestamp(epoch, dt.UTC)) if epoch else ""


@dataclass
class _Kept:
    last_pass: dict[str, Any] | None = None
    last_change: dict[str, Any] | None = None
    unhealthy: list[dict[str, Any]] = field(default_factory=list)
    drift: list[dict[str, Any]] = field(default_factory=list)
    settled_digest: str = ""


class Recorder:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, _Kept] = {}
        #: goes up with every outcome, so a reader can tell that something changed
        self.generation = 0

    def observe(self, outcome: Outcome) -> None:
        result = outcome.result
        with self._lock:
            self.generation += 1
            if result is None:  # a cheap check: nothing beyond the scheduler's state
                return
            kept = self._kept.setdefault(outcome.state.name, _Kept())
            now = _at(time.time())
            kept.last_pass = {
                "time": now,
                "revision": result.revision,
                "digest": result.digest,
                "outcome": outcome.outcome,
                "seconds": round(result.seconds, 3),
                "summary": result.changeset.summary(),
                "error": result.error.message if result.error is not None else "",
                "rolledBackFrom": result.rolled_back_from,
                "rolledBackTo": result.rolled_back_to,
            }
            changed = [e.to_json() for e in result.changeset.entries if e.action.value != "unchanged"]
            if result.changeset.changed:
                kept.last_change = {
                    "time": now,
                    "revision": result.revision,
                    "counts": result.changeset.counts(),
                    "objects": changed,
                }
            if result.health or result.error is not None:
                kept.unhealthy = [
                    {"object": key, "status": h.status.value, "message": h.message}
                    for key, h in sorted(result.health.items())
                    if h.status is not HealthStatus.CURRENT
                ]
            if (
                outcome.outcome == APPLIED
                and result.error is None
                and kept.settled_digest == result.digest
                and result.changeset.changed
            ):
                kept.drift.insert(0, {"time": now, "revision": result.revision, "objects": changed})
                del kept.drift[MAX_DRIFT:]
            if result.error is None and result.digest:
                kept.settled_digest = result.digest

    def live(self, states: Sequence[SyncState]) -> dict[str, LiveSync]:
        """Each configured sync's live state, from the scheduler's snapshot and what was kept."""
        wall, mono = time.time(), time.monotonic()
        out: dict[str, LiveSync] = {}
        with self._lock:
            for state in states:
                kept = self._kept.get(state.name, _Kept())
                suspended = state.options.schedule.suspend
                out[state.name] = LiveSync(
                    ready=state.ready,
                    reason=state.reason,
                    running=state.running,
                    suspended=suspended,
                    next_pass="" if suspended or state.running else _at(wall + max(0.0, state.due - mono)),
                    last_at=_at(state.last_at),
                    last_seconds=round(state.last_seconds, 3) if state.last_at else None,
                    last_pass=kept.last_pass,
                    last_change=kept.last_change,
                    unhealthy=list(kept.unhealthy),
                    drift=list(kept.drift),
                )
        return out
