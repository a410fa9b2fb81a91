"""What a running ``serve`` remembers for the status page: each sync's last passes, in memory.

The inventory holds the history; a pass's change set, the health of its objects and the
drift it corrected exist only in its ``Result``. ``Recorder.observe`` hears every outcome
(from ``Service._observe``) and keeps, per sync, the last attempt (a full pass, or a check
that failed: the source could not be reached), the last pass that changed something, the
objects that are not healthy now (after a rollback: those of the revision rolled back to)
and the last drift corrections. ``live`` joins that with the scheduler's snapshot
(readiness, running, next pass). A restart forgets all of it; the page then shows what
the inventory recorded.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lockgate.summary import summarise
from runner.inventory import events
from runner.plan import attempt
from runner.plan.health import HealthStatus
from runner.plan.history import timestamp
from runner.serve.scheduler import (
    ABANDONED,
    APPLIED,
    FAILED,
    ROLLED_BACK,
    UNCHANGED,
    WAITING,
    Outcome,
    SyncState,
)
from runner.serve.web.view import LiveSync

MAX_DRIFT = 10


def _at(epoch: float) -> str:
    return timestamp(dt.datetime.fromtimestamp(epoch, dt.UTC)) if epoch else ""


#: the last attempt's result word, by the scheduler's outcome (a skip or a wait is no attempt)
_RESULTS = {
    APPLIED: attempt.Result.SUCCEEDED,
    UNCHANGED: attempt.Result.SUCCEEDED,
    FAILED: attempt.Result.FAILED,
    ROLLED_BACK: attempt.Result.ROLLED_BACK,
    ABANDONED: attempt.Result.ABANDONED,
}


@dataclass
class _Kept:
    last_attempt: dict[str, Any] | None = None
    #: the last full pass's attempt, shown again once a failed check is followed by a good one
    pass_attempt: dict[str, Any] | None = None
    #: the Ready reason word of the last outcome that had one
    reason_word: str = ""
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
            kept = self._kept.setdefault(outcome.state.name, _Kept())
            now = _at(time.time())
            if result is None:  # a cheap check, or a wait for a dependency
                self._checked(kept, outcome, now)
                return
            word = _RESULTS.get(outcome.outcome)
            if word is not None:
                error = result.error
                kept.reason_word = (
                    attempt.SUCCEEDED_REASON
                    if error is None
                    else events.ROLLED_BACK
                    if result.rolled_back_to
                    else events.reason_for(error)
                )
                message = error.message if error is not None else result.changeset.summary()
                kept.last_attempt = kept.pass_attempt = {
                    "result": word.value,
                    "time": now,
                    "revision": result.revision,
                    "digest": result.digest,
                    "reason": kept.reason_word,
                    "message": message,
                    "summary": summarise(message),
                    "exitCode": int(error.exit_code) if error is not None else 0,
                    "seconds": round(result.seconds, 3),
                    "rolledBackFrom": result.rolled_back_from,
                    "rolledBackTo": result.rolled_back_to,
                }
            changed = [e.to_json() for e in result.changeset.entries if e.action.value != "unchanged"]
            # after a rollback, what it changed back is the last change (what runs now)
            rollback = result.rollback_changes if result.rolled_back_to else None
            last = rollback if rollback is not None and rollback.changed else result.changeset
            if last.changed:
                kept.last_change = {
                    "time": now,
                    "revision": result.rolled_back_to if last is rollback else result.revision,
                    "counts": last.counts(),
                    "objects": [e.to_json() for e in last.entries if e.action.value != "unchanged"],
                    "rollback": last is rollback,
                }
            if result.health or result.error is not None:
                # after a rollback, ``health`` is that of the revision rolled back to: what runs now
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

    @staticmethod
    def _checked(kept: _Kept, outcome: Outcome, now: str) -> None:
        """A check that failed is an attempt that could not reach the source; one that went
        through shows the last pass again."""
        if outcome.outcome == WAITING:
            kept.reason_word = attempt.DEPENDENCY_NOT_READY
        elif outcome.outcome == FAILED:
            error = outcome.error
            message = error.message if error is not None else outcome.reason
            kept.reason_word = attempt.ARTIFACT_FAILED if error is not None else "InternalError"
            kept.last_attempt = {
                "result": attempt.Result.FAILED.value,
                "time": now,
                "revision": "",
                "digest": "",
                "reason": kept.reason_word,
                "message": message,
                "summary": summarise(message),
                "exitCode": int(error.exit_code) if error is not None else 1,
                "seconds": round(outcome.state.last_seconds, 3),
            }
        else:
            kept.last_attempt = kept.pass_attempt
            if kept.pass_attempt is not None:
                kept.reason_word = str(kept.pass_attempt["reason"])

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
                    reason_word=kept.reason_word,
                    last_attempt=kept.last_attempt,
                    last_change=kept.last_change,
                    unhealthy=list(kept.unhealthy),
                    drift=list(kept.drift),
                )
        return out
