"""Run hooks, one wave of one phase at a time: replace, create, wait until done, delete per policy.

A hook (``runner.plan.ordering``) is a member of the set like any object: it is in the
union recorded before the pass writes, so a pass killed while a hook runs leaves nothing
the next one does not know, and it is pruned when it leaves the artifact. It is not sent by
the stages: the previous object is deleted first (``before-creation``, the default, as in
Helm and Argo CD: a Job's template is immutable, and a Job that ran does not run again),
the hook is created, and the wave waits until every hook is done (a Job Complete, a Pod
Succeeded, any other kind Current), failing at the first one that fails with its reason and
the Pods' (``runner.ssa.wait``). Then ``on-success`` / ``on-failure`` delete it. A hook
that never finishes fails the pass when the sync's timeout passes, naming it; it is left
running (the next run replaces it).

A hook deletes only its own previous run: an object labelled as a member of this sync's set,
or recorded as this sync's (its inventory lists it). Anything else under the hook's name (a
person's ConfigMap, another sync's object, an inventory) fails the pass before anything is
written (``check_replaceable``, after the pre-flight), naming the object and its owner as
the apply names an object another sync holds; the delete itself is made only for the object
checked (its uid as a precondition), and checked again then.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from lockgate.diff.changeset import Action, ChangeSet, Entry
from lockgate.errors import ApplyError, LockgateError
from lockgate.manifests import ObjectKey
from runner.kube.discovery import Resource
from runner.kube.errors import KubeError, NotFoundError
from runner.plan import applyset, ordering
from runner.plan.desired import Desired
from runner.plan.health import HealthStatus
from runner.plan.objects import labels_of
from runner.plan.ordering import Deletion, Hook, Phase
from runner.ssa import apply, owners, wait
from runner.ssa.manager import Manager

Due = tuple[Desired, Hook]


@dataclass(frozen=True)
class HookOptions:
    timeout: float = 300.0
    dry_run: bool = False
    #: the objects this sync's inventory records: a hook's previous run among them is its own
    recorded: frozenset[ObjectKey] = frozenset()
    #: the sync's name, for the refusals
    sync: str = ""


class HookFailed(wait.HealthFailed):
    """A hook failed or did not finish in time; ``changeset`` holds the hooks of its wave."""

    def __init__(
        self, failed: wait.HealthFailed, headline: str, keys: Sequence[ObjectKey], changeset: ChangeSet
    ) -> None:
        super().__init__(headline, failed.report, keys)
        self.changeset = changeset


_STUCK = (
    "this hook is still in the cluster from an earlier run, and its delete policy has no "
    "before-creation: add before-creation to lockgate.dev/hook-delete-policy, or delete the object"
)


def _owner(mgr: Manager, live: dict[str, Any]) -> str:
    """Who the object under a hook's name is, as the apply names another sync's object."""
    labels = labels_of(live)
    if applyset.ID_LABEL in labels:
        return f"the ApplySet parent of {owners.parent(live)}"
    other = labels.get(applyset.PART_OF_LABEL)
    if other:
        return f"held by {owners.describe(mgr.kube, other)}"
    return "not lockgate's (no ApplySet label: a person's or another tool's object)"


def _not_ours(
    mgr: Manager, key: ObjectKey, live: dict[str, Any], recorded: Collection[ObjectKey], sync: str
) -> str:
    """Why the hook may not delete ``live`` to run again; "" when it is its own previous run."""
    if applyset.is_member(live, mgr.set_id) or key in recorded:
        return ""
    whose = f"a hook of Sync {sync}" if sync else "a hook"
    return (
        f"{whose} deletes only its own previous run, and the object of this name is {_owner(mgr, live)}; "
        "nothing was deleted or applied: rename the hook, or remove that object if it is yours to remove"
    )


def check_replaceable(
    mgr: Manager,
    items: Sequence[Due],
    live: Collection[ObjectKey],
    *,
    recorded: Collection[ObjectKey] = frozenset(),
    sync: str = "",
) -> None:
    """Before anything is written: a due hook still in the cluster whose delete policy lacks
    ``before-creation`` cannot run again (Helm refuses it too); say how to go on. A due hook
    whose name another object has (not listed among our members in ``live``) may not delete
    it: refused naming it and its owner."""
    stuck = [d for d, hook in items if d.key in live and Deletion.BEFORE_CREATION not in hook.deletion]
    if stuck:
        raise apply.ApplyFailed([apply.about(d, ApplyError(_STUCK)) for d in stuck], ChangeSet())
    others = [d for d, _ in items if d.key not in live]
    resources = apply.resolve_resources(mgr, others, dry_run=True)

    def look(item: Desired) -> None:
        res = resources.get(item.key)
        found = None if res is None else mgr.kube.get(res, item.key.namespace, item.key.name)
        why = "" if found is None else _not_ours(mgr, item.key, found, recorded, sync)
        if why:
            raise apply.about(item, ApplyError(why))

    errors = [
        r for r in mgr.each(look, [d for d in others if d.key in resources]) if isinstance(r, LockgateError)
    ]
    if errors:
        raise apply.ApplyFailed(errors, ChangeSet())


def _gone(mgr: Manager, res: Resource, key: ObjectKey, uid: str, deadline: float) -> None:
    while True:
        mgr.kube.check_guard()  # a shutdown stops the wait at once
        live = mgr.kube.get(res, key.namespace, key.name)
        if live is None or (live.get("metadata") or {}).get("uid") != uid:
            return
        if time.monotonic() > deadline:
            raise ApplyError(f"{key}: the previous run of this hook is still being deleted; try again later")
        time.sleep(0.2)


def _replace(mgr: Manager, res: Resource, item: Due, deadline: float, options: HookOptions) -> bool:
    """Delete the previous run when there is one (only our own: checked again here); True
    when it was there."""
    desired, hook = item
    key = desired.key
    live = mgr.kube.get(res, key.namespace, key.name)
    if live is None:
        return False
    if Deletion.BEFORE_CREATION not in hook.deletion:
        raise ApplyError(_STUCK)  # named by the caller
    why = _not_ours(mgr, key, live, options.recorded, options.sync)
    if why:
        raise ApplyError(why)
    uid = str((live.get("metadata") or {}).get("uid", ""))
    # background: a Job's Pods go with it (a Job deleted by default orphans them); the uid: only
    # the object just checked, never one created under its name meanwhile
    mgr.kube.delete(res, key.namespace, key.name, propagation="Background", uid=uid)
    _gone(mgr, res, key, uid, deadline)
    return True


def _dry_run(mgr: Manager, res: Resource, desired: Desired) -> None:
    try:
        mgr.kube.apply(res, desired.body, manager=mgr.field_manager, dry_run=True)
    except NotFoundError:
        return  # its namespace comes in this pass
    except KubeError as exc:
        if not exc.is_immutable:  # the previous run is deleted first
            raise


def _each(mgr: Manager, func: Callable[[Due], Entry], items: Sequence[Due], changeset: ChangeSet) -> None:
    def named(item: Due) -> Entry:
        try:
            return func(item)
        except LockgateError as exc:
            raise apply.about(item[0], exc) from None

    apply.record_wave(mgr.each(named, items), changeset)


def _delete(mgr: Manager, resources: dict[ObjectKey, Resource], keys: Sequence[ObjectKey]) -> None:
    for outcome in mgr.each(
        lambda key: mgr.kube.delete(resources[key], key.namespace, key.name, propagation="Background"), keys
    ):
        if isinstance(outcome, LockgateError):
            raise outcome


def _reason(label: str, replaced: bool, outcome: str, deleted: str = "") -> str:
    again = "replaced the previous run, " if replaced else ""
    return f"{label}: {again}{outcome}" + (f"; deleted (hook-delete-policy {deleted})" if deleted else "")


def run(
    mgr: Manager,
    items: Sequence[Due],
    *,
    phase: Phase,
    options: HookOptions,
    interrupt: Callable[[], None] | None = None,
) -> ChangeSet:
    """Run one wave of hooks of ``phase``; raises ``HookFailed`` (a ``HealthError``) when one
    fails or does not finish, ``ApplyFailed`` when one is refused."""
    changeset = ChangeSet()
    if not items:
        return changeset
    resources = apply.resolve_resources(mgr, [d for d, _ in items], dry_run=options.dry_run)
    label = f"{phase.value} hook"
    if options.dry_run:

        def check(item: Due) -> Entry:
            if item[0].key in resources:
                _dry_run(mgr, resources[item[0].key], item[0])
            return Entry(item[0].key, Action.CREATED, f"{label}: would run")

        _each(mgr, check, items, changeset)
        return changeset
    deadline = time.monotonic() + options.timeout
    replaced: dict[ObjectKey, bool] = {}

    def start(item: Due) -> Entry:
        res = resources[item[0].key]
        replaced[item[0].key] = _replace(mgr, res, item, deadline, options)
        mgr.kube.apply(res, item[0].body, manager=mgr.field_manager)
        return Entry(item[0].key, Action.CREATED, _reason(label, replaced[item[0].key], "started"))

    _each(mgr, start, items, changeset)
    targets = [(d.key, resources[d.key]) for d, _ in items]
    settings = wait.WaitOptions(timeout=max(1.0, deadline - time.monotonic()))
    policy = {d.key: hook.deletion for d, hook in items}
    try:
        wait.wait(mgr, targets, settings, interrupt=interrupt, judge=ordering.hook_health)
    except wait.HealthFailed as exc:
        status = {key: exc.report[key].status for key, _ in targets}
        failed = [k for k, s in status.items() if s is HealthStatus.FAILED]
        unfinished = [k for k, s in status.items() if s not in (HealthStatus.CURRENT, HealthStatus.FAILED)]
        shown = failed or unfinished
        what = f"{label} {shown[0]}" if len(shown) == 1 else f"{len(shown)} {label}s"
        headline = f"{what} failed" if failed else f"{what} did not finish in {options.timeout:g}s"
        doomed = [k for k in failed if Deletion.ON_FAILURE in policy[k]]
        _delete(mgr, resources, doomed)
        ended = ChangeSet()
        for key, _ in targets:
            outcome = "failed" if key in failed else "did not finish" if key in unfinished else "ran"
            deleted = "on-failure" if key in doomed else ""
            ended.add(Entry(key, Action.CREATED, _reason(label, replaced[key], outcome, deleted)))
        raise HookFailed(exc, headline, shown, ended) from None
    done = [k for k, _ in targets if Deletion.ON_SUCCESS in policy[k]]
    _delete(mgr, resources, done)
    ended = ChangeSet()
    for key, _ in targets:
        deleted = "on-success" if key in done else ""
        ended.add(Entry(key, Action.CREATED, _reason(label, replaced[key], "ran to completion", deleted)))
    return ended
