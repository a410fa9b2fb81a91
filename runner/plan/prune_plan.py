"""Which previous members to delete: a pure plan, refused when it would delete too much.

Candidates are the previous members that are not in the new set. A candidate is kept
(never deleted) when it is gone already, when it is not labelled as a member of this set
(someone else owns it now), or when its policy says ``prune: disabled`` or ``ssa: Ignore``, or
Helm's ``helm.sh/resource-policy: keep`` (lifted for CRDs by ``prune_crds``).
A kept candidate that still carries our ``part-of`` label is to be orphaned: the label is
removed, as the ApplySet spec intends, or ``kubectl apply --prune --applyset`` on the same
set would delete what the annotation protects.
A plan that would delete every previous member, or more than ``max_share`` of them, is
refused unless the caller allows a mass prune: Flux has no such guard.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.errors import ApplyError
from lockgate.manifests import ObjectKey
from runner.plan import applyset, kinds, policy

DEFAULT_MAX_SHARE = 0.5


class MassPruneError(ApplyError):
    """The plan deletes more than allowed; nothing was deleted."""

    def __init__(self, doomed: int, total: int, max_share: float) -> None:
        what = "every object" if doomed == total else f"{doomed} of {total} objects"
        super().__init__(
            f"refusing to prune {what} of the previous revision (more than {max_share:.0%} is "
            "treated as a mistake, e.g. an empty or wrong artifact); nothing was deleted. "
            "Check the artifact, or pass --allow-mass-prune if this is intended"
        )
        self.doomed = doomed
        self.total = total


@dataclass(frozen=True)
class PruneOptions:
    max_share: float = DEFAULT_MAX_SHARE
    allow_mass_prune: bool = False
    #: the Sync's ``pruneCRDs``: CRDs Helm would keep (``helm.sh/resource-policy: keep``) are pruned
    prune_crds: bool = False


@dataclass(frozen=True)
class PrunePlan:
    delete: list[ObjectKey] = field(default_factory=list)
    #: kept candidates and why (they leave the inventory: the set no longer claims them)
    kept: list[tuple[ObjectKey, str]] = field(default_factory=list)
    gone: list[ObjectKey] = field(default_factory=list)
    #: kept candidates still labelled as our members: the label is to be removed
    orphan: list[ObjectKey] = field(default_factory=list)


def candidates(previous: Iterable[ObjectKey], desired: Iterable[ObjectKey]) -> list[ObjectKey]:
    wanted = set(desired)
    return [key for key in previous if key not in wanted]


def _guard(doomed: int, total: int, options: PruneOptions) -> None:
    if doomed and not options.allow_mass_prune and (doomed == total or doomed > options.max_share * total):
        raise MassPruneError(doomed, total, options.max_share)


def check_share(
    previous: Collection[ObjectKey], desired: Collection[ObjectKey], options: PruneOptions
) -> None:
    """The guard on keys alone, before anything is applied: a refused artifact changes nothing."""
    _guard(len(candidates(previous, desired)), len(set(previous)), options)


def plan(
    previous: Iterable[ObjectKey],
    desired: Iterable[ObjectKey],
    live: Mapping[ObjectKey, dict[str, Any] | None],
    *,
    set_id: str,
    options: PruneOptions | None = None,
    released: Iterable[ObjectKey] = (),
) -> PrunePlan:
    """Decide deletions. ``live`` maps each candidate to its live object, or None when gone.

    ``released``: previous members still in the artifact but no longer applied (``ssa:
    Ignore``, ``reconcile: disabled``): never candidates, orphaned while labelled ours.
    """
    options = options or PruneOptions()
    previous = list(dict.fromkeys(previous))
    result = PrunePlan()
    for key in released:
        body = live.get(key)
        if body is not None and applyset.is_member(body, set_id):
            result.orphan.append(key)
    for key in candidates(previous, desired):
        body = live.get(key)
        if body is None:
            result.gone.append(key)
        elif not applyset.is_member(body, set_id):
            result.kept.append((key, "not labelled as a member of this set"))
        elif not policy.deletable(body, prune_crds=options.prune_crds):
            result.kept.append((key, f"{policy.kept_because(body)}; orphaned (set label removed)"))
            result.orphan.append(key)
        else:
            result.delete.append(key)
    _guard(len(result.delete), len(previous), options)
    return PrunePlan(
        delete=kinds.deletion_order(result.delete), kept=result.kept, gone=result.gone, orphan=result.orphan
    )
