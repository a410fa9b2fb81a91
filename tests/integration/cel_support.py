"""A custom kind and a tenant's costly CEL, for the sandbox's tests and its bench
(tests/integration/test_cel_limits.py, bench/bench_cel_probes.py)."""

from __future__ import annotations

from typing import Any

KIND, PLURAL = "Widget", "widgets"
#: Flux's cheat-sheet form, which must keep loading
CURRENT = "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')"
FAILED = "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')"
#: conditions a tenant writes so that ``FAILED`` holds the runtime for seconds (within its
#: 10,000 iterations: ``filter`` then ``all``, each over 4,999)
COSTLY = 4_999


def crd(group: str) -> dict[str, Any]:
    """A kind with no status subresource: the tenant's manifest writes its status."""
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": KIND, "plural": PLURAL, "singular": "widget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
            ],
        },
    }


def widget(group: str, ns: str, conditions: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{group}/v1",
        "kind": KIND,
        "metadata": {"name": "w", "namespace": ns},
        "spec": {"size": conditions},
        "status": {"conditions": [{"type": "Ready", "status": "True"} for _ in range(conditions)]},
    }
