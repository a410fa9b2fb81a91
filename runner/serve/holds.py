"""What holds a sync in ``serve`` without a pass, recorded on its parent so ``lockgate status`` tells it.

A sync that waits for a ``dependsOn`` sync, or whose source cannot be checked (the registry
is unreachable, the tag is gone), runs no pass, so nothing else would write its parent.
``Holds.observe`` hears every outcome (``Service._observe``) and records the hold when it
begins, changes or ends (``pipeline.records.held``: ``DependencyNotReady``, ``ArtifactFailed``
with a Warning Event, or nothing once a check goes through); a pass clears it itself. It
reads the parent first and writes only a change, as the sync's tenant, under the sync's
Lease and the per-sync lock that passes take too, and not when a pass ran meanwhile (what
the pass wrote is newer). A record that cannot be made is a warning in the log.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from lockgate.errors import LockgateError
from runner.inventory import store
from runner.kube.client import Kube
from runner.pipeline import reconcile as pipeline
from runner.pipeline import records
from runner.plan import attempt
from runner.serve import leases
from runner.serve.scheduler import FAILED, SKIPPED, WAITING, Outcome, Scheduler

log = logging.getLogger("lockgate.serve")


def hold_of(outcome: Outcome) -> tuple[bool, attempt.Held | None]:
    """(whether the outcome tells what holds the sync, and what): a dependency not ready, a
    source that could not be checked, or (a check that went through) nothing."""
    if outcome.result is not None:
        return False, None
    now = records.now()
    if outcome.outcome == WAITING:
        return True, attempt.Held(attempt.DEPENDENCY_NOT_READY, outcome.reason, now)
    if outcome.outcome == FAILED and outcome.error is not None:
        return True, attempt.Held(attempt.ARTIFACT_FAILED, outcome.error.message, now)
    return outcome.outcome == SKIPPED, None


def same(recorded: attempt.Held | None, hold: attempt.Held | None) -> bool:
    return recorded is None if hold is None else hold.same(recorded)


def writer(
    kube: Kube, options: pipeline.SyncOptions, namespace: str, guard: Callable[[], None] | None = None
) -> Kube:
    """The client a sync's records are written with: as its tenant when it names one."""
    user = options.impersonated_user(namespace)
    made = kube if user is None else kube.impersonating(user)
    return made if guard is None else made.guarded(guard)


class Holds:
    def __init__(self, kube: Kube, keeper: leases.LeaseKeeper | None, scheduler: Scheduler) -> None:
        self.kube, self.keeper, self.scheduler = kube, keeper, scheduler
        #: sync -> what this process last recorded (None: nothing); absent: not known
        self._recorded: dict[str, attempt.Held | None] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def lock(self, name: str) -> threading.Lock:
        """The sync's lock: a pass and a record of its hold never write its parent at once."""
        with self._lock:
            return self._locks.setdefault(name, threading.Lock())

    def forget(self, name: str) -> None:
        """A pass ran: it cleared the hold if it wrote the parent; look again next time."""
        self._recorded.pop(name, None)

    def observe(self, outcome: Outcome) -> None:
        tells, hold = hold_of(outcome)
        state, name = outcome.state, outcome.state.name
        if not tells or (name in self._recorded and same(self._recorded[name], hold)):
            return
        options = state.options
        namespace = pipeline.runner_namespace(options.namespace)
        passes = state.passes
        try:
            if same(store.read(writer(self.kube, options, namespace), name, namespace).held, hold):
                self._recorded[name] = hold
                return
            with self.lock(name):
                if self.scheduler.stopping or self.scheduler.passes(name) != passes:
                    return  # a pass ran meanwhile: what it wrote is newer
                lease = self.keeper.hold(namespace, name) if self.keeper is not None else None
                if self.keeper is not None and lease is None:
                    return  # another runner has the sync now
                try:
                    guard = None if lease is None else lease.guard
                    records.held(writer(self.kube, options, namespace, guard), name, namespace, hold)
                    self._recorded[name] = hold
                finally:
                    if lease is not None:
                        lease.release()
        except LockgateError as exc:
            log.warning(
                "could not record what holds the sync on its inventory",
                extra={"sync": name, "reason": exc.summary()},
            )
