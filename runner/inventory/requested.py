"""Manual triggers: a watch on the inventory Secrets for ``lockgate.dev/requestedAt``.

``lockgate sync NAME`` writes the annotation on ``Secret/lockgate-NAME`` (as ``flux
reconcile`` writes ``reconcile.fluxcd.io/requestedAt``); ``serve`` watches the inventory
Secrets of each runner namespace and calls back for each request the inventory does not
record as handled yet (``Inventory.request_pending``), so a request reaches the scheduler
within the latency of a watch event, and one made while no runner was up is answered
when it starts. Each value is reported once per watcher.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from lockgate.errors import LockgateError
from runner.kube.client import Kube
from runner.kube.discovery import SECRET
from runner.kube.watch import StreamBroken
from runner.plan import applyset
from runner.plan.inventory import MANAGED_BY, from_secret

WATCH_SECONDS = 300
SELECTOR = f"{MANAGED_BY}=lockgate"

log = logging.getLogger("lockgate.serve")


def pending_request(secret: dict[str, Any]) -> tuple[str, str] | None:
    """(sync, requestedAt) when the inventory Secret carries a request not handled yet."""
    name = str((secret.get("metadata") or {}).get("name", ""))
    namespace = str((secret.get("metadata") or {}).get("namespace", ""))
    prefix = applyset.parent_name("")
    if not name.startswith(prefix):
        return None
    try:
        inventory = from_secret(secret, name[len(prefix) :], namespace)
    except LockgateError:
        return None  # not ours or unreadable: the pass reports that
    return (inventory.name, inventory.requested_at) if inventory.request_pending else None


def watch_requests(
    kube: Kube,
    namespace: str,
    on_request: Callable[[str, str], None],
    stop: threading.Event,
) -> None:
    """Call ``on_request(sync, value)`` for each new ``requestedAt`` value until ``stop`` is set.

    Run it on a daemon thread: a watch in progress ends with the process. Lists, then
    watches from the list's resourceVersion; a broken or expired watch lists
    again (new values seen in the gap are reported then), an unreachable cluster is retried.
    """
    reported: set[tuple[str, str]] = set()

    def look(secret: dict[str, Any]) -> None:
        found = pending_request(secret)
        if found is not None and found not in reported:
            reported.add(found)
            on_request(*found)

    delay = 1.0
    while not stop.is_set():
        try:
            listed = kube.snapshot(SECRET, namespace, label_selector=SELECTOR)
            for item in listed.items:
                look(item)
            delay = 1.0
            with kube.watch(
                SECRET,
                namespace,
                label_selector=SELECTOR,
                resource_version=listed.resource_version,
                timeout=WATCH_SECONDS,
            ) as stream:
                for event in stream:
                    if stop.is_set():
                        return
                    if event.type in ("ADDED", "MODIFIED"):
                        look(event.object)
                    elif event.type == "ERROR":
                        break  # 410 Gone and friends: list again
        except (LockgateError, StreamBroken) as exc:
            log.warning(
                "watch of inventory Secrets failed; retrying",
                extra={"namespace": namespace, "reason": str(exc), "retryIn": delay},
            )
            stop.wait(delay)
            delay = min(delay * 2, 30.0)
