"""Who owns an object that another ApplySet claims, or whose records an ApplySet parent holds:
named for the message that refuses it.

Only asked when an object is found labelled part of another set, so its cost (one LIST of
Secrets by the set's id label) is paid on a conflict, never on a normal pass; a parent names
its set itself.
"""

from __future__ import annotations

from typing import Any

from lockgate.errors import LockgateError
from runner.kube.client import Kube
from runner.kube.discovery import CONFIGMAP, SECRET
from runner.plan import applyset
from runner.plan.objects import labels_of

INVENTORY_PREFIX = "lockgate-"


def describe(kube: Kube, set_id: str) -> str:
    """``Sync NAME (inventory Secret NS/lockgate-NAME)`` for a lockgate set, else the set's parent."""
    for res in (SECRET, CONFIGMAP):
        try:
            found = next(
                kube.list_all(res, "", label_selector=f"{applyset.ID_LABEL}={set_id}", limit=1), None
            )
        except LockgateError:
            found = None  # not allowed to look (a tenant): the id still tells the sets apart
        if found is None:
            continue
        meta = found.get("metadata", {})
        name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
        if res is SECRET and name.startswith(INVENTORY_PREFIX):
            return f"Sync {name.removeprefix(INVENTORY_PREFIX)} (inventory Secret {namespace}/{name})"
        return f"the ApplySet of {res.kind} {namespace}/{name}"
    return f"another ApplySet ({applyset.PART_OF_LABEL}={set_id})"


def parent(live: dict[str, Any]) -> str:
    """``Sync NAME (inventory Secret NS/lockgate-NAME)`` for a lockgate inventory, else the set
    a live ApplySet parent names."""
    meta = live.get("metadata") or {}
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
    kind = str(live.get("kind") or "Secret")
    set_id = labels_of(live).get(applyset.ID_LABEL, "")
    if (
        kind == "Secret"
        and name.startswith(INVENTORY_PREFIX)
        and set_id == applyset.applyset_id(name, namespace)
    ):
        return f"Sync {name.removeprefix(INVENTORY_PREFIX)} (inventory Secret {namespace}/{name})"
    return f"the ApplySet {set_id} ({kind} {namespace}/{name})"
