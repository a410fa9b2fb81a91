"""Reading and writing the inventory Secret: the I/O half of ``runner.plan.inventory``.

The parent is written by server-side apply, so a write is one request and never a
read-modify-write race with another tool's fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockgate.errors import LockgateError
from runner.kube.client import Kube
from runner.kube.discovery import NAMESPACE, SECRET
from runner.plan import applyset
from runner.plan.inventory import MANAGED_BY, REQUESTED_AT, Inventory, from_secret

#: the field manager of ``lockgate sync``'s annotation, apart from the runner's own
REQUEST_MANAGER = "lockgate-sync"


def read(kube: Kube, name: str, namespace: str) -> Inventory:
    """The stored inventory, or an empty one when the parent does not exist yet."""
    inventory = Inventory(name=name, namespace=namespace)
    secret = kube.get(SECRET, namespace, inventory.parent)
    return inventory if secret is None else from_secret(secret, name, namespace)


def ensure_namespace(kube: Kube, namespace: str, *, manager: str) -> None:
    """Create the runner namespace when it is missing, as the runner itself (never as a tenant)."""
    kube = kube.own()
    if kube.get(NAMESPACE, "", namespace) is None:
        kube.apply(
            NAMESPACE,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            manager=manager,
        )


def write(kube: Kube, inventory: Inventory, *, manager: str) -> dict[str, Any]:
    """Store the inventory (server-side apply of the parent); returns the live parent."""
    _, live = kube.apply(SECRET, inventory.body(), manager=manager)
    inventory.exists = True
    return live


@dataclass
class Listing:
    inventories: list[Inventory] = field(default_factory=list)
    #: Secrets labelled as ours that are not readable inventories: (name, why)
    problems: list[tuple[str, str]] = field(default_factory=list)


def list_all(kube: Kube, namespace: str) -> Listing:
    """Every inventory in ``namespace`` (Secrets labelled managed-by=lockgate), by sync name."""
    listing = Listing()
    for secret in kube.list_all(SECRET, namespace, label_selector=f"{MANAGED_BY}=lockgate"):
        parent = str((secret.get("metadata") or {}).get("name", ""))
        if not parent.startswith(applyset.PARENT_PREFIX):
            continue
        try:
            listing.inventories.append(from_secret(secret, parent[len(applyset.PARENT_PREFIX) :], namespace))
        except LockgateError as exc:
            listing.problems.append((parent, exc.message))
    listing.inventories.sort(key=lambda i: i.name)
    return listing


def request(kube: Kube, inventory: Inventory, at: str) -> None:
    """Set the parent's requestedAt annotation, and nothing else (a JSON patch of that one key)."""
    path = "/metadata/annotations/" + REQUESTED_AT.replace("~", "~0").replace("/", "~1")
    kube.json_patch(
        SECRET,
        inventory.namespace,
        inventory.parent,
        [{"op": "add", "path": path, "value": at}],
        manager=REQUEST_MANAGER,
    )
