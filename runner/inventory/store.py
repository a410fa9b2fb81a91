"""Reading and writing the inventory Secret: the I/O half of ``runner.plan.inventory``.

The parent is written by server-side apply, so a write is one request and never a
read-modify-write race with another tool's fields.
"""

from __future__ import annotations

from typing import Any

from runner.kube.client import Kube
from runner.kube.discovery import NAMESPACE, SECRET
from runner.plan.inventory import Inventory, from_secret


def read(kube: Kube, name: str, namespace: str) -> Inventory:
    """The stored inventory, or an empty one when the parent does not exist yet."""
    inventory = Inventory(name=name, namespace=namespace)
    secret = kube.get(SECRET, namespace, inventory.parent)
    return inventory if secret is None else from_secret(secret, name, namespace)


def ensure_namespace(kube: Kube, namespace: str, *, manager: str) -> None:
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
