"""Deleting a sync: what its ``deletionPolicy`` does to each member, and when it is refused. Pure.

A sync is deleted when it leaves the configuration ``serve`` runs, or by ``lockgate delete
NAME``. Its policy is Flux's Kustomization ``deletionPolicy``: ``MirrorPrune`` (the default)
deletes the members when the sync prunes and orphans them otherwise; ``Delete`` deletes
them; ``WaitForTermination`` deletes them and waits, up to the sync's timeout, until they
are gone; ``Orphan`` leaves them. The sync is no longer in the configuration when it is
deleted, so each pass records what its deletion needs on the inventory (``Recorded``).

As Flux, only members still labelled as this set's are deleted, and those annotated
``prune: disabled``, ``reconcile: disabled`` or ``ssa: Ignore`` are kept, as are those Helm
keeps (``helm.sh/resource-policy: keep``; CRDs go when the sync recorded ``pruneCRDs``). A suspended sync's
members are orphaned (Flux deletes nothing of a suspended Kustomization). A member another
sync's ApplySet holds is kept and named (one owner per object). A kept member still
labelled as ours is orphaned: the ``part-of`` label is removed, since the parent it names
is about to go (the same patch ``prune`` uses).

Deleting a sync deletes every member, which the mass-prune guard refuses: only an explicit
``Delete`` or ``WaitForTermination``, the sync's ``allowMassPrune``, or a person's
``--allow-mass-prune`` lets it through (``check``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lockgate.errors import ApplyError
from lockgate.manifests import ObjectKey
from runner.plan import applyset, kinds, policy, prune_plan
from runner.plan.objects import labels_of


class Policy(StrEnum):
    """Flux's ``spec.deletionPolicy`` values."""

    MIRROR_PRUNE = "MirrorPrune"
    DELETE = "Delete"
    WAIT_FOR_TERMINATION = "WaitForTermination"
    ORPHAN = "Orphan"


DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class Recorded:
    """What the sync's deletion needs, recorded on its inventory by each pass."""

    policy: Policy = Policy.MIRROR_PRUNE
    prune: bool = False
    #: how long ``WaitForTermination`` waits (the sync's ``timeout``)
    timeout: float = DEFAULT_TIMEOUT
    allow_mass_prune: bool = False
    max_prune_share: float = prune_plan.DEFAULT_MAX_SHARE
    #: the ServiceAccount its passes run as: the deletion is made as it too
    service_account_name: str = ""
    #: the Sync's ``pruneCRDs``: CRDs Helm would keep are deleted with it
    prune_crds: bool = False

    @property
    def deletes(self) -> bool:
        if self.policy is Policy.MIRROR_PRUNE:
            return self.prune
        return self.policy in (Policy.DELETE, Policy.WAIT_FOR_TERMINATION)

    @property
    def waits(self) -> bool:
        return self.policy is Policy.WAIT_FOR_TERMINATION

    @property
    def explicit(self) -> bool:
        """The configuration says in so many words that the objects go with the sync."""
        return self.policy in (Policy.DELETE, Policy.WAIT_FOR_TERMINATION)

    def describe(self) -> str:
        if self.policy is Policy.MIRROR_PRUNE:
            return f"MirrorPrune (prune: {str(self.prune).lower()})"
        return self.policy.value

    def to_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy.value,
            "prune": self.prune,
            "timeout": self.timeout,
            "allowMassPrune": self.allow_mass_prune,
            "maxPruneShare": self.max_prune_share,
            "serviceAccountName": self.service_account_name,
            "pruneCRDs": self.prune_crds,
        }

    @classmethod
    def from_json(cls, doc: Any) -> Recorded | None:
        """Lenient: None when nothing is recorded (an inventory of an older runner); an
        unknown policy reads as ``Orphan``, the one that deletes nothing."""
        if not isinstance(doc, dict):
            return None
        try:
            found = Policy(str(doc.get("policy", Policy.MIRROR_PRUNE.value)))
        except ValueError:
            found = Policy.ORPHAN
        timeout, share = doc.get("timeout"), doc.get("maxPruneShare")
        return cls(
            policy=found,
            prune=doc.get("prune") is True,
            timeout=float(timeout) if isinstance(timeout, int | float) and timeout > 0 else DEFAULT_TIMEOUT,
            allow_mass_prune=doc.get("allowMassPrune") is True,
            max_prune_share=float(share)
            if isinstance(share, int | float) and 0 < share <= 1
            else prune_plan.DEFAULT_MAX_SHARE,
            service_account_name=str(doc.get("serviceAccountName") or ""),
            prune_crds=doc.get("pruneCRDs") is True,
        )


@dataclass(frozen=True)
class DeletionPlan:
    #: in deletion order (reverse apply order)
    delete: list[ObjectKey] = field(default_factory=list)
    #: members left in place, and why
    kept: list[tuple[ObjectKey, str]] = field(default_factory=list)
    #: kept members still labelled as ours: the ``part-of`` label is to be removed
    orphan: list[ObjectKey] = field(default_factory=list)
    gone: list[ObjectKey] = field(default_factory=list)
    #: kept because another ApplySet holds them: member -> that set's id (to be named)
    foreign: dict[ObjectKey, str] = field(default_factory=dict)


def _protected(body: dict[str, Any], prune_crds: bool) -> bool:
    return not (policy.deletable(body, prune_crds=prune_crds) and policy.policy_of(body).reconcile)


def plan(
    members: Iterable[ObjectKey],
    live: Mapping[ObjectKey, dict[str, Any] | None],
    *,
    set_id: str,
    deleting: bool,
    why_not: str = "",
    prune_crds: bool = False,
) -> DeletionPlan:
    """Decide each member's fate. ``live`` maps it to its live object, or None when gone;
    ``deleting`` is the policy's answer; ``why_not`` says why members are orphaned instead;
    ``prune_crds`` deletes CRDs Helm would keep."""
    result = DeletionPlan()
    delete: list[ObjectKey] = []
    for key in dict.fromkeys(members):
        body = live.get(key)
        if body is None:
            result.gone.append(key)
            continue
        if not applyset.is_member(body, set_id):
            other = labels_of(body).get(applyset.PART_OF_LABEL, "")
            if other:
                result.foreign[key] = other
                result.kept.append((key, "held by another ApplySet"))
            else:
                result.kept.append((key, "not labelled as a member of this set"))
        elif _protected(body, prune_crds):
            why = "deletion disabled by annotation" if policy.deletable(body, prune_crds=prune_crds) else (
                policy.kept_because(body).replace("pruning disabled", "deletion disabled")
            )
            result.kept.append((key, f"{why}; orphaned (set label removed)"))
            result.orphan.append(key)
        elif deleting:
            delete.append(key)
        else:
            result.kept.append((key, f"orphaned (set label removed): {why_not}"))
            result.orphan.append(key)
    result.delete.extend(kinds.deletion_order(delete))
    return result


class DeletionRefused(ApplyError):
    """Deleting the sync would delete more than its guard allows; nothing was changed (exit 5,
    as a refused mass prune)."""

    def __init__(self, sync: str, doomed: int, total: int, recorded: Recorded) -> None:
        what = f"every object ({doomed})" if doomed == total else f"{doomed} of {total} objects"
        super().__init__(
            f"refusing to delete {what} of sync {sync}: deletionPolicy {recorded.describe()} deletes "
            f"more than {recorded.max_prune_share:.0%} of its objects, which the mass-prune guard "
            "treats as a mistake; nothing was deleted. To confirm, give the sync deletionPolicy: "
            f"Delete (or allowMassPrune: true) and let it run once before removing it, or run "
            f"lockgate delete {sync} --allow-mass-prune (--dry-run lists the objects first); "
            f"deletionPolicy: Orphan leaves them",
        )
        self.doomed = doomed
        self.total = total


def check(
    sync: str, decided: DeletionPlan, total: int, recorded: Recorded, *, allow_mass_prune: bool
) -> None:
    """The mass-prune guard on a deletion: an explicit policy or an allowance lets it through."""
    doomed = len(decided.delete)
    if not doomed or recorded.explicit or recorded.allow_mass_prune or allow_mass_prune:
        return
    if doomed == total or doomed > recorded.max_prune_share * total:
        raise DeletionRefused(sync, doomed, total, recorded)
