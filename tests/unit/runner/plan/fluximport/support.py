"""Flux objects for the import tests: the fleet under tests/data/fluximport/fleet, read as
``lockgate import --from-files`` reads it, and small builders for one-off objects."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from runner.plan.fluximport import objects
from runner.plan.fluximport.objects import FluxObject

FLEET = Path(__file__).resolve().parents[5] / "tests" / "data" / "fluximport" / "fleet"


def fleet_documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(FLEET.rglob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def fleet() -> list[FluxObject]:
    return [
        objects.from_document(d) for d in fleet_documents() if objects.is_flux(d) or d["kind"] == "Deployment"
    ]


def ocirepository(name: str = "app", namespace: str = "flux-system", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "interval": "5m",
        "url": f"oci://registry.example.com/{name}",
        "ref": {"tag": "v1"},
        "verify": {"provider": "cosign", "secretRef": {"name": "keys"}},
    }
    body.update(spec)
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "OCIRepository",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {k: v for k, v in body.items() if v is not None},
    }


def kustomization(name: str = "app", namespace: str = "flux-system", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "interval": "10m",
        "sourceRef": {"kind": "OCIRepository", "name": name},
        "prune": True,
    }
    body.update(spec)
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {k: v for k, v in body.items() if v is not None},
    }


def as_the_cluster_has_it(doc: dict[str, Any], uid: str = "") -> dict[str, Any]:
    """``doc`` as the API server returns it: CRD defaults filled in, uid, status, managedFields."""
    found = copy.deepcopy(doc)
    meta = found["metadata"]
    meta.update(
        uid=uid or "5f0c7a1e-0000-4000-8000-000000000000",
        resourceVersion="4711",
        generation=1,
        creationTimestamp="2026-01-01T00:00:00Z",
        managedFields=[{"manager": "kubectl", "operation": "Apply"}],
    )
    spec = found.setdefault("spec", {})
    if found["kind"] == "OCIRepository":
        spec.setdefault("provider", "generic")
        spec.setdefault("timeout", "60s")
        if "verify" in spec:
            spec["verify"].setdefault("provider", "cosign")
    if found["kind"] == "Kustomization":
        spec.setdefault("force", False)
        found["status"] = {"observedGeneration": 1, "inventory": {"entries": []}}
    if found["kind"] == "Alert":
        spec.setdefault("eventSeverity", "info")
    return found


def objs(*docs: dict[str, Any]) -> list[FluxObject]:
    return [objects.from_document(d) for d in docs]
