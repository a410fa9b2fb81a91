"""What the parent records about a sync when no pass writes it: early failures, waits, holds.

A pass that reaches the cluster records its own outcome (``passes.Pass``). The rest is
recorded here, in the same parent and by the same rules: a pass that failed before the
cluster was touched (a wrong verification key, a missing tag, an artifact that does not
render) records its attempt and a Warning Event, so ``lockgate status`` and
``kubectl describe`` tell it; a sync that waits for attestations says what for; ``serve``
says what holds a sync (suspended, a ``dependsOn`` sync not ready, the source unreachable).

Each record is a read of the parent, a change to the attempt, ``waiting`` or ``held``
fields and nothing else (never the members, so nothing is pruned or half-written), and a
write only when the document changed. A sync that has never applied anything gets its
parent then, with no members, so ``lockgate status`` lists it. The write is made with the
pass's writer: as the tenant's ServiceAccount when the sync names one, and, under
``serve``, only while the sync's Lease is held. Never on a dry run. A record that cannot be
written is a note, never the pass's error.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable

from lockgate.errors import Abandoned, ClusterError, LockgateError, ShuttingDown
from runner.inventory import events, store
from runner.kube.client import Kube
from runner.pipeline.result import Result
from runner.plan import attempt, history
from runner.plan.attempt import Attempt, Held
from runner.plan.inventory import Inventory
from runner.ssa.manager import Manager

Change = Callable[[Inventory], None]


def now() -> str:
    return history.timestamp(dt.datetime.now(dt.UTC))


def write(kube: Kube, name: str, namespace: str, change: Change) -> tuple[Inventory, bool]:
    """Read the parent, apply ``change`` and write it if the document changed; returns the
    inventory and whether it was written. Raises ``LockgateError`` as the reads and writes do."""
    inventory = store.read(kube, name, namespace)
    before = inventory.document()
    change(inventory)
    if inventory.document() == before:
        return inventory, False
    manager = Manager(kube, set_id=inventory.set_id).field_manager
    if not inventory.exists:
        store.ensure_namespace(kube, inventory.namespace, manager=manager)
    store.write(kube, inventory, manager=manager)
    return inventory, True


def recordable(error: LockgateError) -> bool:
    """Whether a failed pass may record itself: not when the cluster cannot take the record,
    nor when the sync's Lease went to another runner (that runner writes now)."""
    if isinstance(error, ClusterError):
        return False
    return not isinstance(error, Abandoned) or isinstance(error, ShuttingDown)


def failed_attempt(error: LockgateError, *, revision: str, digest: str, result: attempt.Result) -> Attempt:
    return Attempt(
        result=attempt.Result.ABANDONED if isinstance(error, ShuttingDown) else result,
        time=now(),
        revision=revision,
        digest=digest,
        reason=events.reason_for(error),
        message=error.message,
        exit_code=int(error.exit_code),
    )


def recording(guard: Callable[[], None] | None) -> Callable[[], None] | None:
    """A pass's ``guard`` for the writes that record how it ended: a shutdown lets them
    through (the pass still holds its sync's Lease), a lost Lease does not."""
    if guard is None:
        return None

    def check() -> None:
        with contextlib.suppress(ShuttingDown):
            guard()

    return check


def early_failure(kube: Kube, result: Result, error: LockgateError, *, handled_request: str = "") -> None:
    """Record a pass that failed before the cluster was touched, and a Warning Event (not for
    a shutdown); what could not be recorded becomes a note of ``result``. ``handled_request``
    is the ``requestedAt`` the pass answered (a shutdown answers none: the next pass does)."""
    failed = failed_attempt(
        error, revision=result.revision, digest=result.digest, result=attempt.Result.FAILED
    )

    def change(inventory: Inventory) -> None:
        inventory.last_attempt = attempt.settle(inventory.last_attempt, failed)
        inventory.held = None
        if handled_request and not isinstance(error, ShuttingDown):
            inventory.handled_request = handled_request

    try:
        inventory, _ = write(kube, result.name, result.namespace, change)
    except LockgateError as exc:
        result.notes.append(f"the failure was not recorded in the cluster: {exc.summary()}")
        return
    if not isinstance(error, ShuttingDown):
        why = events.emit(
            kube, inventory, warning=True, reason=events.reason_for(error), message=error.message
        )
        if why is not None:
            result.notes.append(f"no Event was recorded: {why}")


def waiting(kube: Kube, result: Result, *, handled_request: str = "") -> None:
    """Record what the sync waits for (attestations), and what the parent said before;
    ``handled_request`` is the ``requestedAt`` the pass answered by looking."""

    def change(inventory: Inventory) -> None:
        result.previous_waiting = inventory.waiting
        inventory.waiting = result.waiting
        if handled_request:
            inventory.handled_request = handled_request

    try:
        write(kube, result.name, result.namespace, change)
    except LockgateError as exc:
        result.notes.append(f"what the sync waits for was not recorded: {exc.summary()}")


def held(kube: Kube, name: str, namespace: str, hold: Held | None) -> bool:
    """Record what keeps ``serve`` from running a pass (None: nothing any more); a hold
    beginning on an unreachable source is also a Warning Event. Returns whether it was written;
    raises ``LockgateError``."""

    def change(inventory: Inventory) -> None:
        if hold is None or not hold.same(inventory.held):
            inventory.held = hold

    inventory, written = write(kube, name, namespace, change)
    if written and hold is not None and hold.reason == attempt.ARTIFACT_FAILED:
        events.emit(kube, inventory, warning=True, reason=hold.reason, message=hold.message)
    return written
