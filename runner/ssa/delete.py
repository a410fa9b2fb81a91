"""Delete a whole set: read each member, plan (``plan.deletion``), orphan, delete in reverse order, wait.

The I/O half of ``runner.plan.deletion``, beside ``prune`` (which deletes the members that
left a set). Every member is read first, concurrently, so the plan sees its labels and
annotations as they are now. Members to keep that still carry our ``part-of`` label lose it
(``prune.orphan_patch``: a JSON patch that first tests the label still names this set);
deletions go in reverse apply order with background propagation, one kind at a time, the
objects of a kind concurrently; with ``WaitForTermination`` the deleted members are
polled until they are gone (their finalizers done) or the timeout passes. Nothing else is
written here: the caller deletes the parent once this returns, so a deletion killed midway
leaves the inventory naming every member, and the next attempt resumes from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.diff.changeset import Action, ChangeSet, Entry
from lockgate.errors import ApplyError, LockgateError
from lockgate.manifests import ObjectKey
from runner.kube.discovery import Resource
from runner.kube.errors import KubeError, NotFoundError
from runner.plan import applyset, deletion, kinds
from runner.plan.inventory import Member
from runner.ssa import owners, prune
from runner.ssa.apply import failure, record_wave
from runner.ssa.manager import Manager

#: how often ``WaitForTermination`` looks again (Flux polls every 2 s)
POLL_SECONDS = 1.0


@dataclass
class Deleted:
    changeset: ChangeSet = field(default_factory=ChangeSet)
    plan: deletion.DeletionPlan = field(default_factory=deletion.DeletionPlan)
    #: deleted, but still there when the wait for their termination ended
    terminating: list[ObjectKey] = field(default_factory=list)
    #: the guard's refusal, on a dry run (a real deletion raises it before changing anything)
    refused: deletion.DeletionRefused | None = None


def _resource(mgr: Manager, member: Member) -> Resource | None:
    """None when the server no longer serves the kind (its CRD went first): the member is gone."""
    if not mgr.kube.knows(member.api_version, member.key.kind):
        return None
    return mgr.resource(member.api_version, member.key.kind)


def _read(
    mgr: Manager, resources: Mapping[ObjectKey, Resource | None]
) -> dict[ObjectKey, dict[str, Any] | None]:
    keys = list(resources)

    def read(key: ObjectKey) -> dict[str, Any] | None:
        res = resources[key]
        return None if res is None else mgr.kube.get(res, key.namespace, key.name)

    live: dict[ObjectKey, dict[str, Any] | None] = {}
    for key, result in zip(keys, mgr.each(read, keys), strict=True):
        if isinstance(result, ApplyError):
            raise ApplyError(f"cannot read {key} to decide whether to delete it: {result.message}")
        if isinstance(result, LockgateError):
            raise result  # the cluster is away, or the credentials were refused: nothing about this object
        live[key] = result
    return live


def _orphan(mgr: Manager, res: Resource | None, key: ObjectKey) -> None:
    if res is None:
        return
    try:
        mgr.kube.json_patch(res, key.namespace, key.name, prune.orphan_patch(mgr.set_id))
    except NotFoundError:
        return
    except KubeError as exc:
        if exc.status == 422:  # the label changed since we read it: not ours any more
            return
        raise ApplyError(
            f"{key}: cannot remove the label {applyset.PART_OF_LABEL} from this object that is "
            f"kept ({exc.message}); remove it by hand, or run the deletion again"
        ) from None


def _kept(mgr: Manager, decided: deletion.DeletionPlan) -> list[Entry]:
    """The kept members as skipped entries; one held by another set names who holds it."""
    holders = {set_id: owners.describe(mgr.kube, set_id) for set_id in set(decided.foreign.values())}
    entries = []
    for key, reason in decided.kept:
        set_id = decided.foreign.get(key)
        why = f"kept: {holders[set_id]} holds it" if set_id else f"kept: {reason}"
        entries.append(Entry(key, Action.SKIPPED, why))
    return entries


def _wait_gone(
    mgr: Manager,
    keys: list[ObjectKey],
    resources: Mapping[ObjectKey, Resource | None],
    *,
    timeout: float,
    interrupt: Callable[[], None],
) -> list[ObjectKey]:
    """Poll until ``keys`` are gone or ``timeout`` passes; returns those still there."""
    deadline = time.monotonic() + timeout

    def present(key: ObjectKey) -> bool:
        res = resources[key]
        return res is not None and mgr.kube.get(res, key.namespace, key.name) is not None

    left = keys
    while left:
        # a read that fails counts as still there: the wait cannot tell
        left = [k for k, found in zip(left, mgr.each(present, left), strict=True) if found is not False]
        if not left or time.monotonic() >= deadline:
            break
        interrupt()  # a shutdown stops the wait here: the next attempt waits again
        time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))
    return left


def delete_set(
    mgr: Manager,
    members: Mapping[ObjectKey, Member],
    *,
    sync: str,
    recorded: deletion.Recorded,
    deleting: bool,
    why_not: str = "",
    allow_mass_prune: bool = False,
    dry_run: bool = False,
) -> Deleted:
    """Delete or orphan every member as the plan says; raises ``DeletionRefused`` (nothing
    changed) when the guard refuses, except on a dry run, which reports it in ``refused``."""
    resources = {key: _resource(mgr, member) for key, member in members.items()}
    live = _read(mgr, resources)
    decided = deletion.plan(
        members, live, set_id=mgr.set_id, deleting=deleting, why_not=why_not, prune_crds=recorded.prune_crds
    )
    done = Deleted(plan=decided)
    try:
        deletion.check(sync, decided, len(members), recorded, allow_mass_prune=allow_mass_prune)
    except deletion.DeletionRefused as refused:
        if not dry_run:
            raise
        done.refused = refused
    if not dry_run:
        orphaned = mgr.each(lambda key: _orphan(mgr, resources[key], key), decided.orphan)
        errors = [r for r in orphaned if isinstance(r, LockgateError)]
        if errors:
            raise failure(errors, done.changeset)
    for entry in _kept(mgr, decided):
        done.changeset.add(entry)

    def remove(key: ObjectKey) -> Entry:
        res = resources[key]
        if res is not None and not dry_run:
            mgr.kube.delete(res, key.namespace, key.name, propagation="Background")
        return Entry(key, Action.DELETED)

    for wave in kinds.waves(decided.delete):
        record_wave(mgr.each(remove, wave), done.changeset)
    if recorded.waits and not dry_run:
        done.terminating = _wait_gone(
            mgr, decided.delete, resources, timeout=recorded.timeout, interrupt=mgr.kube.check_guard
        )
    return done
