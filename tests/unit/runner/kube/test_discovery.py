"""Every served group-version and its kinds, as discovery documents list them."""

from __future__ import annotations

from typing import Any

from lockgate.errors import ClusterError
from runner.kube import discovery

DOCUMENTS: dict[str, dict[str, Any]] = {
    "/api": {"versions": ["v1"]},
    "/api/v1": {
        "resources": [{"name": "configmaps", "kind": "ConfigMap"}, {"name": "pods/log", "kind": "Pod"}]
    },
    "/apis": {
        "groups": [
            {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}]},
            {"name": "metrics.k8s.io", "versions": [{"groupVersion": "metrics.k8s.io/v1beta1"}]},
        ]
    },
    "/apis/apps/v1": {
        "resources": [
            {"name": "deployments", "kind": "Deployment"},
            {"name": "deployments/scale", "kind": "Scale"},
        ]
    },
}


def fetch(path: str) -> dict[str, Any] | None:
    if path == "/apis/metrics.k8s.io/v1beta1":  # an aggregated API whose server is down
        raise ClusterError("503 service unavailable")
    return DOCUMENTS.get(path)


def test_served_lists_group_versions_with_their_kinds_and_keeps_one_that_cannot_be_read() -> None:
    assert discovery.served(fetch) == {
        "v1": ("ConfigMap",),
        "apps/v1": ("Deployment",),
        "metrics.k8s.io/v1beta1": (),
    }
