"""The names and the label only lockgate writes, which no artifact's object may take. Pure.

lockgate keeps its records in the cluster: each sync's inventory, the ApplySet parent Secret
``lockgate-<name>`` of its runner namespace (with the ``requestedAt`` and ``suspended`` marks
``lockgate sync`` and ``serve`` set on it), each sync's Lease ``lockgate-<name>`` and the
replicas' membership Leases ``lockgate-runner-<identity>``. A sync's artifact is applied
with the same field manager, and with rights that often include Secrets of the runner
namespace (a tenant's ServiceAccount writes its own inventory there), so an object named
like another sync's record would replace it: the victim loses its ApplySet id, its members
and its history. Those names are refused in every runner namespace the configuration knows,
whether the record exists yet or not, and so is any object carrying the ApplySet id label,
which only a parent carries (an object posing as a parent would be read as one). A parent
in a namespace the configuration does not know is found by that label on the live object
when the pass lists what it is about to write (``runner.ssa.apply``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lockgate.manifests import ObjectKey
from runner.plan import applyset
from runner.plan.objects import labels_of

#: ``coordination.k8s.io`` Leases: one per sync, one per replica
LEASE_GROUP = "coordination.k8s.io"
#: a replica's membership Lease (``runner.serve.leases.MEMBER_PREFIX``)
MEMBER_PREFIX = applyset.PARENT_PREFIX + "runner-"
HINT = (
    "lockgate reserves the names it writes (Secrets and Leases named lockgate-* in a runner "
    f"namespace) and the {applyset.ID_LABEL} label of ApplySet parents: rename the object or "
    "remove it from the artifact"
)


@dataclass(frozen=True)
class Reserved:
    """Where the records are: this sync, its runner namespace, and every runner namespace of
    the configuration (its Runner's and its syncs')."""

    sync: str
    namespace: str
    runner_namespaces: frozenset[str] = frozenset()

    @property
    def namespaces(self) -> frozenset[str]:
        return self.runner_namespaces | {self.namespace}

    def _sync(self, name: str, namespace: str) -> str:
        if name == self.sync and namespace == self.namespace:
            return f"this sync's ({self.sync})"
        return f"Sync {name}'s"

    def why(self, key: ObjectKey, body: Mapping[str, Any]) -> str | None:
        """Why ``key`` may not be applied by this sync; None when it may."""
        if applyset.ID_LABEL in labels_of(body):
            return (
                f"it carries the label {applyset.ID_LABEL}, which only an ApplySet parent (a "
                "sync's inventory) carries"
            )
        if key.namespace not in self.namespaces or not key.name.startswith(applyset.PARENT_PREFIX):
            return None
        name = key.name.removeprefix(applyset.PARENT_PREFIX)
        where = f"runner namespace {key.namespace}"
        if key.kind == "Secret" and not key.group:
            whose = self._sync(name, key.namespace)
            return f"{key.name} in {where} is the name of {whose} inventory (ApplySet parent)"
        if key.kind == "Lease" and key.group == LEASE_GROUP:
            if key.name.startswith(MEMBER_PREFIX):
                return f"{key.name} in {where} is a replica's membership Lease"
            return f"{key.name} in {where} is the name of {self._sync(name, key.namespace)} Lease"
        return None

    def message(self, why: str) -> str:
        return f"Sync {self.sync} may not apply it: {why}; {HINT}"
