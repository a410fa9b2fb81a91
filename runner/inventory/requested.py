"""Manual triggers: a watch on the inventory Secrets for ``lockgate.dev/requestedAt``.

``lockgate sync NAME`` writes the annotation on ``Secret/lockgate-NAME`` (as ``flux
reconcile`` writes ``reconcile.fluxcd.io/requestedAt``); ``serve`` watches the inventory
Secrets of each runner namespace and calls back when the value changes, so a request
reaches the scheduler within the latency of a watch event. Values present when the
watch starts are only remembered: a restart does not replay old requests.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from lockgate.errors import LockgateError
from runner.kube.client import Kube
from runner.kube.discovery import SECRET
from runner.kube.watch import StreamBroken
from runner.plan import applyset

REQUESTED_AT = "lockgate.dev/requestedAt"
MANAGED_BY = "app.kubernetes.io/managed-by=lockgate"
WATCH_SECONDS = 300

log = logging.getLogger("lockgate.serve")


def _sync_of(secret: dict[str, object]) -> tuple[str, str] | None:
    metadata = secret.get("metadata")
    if not isinstance(metadata, dict):
        return None
    name = str(metadata.get("name", ""))
    prefix = applyset.parent_name("")
    if not name.startswith(prefix):
        return None
    annotations = metadata.get("annotations") or {}
    value = annotations.get(REQUESTED_AT, "") if isinstance(annotations, dict) else ""
    return name[len(prefix) :], str(value)


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
    seen: dict[str, str] = {}
    first = True
    delay = 1.0
    while not stop.is_set():
        try:
            listed = kube.snapshot(SECRET, namespace, label_selector=MANAGED_BY)
            for item in listed.items:
                found = _sync_of(item)
                if found is None:
                    continue
                sync, value = found
                if value and not first and seen.get(sync) != value:
                    on_request(sync, value)
                seen[sync] = value
            first = False
            delay = 1.0
            with kube.watch(
                SECRET,
                namespace,
                label_selector=MANAGED_BY,
                resource_version=listed.resource_version,
                timeout=WATCH_SECONDS,
            ) as stream:
                for event in stream:
                    if stop.is_set():
                        return
                    if event.type in ("ADDED", "MODIFIED"):
                        found = _sync_of(event.object)
                        if found is not None:
                            sync, value = found
                            if value and seen.get(sync) != value:
                                on_request(sync, value)
                            seen[sync] = value
                    elif event.type == "ERROR":
                        break  # 410 Gone and friends: list again
        except (LockgateError, StreamBroken) as exc:
            log.warning(
                "watch of inventory Secrets failed; retrying",
                extra={"namespace": namespace, "reason": str(exc), "retryIn": delay},
            )
            stop.wait(delay)
            delay = min(delay * 2, 30.0)
