"""The scheduler of ``serve``: every sync on its interval, on its own, with a limit on passes at once.

One thread decides what is due (``runner.plan.schedule`` holds the arithmetic); a small
pool runs the work. A due sync first costs one cheap registry check (``check``: the
digest its tag or semver range points to now); only a new digest, an elapsed drift
interval or a person's request makes it a full pass (``run``). One sync's slow or failing
pass occupies one slot of the pool and nothing else, so the others keep their intervals.

A sync is ready after a full pass that applied (and, with ``wait``, stayed healthy); a
failed check makes it not ready, and the next check that succeeds at the digest that pass
applied makes it ready again by itself, releasing the syncs that depend on it.

Triggers (webhooks, ``lockgate sync``) make a sync due now; a trigger that arrives while
the sync is queued or running is folded into one more pass, so a burst costs one pass. A
person's request outlives failed checks: it is answered by the next pass that runs.
``configure`` takes a new list of syncs (start or reload) and keeps what it knows about
syncs whose name stays. ``stop`` stops taking work and waits for running passes, whose
``guard`` raises ``Abandoned`` at their next write once the scheduler is stopping.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from lockgate.errors import Abandoned, LockgateError, ShuttingDown
from runner.pipeline.reconcile import SyncOptions
from runner.pipeline.result import Result
from runner.plan import schedule

log = logging.getLogger("lockgate.serve")

#: outcomes, as ``lockgate_passes_total{outcome}`` counts them
APPLIED, UNCHANGED, SKIPPED, FAILED, ABANDONED, WAITING, ROLLED_BACK = (
    "applied",
    "unchanged",
    "skipped",
    "failed",
    "abandoned",
    "waiting",
    "rolledBack",
)


@dataclass
class SyncState:
    """What the scheduler knows about one sync; read it through ``Scheduler.snapshot``."""

    options: SyncOptions
    due: float
    failures: int = 0
    running: bool = False
    #: triggered while queued or running: one more pass right after
    triggered: bool = False
    #: a person asked (``lockgate sync``): full pass, a rolled-back digest may be retried
    requested: bool = False
    applied: schedule.Applied = field(default_factory=schedule.Applied)
    #: digests the last passes refused to apply again (rolled back from)
    rejected: tuple[str, ...] = ()
    ready: bool = False
    reason: str = "not run yet"
    #: what the last full pass left: applied and healthy at ``applied.digest``, and why (not)
    settled: bool = False
    settled_reason: str = ""
    #: a full pass ran with these options (``first pass`` is said once)
    attempted: bool = False
    #: the options changed by a reload since the sync was first configured
    reconfigured: bool = False
    digest: str = ""
    revision: str = ""
    last: Result | None = None
    #: wall-clock time and length of the last pass or check
    last_at: float = 0.0
    last_seconds: float = 0.0
    passes: int = 0

    @property
    def name(self) -> str:
        return self.options.name


@dataclass(frozen=True)
class Outcome:
    """What one unit of work did, for metrics and logs."""

    state: SyncState
    outcome: str
    result: Result | None = None
    reason: str = ""
    #: why the cheap check failed (the source could not be checked); a pass's is in ``result``
    error: LockgateError | None = None


Check = Callable[[SyncOptions], str]
Run = Callable[[SyncOptions, bool, Callable[[], None]], Result]


class Scheduler:
    """Runs ``check`` and ``run`` for each configured sync, as described in the module docstring.

    ``run(options, requested, guard)`` is one full pass (``pipeline.reconcile`` with the
    sync's Lease, in ``service``); ``check(options)`` returns the digest the source points
    to now. ``owns(name)`` says whether this replica runs the sync (sharding);
    ``dependency_ready(name)`` answers for a dependency this replica does not run, and
    ``elsewhere()`` says why a sync it does not own is not its own (another replica runs it,
    or this one stands by). ``observe`` hears every outcome. All callables are called from
    the worker threads.
    """

    def __init__(
        self,
        *,
        check: Check,
        run: Run,
        concurrency: int = 4,
        owns: Callable[[str], bool] = lambda _name: True,
        dependency_ready: Callable[[str], bool] = lambda _name: False,
        observe: Callable[[Outcome], None] = lambda _outcome: None,
        elsewhere: Callable[[], str] = lambda: "run by another replica",
        clock: Callable[[], float] = time.monotonic,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._check = check
        self._run = run
        self._owns = owns
        self._dependency_ready = dependency_ready
        self._observe = observe
        self._elsewhere = elsewhere
        self._clock = clock
        self._random = rand
        self.concurrency = max(1, concurrency)
        self._states: dict[str, SyncState] = {}
        self._cond = threading.Condition()
        self._running = 0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="lockgate-pass")

    # ---- configuration -------------------------------------------------------------
    def configure(self, syncs: Sequence[SyncOptions], *, concurrency: int | None = None) -> list[str]:
        """Take this list of syncs; returns the names removed. A sync whose options changed is
        due now; one that stays the same keeps its timing."""
        now = self._clock()
        with self._cond:
            if concurrency is not None:
                self.concurrency = max(1, concurrency)
            wanted = {s.name: s for s in syncs}
            removed = [name for name in self._states if name not in wanted]
            for name in removed:
                del self._states[name]
            for index, options in enumerate(syncs):
                state = self._states.get(options.name)
                if state is None:
                    # spread the first passes a little so a large file does not start as one burst
                    self._states[options.name] = SyncState(options, due=now + index * 0.001)
                elif state.options != options:
                    # new settings are applied by a full pass, even at the same digest
                    state.applied = schedule.Applied()
                    state.options = options
                    state.due = now
                    state.failures = 0
                    state.attempted, state.reconfigured = False, True
            self._cond.notify_all()
        return removed

    def names(self) -> list[str]:
        with self._cond:
            return list(self._states)

    def knows(self, name: str) -> bool:
        with self._cond:
            return name in self._states

    def snapshot(self) -> list[SyncState]:
        """Copies of the states, in configuration order."""
        with self._cond:
            return [replace(s) for s in self._states.values()]

    def suspended(self, name: str) -> bool:
        with self._cond:
            state = self._states.get(name)
            return state is not None and state.options.schedule.suspend

    def passes(self, name: str) -> int:
        """How many full passes ``name`` has run; -1 while one runs or for an unknown sync."""
        with self._cond:
            state = self._states.get(name)
            return -1 if state is None or state.running else state.passes

    def ready(self, name: str) -> bool:
        """Applied and healthy at its current digest (for ``dependsOn``)."""
        with self._cond:
            state = self._states.get(name)
            if state is not None and self._owns(name):
                return state.ready
        return self._dependency_ready(name)

    # ---- triggers --------------------------------------------------------------------
    def trigger(self, name: str, reason: str, *, requested: bool = False) -> bool:
        """Make ``name`` due now; False when no such sync is configured."""
        with self._cond:
            state = self._states.get(name)
            if state is None:
                return False
            if requested:
                state.requested = True
            if state.running:
                state.triggered = True
            else:
                state.due = min(state.due, self._clock())
            suspended = state.options.schedule.suspend
            self._cond.notify_all()
        if suspended:
            log.info(
                "sync suspended: the trigger waits until it is resumed",
                extra={"sync": name, "reason": reason},
            )
        else:
            log.info("sync triggered", extra={"sync": name, "reason": reason})
        return True

    def wake(self) -> None:
        """Look at every sync again now (ownership changed)."""
        with self._cond:
            self._cond.notify_all()

    # ---- the loop --------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="lockgate-scheduler", daemon=True)
        self._thread.start()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def stop(self, grace: float) -> bool:
        """Stop taking work; wait up to ``grace`` seconds for running passes. True when none is left."""
        self._stopping.set()
        deadline = time.monotonic() + grace
        with self._cond:
            self._cond.notify_all()
            while self._running and time.monotonic() < deadline:
                self._cond.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
            left = self._running
        self._pool.shutdown(wait=False, cancel_futures=True)
        return left == 0

    def guard(self) -> None:
        """Raises ``ShuttingDown`` (an ``Abandoned``) once the scheduler is stopping: a pass's
        last word before a write, and during its health wait."""
        if self._stopping.is_set():
            raise ShuttingDown("the runner is shutting down: the pass stopped before its next write")

    def _loop(self) -> None:
        with self._cond:
            while not self._stopping.is_set():
                now = self._clock()
                next_due = now + 60.0
                for state in sorted(self._states.values(), key=lambda s: s.due):
                    if state.running:
                        continue
                    if state.options.schedule.suspend:
                        state.reason = "suspended"
                        continue
                    if state.due > now:
                        next_due = min(next_due, state.due)
                        break
                    if self._running >= self.concurrency:
                        break
                    try:
                        owned = self._owns(state.name)
                    except Exception:  # the scheduler must outlive any one question
                        log.exception("ownership check failed", extra={"sync": state.name})
                        owned = False
                    if not owned:
                        state.reason = self._elsewhere()
                        state.ready = False
                        state.due = now + state.options.schedule.interval
                        continue
                    state.running = True
                    self._running += 1
                    self._pool.submit(self._work, state)
                self._cond.wait(timeout=max(0.01, next_due - self._clock()))

    # ---- one unit of work ----------------------------------------------------------------
    def _work(self, state: SyncState) -> None:
        outcome: Outcome | None = None
        try:
            outcome = self._do(state)
        except Exception as exc:  # a bug must not kill the worker or leave the sync marked running
            log.exception("pass crashed", extra={"sync": state.name})
            outcome = Outcome(state, FAILED, reason=f"internal error: {type(exc).__name__}: {exc}")
            self._finish(state, failed=outcome.reason)
        finally:
            with self._cond:
                state.running = False
                if state.triggered and not self._stopping.is_set():
                    state.triggered = False
                    state.due = self._clock()
        try:
            if outcome is not None:
                self._observe(outcome)
        except Exception:
            log.exception("observer failed", extra={"sync": state.name})
        finally:
            # counted as running until observed: ``stop`` returns only after the last pass's
            # outcome is logged, so nothing is logged after "stopped"
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    def _do(self, state: SyncState) -> Outcome:
        options = state.options
        with self._cond:
            requested, state.requested = state.requested, False
            state.triggered = False
        waiting = schedule.waiting_for(options.schedule.depends_on, self.ready)
        if waiting:
            reason = "waiting for " + ", ".join(f"{name!r}" for name in waiting) + " to be ready"
            with self._cond:
                state.reason = reason
                state.ready = False
                state.due = self._clock() + min(schedule.DEPENDENCY_REQUEUE, options.schedule.interval)
                state.requested = state.requested or requested
            return Outcome(state, WAITING, reason=reason)
        started = time.monotonic()
        try:
            digest = self._check(options)
        except LockgateError as exc:
            self._finish(state, failed=exc.message, seconds=time.monotonic() - started)
            if requested:  # no pass ran: the person's request waits for the next one that does
                with self._cond:
                    state.requested = True
            return Outcome(state, FAILED, reason=exc.message, error=exc)
        with self._cond:
            why = schedule.full_pass_reason(
                current_digest=digest,
                applied=state.applied,
                now=self._clock(),
                drift_interval=options.schedule.drift_interval,
                requested=requested,
                rejected=state.rejected,
                attempted=state.attempted,
                reconfigured=state.reconfigured,
            )
        if why is None:
            rejected = digest in state.rejected and digest != state.applied.digest
            reason = (
                f"digest {digest} was rolled back: push a new one or run `lockgate sync {state.name}`"
                if rejected
                else ""
            )
            self._finish(
                state,
                seconds=time.monotonic() - started,
                keep_ready=not rejected,
                reason=reason,
                checked=True,
            )
            return Outcome(state, SKIPPED, reason=reason or "digest unchanged")
        log.info(
            "pass started",
            extra={"sync": state.name, "digest": digest, "reason": why},
        )
        with self._cond:
            state.attempted = True
        result = self._run(options, requested, self.guard)
        return self._record(state, result, why)

    def _record(self, state: SyncState, result: Result, why: str) -> Outcome:
        error = result.error
        with self._cond:
            state.passes += 1
            state.last = result
            state.last_at = time.time()
            state.last_seconds = result.seconds
            if result.digest:
                state.digest, state.revision = result.digest, result.revision
            # a digest rolled back from is not pulled again until a person asks or it changes
            if result.rolled_back_from:
                state.rejected = (*state.rejected[-4:], result.rolled_back_from)
            if result.waiting and not result.digest and error is None:
                # no digest has the attestations required yet: look again at the interval
                state.reason = result.waiting
                state.failures = 0
                state.due = self._next(state)
                return Outcome(state, SKIPPED, result, reason=result.waiting)
            if result.skipped and result.digest and error is None:
                state.rejected = (*state.rejected[-4:], result.digest)
                state.ready = state.settled = False
                state.reason = state.settled_reason = result.skipped
                state.failures = 0
                state.due = self._next(state)
                return Outcome(state, SKIPPED, result, reason=result.skipped)
            if error is None:
                state.failures = 0
                state.ready = state.settled = True
                state.reason = state.settled_reason = "applied and healthy" if result.health else "applied"
                state.applied = schedule.Applied(result.digest, self._clock())
                state.due = self._next(state)
                outcome = APPLIED if result.changeset.changed else UNCHANGED
                self._release_dependents(state.name)
            elif isinstance(error, Abandoned):
                state.reason = error.message
                state.due = self._clock() + state.options.schedule.interval
                outcome = ABANDONED
            else:
                state.failures += 1
                state.ready = state.settled = False
                # whole: the page summarises it where space is short
                state.reason = state.settled_reason = error.message
                state.due = self._next(state)
                outcome = ROLLED_BACK if result.rolled_back_to else FAILED
        return Outcome(state, outcome, result, reason=why)

    def _release_dependents(self, name: str) -> None:
        """Syncs waiting for ``name`` look again now, not after the dependency requeue."""
        now = self._clock()
        for other in self._states.values():
            if name in other.options.schedule.depends_on and not other.running and not other.ready:
                other.due = min(other.due, now)

    def _finish(
        self,
        state: SyncState,
        *,
        failed: str | None = None,
        seconds: float = 0.0,
        keep_ready: bool = True,
        reason: str = "",
        checked: bool = False,
    ) -> None:
        """After a check or a crash. A check that succeeded at the digest the last full pass
        left restores what that pass said: readiness lost only to failed checks (the registry
        was away) comes back by itself, and the syncs waiting for this one go on."""
        with self._cond:
            state.last_at = time.time()
            state.last_seconds = seconds
            if failed is not None:
                state.failures += 1
                state.ready = False
                state.reason = failed
            else:
                state.failures = 0
                if not keep_ready:
                    state.ready = False
                elif checked:
                    was, state.ready = state.ready, state.settled
                    if state.ready and not was:
                        self._release_dependents(state.name)
                    elif not state.ready and state.settled_reason:
                        state.reason = state.settled_reason
                if reason:
                    state.reason = reason
                elif state.ready:
                    state.reason = "applied; digest unchanged"
            state.due = self._next(state)

    def _next(self, state: SyncState) -> float:
        timing = state.options.schedule
        return self._clock() + schedule.next_delay(
            interval=timing.interval,
            retry_interval=timing.retry_interval,
            failures=state.failures,
            random=self._random,
        )
