"""Suspension on the inventory: ``serve`` marks the parents of the syncs its configuration suspends.

The configuration lives in a file ``serve`` reads, not in the cluster, so ``lockgate sync``
could not tell a suspended sync from a running one; ``serve`` keeps the parent's
``lockgate.dev/suspended: "true"`` annotation in step with ``spec.suspend`` (a JSON patch of
that one key, under its own field manager, so the passes' server-side applies neither own
nor remove it). The runner's own identity lists the inventories; each patch is made as the
identity that writes that sync's inventory in a pass (``writer``: its ServiceAccount), the
one the deployed RBAC lets patch Secrets. Only parents that exist are marked: a sync that
never ran has nothing to answer a request anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from runner.inventory import store
from runner.kube.client import Kube
from runner.kube.discovery import SECRET
from runner.plan.inventory import SUSPENDED

#: the field manager of the annotation
MANAGER = "lockgate-suspend"


def _path(key: str) -> str:
    return "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1")


def publish(
    kube: Kube, namespace: str, suspended: Mapping[str, bool], *, writer: Callable[[str], Kube]
) -> list[str]:
    """Bring the annotation of each sync in ``suspended`` (name -> suspended) in step, with one
    list of the namespace's inventories and a patch per change (as ``writer(name)``); returns
    the syncs changed."""
    changed = []
    for inventory in store.list_all(kube, namespace).inventories:
        wanted = suspended.get(inventory.name)
        if wanted is None or wanted == inventory.suspended:
            continue
        operation = (
            {"op": "add", "path": _path(SUSPENDED), "value": "true"}
            if wanted
            else {"op": "remove", "path": _path(SUSPENDED)}
        )
        writer(inventory.name).json_patch(SECRET, namespace, inventory.parent, [operation], manager=MANAGER)
        changed.append(inventory.name)
    return changed
