"""Delete previous members that left the set: plan (``prune_plan``), then delete in reverse order.

Each candidate is read first (it must still be labelled as ours and not protected by an
annotation); deletions go in reverse apply order with background propagation, one kind
at a time, objects of one kind concurrently. A protected candidate is orphaned: our
``part-of`` label is removed (a JSON patch that first tests the label is still ours), so
no ApplySet tool prunes it later. Never called after a failed resolve, verify, render or
apply.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from lockgate.diff.changeset import Action, ChangeSet, Entry
from lockgate.errors import ApplyError, LockgateError
from lockgate.manifests import ObjectKey
from runner.kube.discovery import Resource
from runner.kube.errors import KubeError, NotFoundError
from runner.plan import applyset, kinds, prune_plan
from runner.plan.inventory import Member
from runner.ssa.apply import failure, record_wave
from runner.ssa.manager import Manager


def _resource(mgr: Manager, member: Member) -> Resource | None:
    if not mgr.kube.knows(member.api_version, member.key.kind):
        return None
    return mgr.resource(member.api_version, member.key.kind)


def orphan_patch(set_id: str) -> list[dict[str, Any]]:
    """Remove our ``part-of`` label, only if it still names our set (else the patch fails)."""
    path = "/metadata/labels/" + applyset.PART_OF_LABEL.replace("~", "~0").replace("/", "~1")
    return [{"op": "test", "path": path, "value": set_id}, {"op": "remove", "path": path}]


def _orphan(mgr: Manager, res: Resource | None, key: ObjectKey) -> None:
    if res is None:
        return
    try:
        mgr.kube.json_patch(res, key.namespace, key.name, orphan_patch(mgr.set_id))
    except NotFoundError:
        return
    except KubeError as exc:
        if exc.status == 422:  # the test failed: the label changed since we read it; not ours now
            return
        raise ApplyError(
            f"{key}: cannot remove the label {applyset.PART_OF_LABEL} from this protected object "
            f"({exc.message}); remove it by hand, or kubectl's prune of the set may delete it"
        ) from None


def prune(
    mgr: Manager,
    previous: Mapping[ObjectKey, Member],
    desired: Collection[ObjectKey],
    *,
    options: prune_plan.PruneOptions,
    dry_run: bool = False,
    released: Collection[ObjectKey] = (),
) -> tuple[ChangeSet, prune_plan.PrunePlan]:
    """Delete what the plan says; returns the change set and the plan (``gone``/``kept`` included).

    ``released`` are desired objects that are not applied (``ssa: Ignore``...): never
    deleted; those that were our members are orphaned.
    """
    released = [key for key in released if key in previous]
    desired = [*desired, *released]
    candidates = prune_plan.candidates(previous, desired) + released
    resources: dict[ObjectKey, Resource | None] = {key: _resource(mgr, previous[key]) for key in candidates}

    def read(key: ObjectKey) -> dict[str, Any] | None:
        res = resources[key]
        return None if res is None else mgr.kube.get(res, key.namespace, key.name)

    results = mgr.each(read, candidates)
    live: dict[ObjectKey, dict[str, Any] | None] = {}
    for key, result in zip(candidates, results, strict=True):
        if isinstance(result, ApplyError):
            raise ApplyError(f"cannot read {key} to decide whether to prune it: {result.message}")
        if isinstance(result, LockgateError):
            raise result  # an unreachable cluster or refused credentials: not about this object
        live[key] = result
    plan = prune_plan.plan(previous, desired, live, set_id=mgr.set_id, options=options, released=released)
    changeset = ChangeSet()
    if not dry_run:
        orphaned = mgr.each(lambda key: _orphan(mgr, resources[key], key), plan.orphan)
        errors = [r for r in orphaned if isinstance(r, LockgateError)]
        if errors:
            raise failure(errors, changeset)
    for key, reason in plan.kept:
        changeset.add(Entry(key, Action.SKIPPED, f"not pruned: {reason}"))

    def delete(key: ObjectKey) -> Entry:
        res = resources[key]
        if res is not None and not dry_run:
            mgr.kube.delete(res, key.namespace, key.name, propagation="Background")
        return Entry(key, Action.DELETED)

    for wave in kinds.waves(plan.delete):
        record_wave(mgr.each(delete, wave), changeset)
    return changeset, plan
