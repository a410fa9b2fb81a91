"""What the next pass of a sync will do, from the objects of two revisions: the one the cluster
runs and the one a pull request would publish, both rendered as the sync renders them.

Pure, and made of the pass's own decisions: the waves and hooks are ``sequence.plan``'s (a new
digest runs every hook of its event again), the members and the released objects are read as
``pipeline.ordered.Steps`` reads them, deletions are ``prune_plan.plan``'s with its mass-prune
guard (the objects of the running revision stand for the live ones, labelled as the pass
labels them), and a changed object is ``configured`` by ``lockgate.diff``'s drift rule with the
field changes and Secret masks a pass reports, ``spec.ignore``'s paths left out as a pass leaves
them. Where a pass asks the API server, this asks a table: immutable fields
(``immutable``) make an object recreated when forced, else the pass stops before its first
write; so does a prune above the guard (``refused``). What the server adds (defaults, other
managers' fields) is not on either side: docs/preview.md says what that leaves out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lockgate.diff import fields
from lockgate.diff.changeset import Action, ChangeSet, Entry
from lockgate.manifests import ObjectKey
from runner.plan import ignore, kinds, prune_plan, sequence
from runner.plan.desired import Desired
from runner.plan.ordering import Event, Phase
from runner.plan.policy import SSAMode
from runner.plan.preview import immutable
from runner.plan.preview.model import Hazard, HazardKind, HookRun

#: the digest a pull request's revision will have is not known before it is published; any
#: digest other than the running one makes every hook of the event due, as a new one does
UNPUBLISHED = "sha256:" + "0" * 64
_PHASE_ORDER = (Phase.PRE_APPLY, Phase.APPLY, Phase.POST_APPLY, Phase.ON_FAILURE)
#: how many objects a hazard names before "and N more"
NAMED = 5


@dataclass(frozen=True)
class Settings:
    """The parts of a sync's options that decide what its pass does to the objects."""

    prune: bool
    prune_options: prune_plan.PruneOptions
    #: ``spec.force``: recreate objects whose immutable fields changed
    force: bool
    set_id: str
    #: nothing runs yet: the pass installs (Helm's ``install`` hooks) rather than upgrades
    installing: bool


@dataclass(frozen=True)
class Planned:
    changeset: ChangeSet
    hooks: tuple[HookRun, ...] = ()
    waves: tuple[tuple[int, int], ...] = ()
    hazards: tuple[Hazard, ...] = ()
    notes: tuple[str, ...] = ()
    refused: str = ""


@dataclass
class _Found:
    changeset: ChangeSet = field(default_factory=ChangeSet)
    hazards: list[Hazard] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def _members(desired: Sequence[Desired], event: Event) -> tuple[dict[ObjectKey, Desired], sequence.Sequence]:
    """The objects a pass of ``desired`` applies (hooks included, as ``Steps.plan`` counts them)."""
    items, order = sequence.plan(list(desired), event=event, digest=UNPUBLISHED, recorded={})
    members = {d.key: d for d in items if d.policy.applies and d.key not in order.never}
    return members, order


def _named(keys: Iterable[object]) -> str:
    shown = [str(k) for k in keys]
    more = f" and {len(shown) - NAMED} more" if len(shown) > NAMED else ""
    return ", ".join(shown[:NAMED]) + more


def _compare(old: Desired, new: Desired, settings: Settings, found: _Found) -> Entry:
    """``configured`` or ``unchanged`` as the pass classifies it, recreated when forced."""
    before, after = old.body, new.body
    if new.ignored:
        before, after = ignore.without(before, new.ignored), ignore.without(after, new.ignored)
    if not fields.is_drifted(before, after):
        return Entry(new.key, Action.UNCHANGED)
    changes = fields.field_changes(before, after, secret=new.secret.union(old.secret))
    refused = immutable.refused_changes(new.key.group, new.key.kind, old.body, changes)
    if refused is None:
        return Entry(new.key, Action.CONFIGURED, changes=changes)
    paths = ", ".join(refused.paths)
    forced = settings.force or new.policy.force
    if forced and refused.recreatable:
        found.hazards.append(
            Hazard(
                HazardKind.RECREATE,
                f"{new.key} is deleted and created again: {paths} cannot change in place",
                str(new.key),
            )
        )
        return Entry(new.key, Action.CONFIGURED, "would be recreated (immutable field changed)", changes)
    if forced:
        why = (
            f"{new.key}: the API server refuses to change {paths}, in words a pass does not take for "
            "immutability, so it does not recreate it even forced: the pass stops before its first "
            "write; delete the object by hand, or give it a new name"
        )
    else:
        why = (
            f"{new.key}: {paths} cannot change in place, and the object is not forced (spec.force, or "
            "the annotation lockgate.dev/force: enabled): the pass stops before its first write"
        )
    found.hazards.append(Hazard(HazardKind.IMMUTABLE, why, str(new.key)))
    found.refused.append(why)
    return Entry(new.key, Action.CONFIGURED, "refused: immutable field changed", changes)


def _objects(
    old: dict[ObjectKey, Desired],
    new: list[Desired],
    order: sequence.Sequence,
    settings: Settings,
    found: _Found,
) -> None:
    by_key = {d.key: d for d in new}
    for key in sorted(by_key, key=kinds.sort_key):
        item = by_key[key]
        if key in order.hooks:
            continue  # hooks are told apart: ``_hooks``
        if key in order.never:
            found.changeset.add(Entry(key, Action.SKIPPED, f"never applied ({order.never[key]})"))
        elif not item.policy.applies:
            why = "ssa: Ignore" if item.policy.ssa is SSAMode.IGNORE else "reconcile: disabled"
            found.changeset.add(Entry(key, Action.SKIPPED, why))
        elif key not in old:
            found.changeset.add(Entry(key, Action.CREATED))
        elif item.policy.ssa is SSAMode.IF_NOT_PRESENT:
            found.changeset.add(Entry(key, Action.SKIPPED, "exists; ssa: IfNotPresent"))
        else:
            found.changeset.add(_compare(old[key], item, settings, found))


def _prune(
    previous: dict[ObjectKey, Desired],
    members: dict[ObjectKey, Desired],
    released: list[ObjectKey],
    settings: Settings,
    found: _Found,
) -> None:
    gone = [key for key in previous if key not in members and key not in released]
    if not settings.prune:
        if gone:
            found.notes.append(
                f"{len(gone)} objects leave the artifact and stay in the cluster (prune is off): "
                + _named(gone)
            )
        return
    wanted = [*members, *released]
    try:  # the guard a pass checks before its first write, on the keys alone
        prune_plan.check_share(previous, wanted, settings.prune_options)
    except prune_plan.MassPruneError as exc:
        why = f"prunes {exc.doomed} of {exc.total} objects, above the mass-prune guard: {exc.message}"
        found.hazards.append(Hazard(HazardKind.MASS_PRUNE, why))
        found.refused.append(why)
    live = {key: previous[key].body for key in [*gone, *released] if key in previous}
    unguarded = prune_plan.PruneOptions(allow_mass_prune=True)
    decided = prune_plan.plan(
        previous, wanted, live, set_id=settings.set_id, options=unguarded, released=released
    )
    for key, reason in decided.kept:
        found.changeset.add(Entry(key, Action.SKIPPED, f"not pruned: {reason}"))
    for key in decided.delete:
        found.changeset.add(Entry(key, Action.DELETED))
    crds = [k for k in decided.delete if k.kind == "CustomResourceDefinition"]
    if crds:
        found.hazards.append(
            Hazard(
                HazardKind.CRD_DELETION,
                f"deletes {_named(crds)}: every custom resource of these kinds in the cluster goes with them",
            )
        )
    namespaces = [k for k in decided.delete if k.kind == "Namespace" and not k.group]
    if namespaces:
        found.hazards.append(
            Hazard(
                HazardKind.NAMESPACE_DELETION,
                f"deletes {_named(namespaces)}: everything in these namespaces goes with them",
            )
        )


def _hooks(order: sequence.Sequence, found: _Found) -> tuple[HookRun, ...]:
    runs = tuple(
        HookRun(
            object=str(key),
            phases=tuple(p.value for p in _PHASE_ORDER if p in phases),
            wave=order.wave_of.get(key, 0),
        )
        for key, phases in sorted(
            order.due.items(), key=lambda item: (order.wave_of.get(item[0], 0), str(item[0]))
        )
    )
    if runs:
        listed = _named(f"{run.object} ({', '.join(run.phases)})" for run in runs)
        found.hazards.append(Hazard(HazardKind.HOOKS, f"{len(runs)} hooks run: {listed}"))
    return runs


def _waves(order: sequence.Sequence, found: _Found) -> tuple[tuple[int, int], ...]:
    waves = tuple((wave, len(keys)) for wave, keys in order.waves)
    if len(waves) < 2:
        return ()
    listed = ", ".join(f"wave {wave}: {count} objects" for wave, count in waves)
    found.hazards.append(
        Hazard(HazardKind.WAVES, f"applied in {len(waves)} waves, each healthy before the next ({listed})")
    )
    return waves


def plan(old: Sequence[Desired], new: Sequence[Desired], settings: Settings) -> Planned:
    """The next pass's changes from ``old`` (the running revision's objects) to ``new``."""
    event = Event.INSTALL if settings.installing else Event.UPGRADE
    previous, _ = _members(old, event) if old else ({}, None)
    members, order = _members(new, event)
    items = [members.get(d.key, d) for d in new]
    released = [d.key for d in items if d.key not in members and d.key in previous]
    found = _Found()
    _objects(previous, items, order, settings, found)
    _prune(previous, members, released, settings, found)
    hooks = _hooks(order, found)
    waves = _waves(order, found)
    return Planned(
        changeset=found.changeset,
        hooks=hooks,
        waves=waves,
        hazards=tuple(found.hazards),
        notes=tuple(found.notes),
        refused="; ".join(found.refused),
    )
