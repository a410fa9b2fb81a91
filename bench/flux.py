"""Flux's controllers as the peer of ``lockgate serve`` (bench/bench_serve.py): what the
benchmark reads from them.

Running them is ``tests.world.flux``'s (the tests hand over from the same controllers);
this module adds the benchmark's view: controller-runtime's request and reconcile counters
from their metrics endpoints, and how many Kustomizations have applied.
"""

from __future__ import annotations

from bench.observe import ApiServer, scrape
from tests.world.flux import (
    NAMESPACE,
    FluxControllers,
    install_crds,
    kustomization,
    oci_repository,
    start_controllers,
)

__all__ = [
    "NAMESPACE",
    "FluxControllers",
    "applied",
    "client_requests",
    "install_crds",
    "kustomization",
    "oci_repository",
    "reconciles",
    "start_controllers",
]


def client_requests(controllers: FluxControllers) -> dict[str, int]:
    """controller-runtime's ``rest_client_requests_total`` summed over both controllers, by method."""
    counts: dict[str, int] = {}
    for address in controllers.metrics.values():
        for sample in scrape(f"http://{address}/metrics", "rest_client_requests_total"):
            method = sample.labels.get("method", "?").lower()
            counts[method] = counts.get(method, 0) + int(sample.value)
    return counts


def reconciles(controllers: FluxControllers) -> dict[str, int]:
    """controller-runtime's ``controller_runtime_reconcile_total`` by controller (both processes)."""
    counts: dict[str, int] = {}
    for address in controllers.metrics.values():
        for sample in scrape(f"http://{address}/metrics", "controller_runtime_reconcile_total"):
            controller = sample.labels.get("controller", "?")
            counts[controller] = counts.get(controller, 0) + int(sample.value)
    return counts


KUSTOMIZATIONS = "kustomize.toolkit.fluxcd.io/v1/kustomizations"


def applied(api: ApiServer, seen: set[str]) -> tuple[int, int]:
    """(applied, total) Kustomizations: those that have applied their source's revision and said
    Ready=True once (``seen`` keeps them: a Kustomization being reconciled again on its
    interval says Unknown meanwhile, so with many of them all are rarely Ready at one instant)."""
    items = api.list(f"/apis/{KUSTOMIZATIONS}", namespace=NAMESPACE)
    for item in items:
        status = item.get("status", {})
        conditions = status.get("conditions", [])
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        if ready and status.get("lastAppliedRevision"):
            seen.add(item["metadata"]["name"])
    return len(seen), len(items)
