"""A pass's order: ordinary objects wave by wave, hooks by phase and wave, and which hooks are due.

Pure. ``plan`` reads each prepared object's ``ordering.Ordering`` and returns the objects to
send (a hook's recorded hash becomes its *run marker*, below) with a ``Sequence``: the waves
of ordinary objects in ascending order (the kind stages run inside each), the hooks of each
phase by wave, the objects never applied, and the Namespaces to apply before the pre-apply
hooks (those the hooks run in, as ``helm install --create-namespace`` does).

A hook runs once per revision, not on every pass: its marker is a hash of its content and
the artifact's digest, recorded in the inventory when the hook has run to success, so a
drift pass of the same digest finds it and runs nothing. A new digest, a changed hook (a
substituted value) or a person's request (``lockgate sync``) runs it again. A rollback runs
only Helm's rollback hooks. An object that needs something a later wave brings (its
Namespace, the CRD of its kind) is refused before anything is written.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from lockgate.errors import RenderError
from lockgate.manifests import ObjectKey
from runner.plan import ordering
from runner.plan.desired import Desired
from runner.plan.ordering import Event, Hook, Phase

#: the order of a hook's phases in a successful pass
_PASS_ORDER = (Phase.PRE_APPLY, Phase.APPLY, Phase.POST_APPLY)

Waves = tuple[tuple[int, tuple[ObjectKey, ...]], ...]


def marker(content_hash: str, digest: str) -> str:
    """What the inventory records for a hook that ran: its content with the revision's digest."""
    return hashlib.sha256(f"{digest}\n{content_hash}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Sequence:
    #: ordinary objects to apply, by ascending wave (a wave of apply-phase hooks alone is empty)
    waves: Waves
    hooks: Mapping[ObjectKey, Hook]
    wave_of: Mapping[ObjectKey, int]
    #: the phases each hook runs in during this pass (absent: it does not run)
    due: Mapping[ObjectKey, frozenset[Phase]]
    #: objects never applied, and why
    never: Mapping[ObjectKey, str]
    #: Namespaces applied before the pre-apply hooks run in them
    first: tuple[ObjectKey, ...] = ()

    def hook_waves(self, phase: Phase) -> Waves:
        """The hooks due in ``phase``, by ascending wave."""
        keys = [key for key, phases in self.due.items() if phase in phases]
        return _by_wave(keys, self.wave_of)

    def hooks_at(self, phase: Phase, wave: int) -> tuple[ObjectKey, ...]:
        return next((keys for at, keys in self.hook_waves(phase) if at == wave), ())

    def writes_after(self, index: int, pending: Collection[ObjectKey]) -> bool:
        """Whether anything after the ``index``-th wave may be written: an ordinary object in
        ``pending`` (not known unchanged) or a due apply-phase hook."""
        later = self.waves[index + 1 :]
        return any(key in pending for _, keys in later for key in keys) or any(
            self.hooks_at(Phase.APPLY, wave) for wave, _ in later
        )

    def settles(self, key: ObjectKey, phase: Phase) -> bool:
        """Whether a success of ``key`` in ``phase`` is its last run of the pass (so its marker
        is recorded then): an on-failure run, or no later due phase of a successful pass."""
        if phase is Phase.ON_FAILURE:
            return True
        later = _PASS_ORDER[_PASS_ORDER.index(phase) + 1 :]
        return not any(p in self.due.get(key, ()) for p in later)

    @property
    def post_apply_due(self) -> bool:
        return any(Phase.POST_APPLY in phases for phases in self.due.values())


def _by_wave(keys: Collection[ObjectKey], wave_of: Mapping[ObjectKey, int]) -> Waves:
    grouped: dict[int, list[ObjectKey]] = {}
    for key in keys:
        grouped.setdefault(wave_of.get(key, 0), []).append(key)
    return tuple((wave, tuple(grouped[wave])) for wave in sorted(grouped))


def _crd_kinds(body: dict[str, Any]) -> tuple[str, str]:
    spec = body.get("spec") or {}
    return str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", ""))


def _check_needs(
    items: list[Desired], wave_of: Mapping[ObjectKey, int], applied_with_waves: set[ObjectKey]
) -> None:
    """Refuse an object (or apply-phase hook) in a wave before the Namespace or CRD it needs."""
    namespaces = {
        d.key.name: d.key
        for d in items
        if d.key.kind == "Namespace" and not d.key.group and d.key in applied_with_waves
    }
    crds = {
        _crd_kinds(d.body): d.key
        for d in items
        if d.key.kind == "CustomResourceDefinition" and d.key in applied_with_waves
    }
    for item in items:
        if item.key not in applied_with_waves:
            continue
        wave = wave_of.get(item.key, 0)
        for needed in (namespaces.get(item.key.namespace), crds.get((item.key.group, item.key.kind))):
            if needed is not None and wave_of.get(needed, 0) > wave:
                raise RenderError(
                    f"{item.key} ({item.origin}) is in wave {wave}, before wave {wave_of[needed]} of "
                    f"{needed}, which it needs: give it a wave of {wave_of[needed]} or more"
                )


def plan(
    desired: list[Desired],
    *,
    event: Event,
    digest: str,
    recorded: Mapping[ObjectKey, str],
    requested: bool = False,
) -> tuple[list[Desired], Sequence]:
    """The objects as sent (hooks carry their run marker as their hash) and the pass's order.

    ``recorded``: the hashes in the inventory; ``requested``: a person asked for this pass, so
    every hook of ``event`` runs again."""
    items: list[Desired] = []
    wave_of: dict[ObjectKey, int] = {}
    hooks: dict[ObjectKey, Hook] = {}
    due: dict[ObjectKey, frozenset[Phase]] = {}
    never: dict[ObjectKey, str] = {}
    for item in desired:
        found = ordering.ordering_of(item.body, where=f"{item.key} ({item.origin})")
        if found.wave:
            wave_of[item.key] = found.wave
        if found.never:
            never[item.key] = found.never
        elif found.hook is not None and item.policy.applies:
            hooks[item.key] = found.hook
            item = dataclasses.replace(item, hash=marker(item.hash, digest))
            phases = found.hook.phases(event)
            if phases and (event is Event.ROLLBACK or requested or recorded.get(item.key) != item.hash):
                due[item.key] = phases
        items.append(item)
    ordinary = [d.key for d in items if d.key not in hooks and d.key not in never]
    in_waves = {*ordinary, *(key for key, phases in due.items() if Phase.APPLY in phases)}
    _check_needs(items, wave_of, in_waves)
    pre_namespaces = {key.namespace for key, phases in due.items() if Phase.PRE_APPLY in phases}
    first = tuple(
        key for key in ordinary if key.kind == "Namespace" and not key.group and key.name in pre_namespaces
    )
    grouped = dict(_by_wave([key for key in ordinary if key not in first], wave_of))
    for wave, _ in _by_wave([key for key, phases in due.items() if Phase.APPLY in phases], wave_of):
        grouped.setdefault(wave, ())
    waves = tuple(sorted(grouped.items()))
    return items, Sequence(
        waves=waves, hooks=hooks, wave_of=wave_of, due=due, never=never, first=first
    )
