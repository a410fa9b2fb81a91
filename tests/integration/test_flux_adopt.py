"""``lockgate import`` and ``lockgate adopt`` against Flux's real controllers: a fleet that Flux
applied is taken over with nothing re-created, nothing rolled and Flux's ownership gone.

Flux is source-controller and kustomize-controller v1.9.5 with the flux CLI v2.9.5
(``tests.world.flux``); the artifacts are signed, and verified by both. Each test has its
own Flux namespace, workload namespaces and runner namespace (``flux_support.Fleet``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.flux_support import Fleet, flux_owned, get_json, kubectl_apply, wait_for
from tests.integration.reconcile_support import dump
from tests.world.flux import FluxControllers
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


@pytest.fixture
def fleet(
    flux: FluxControllers, full_cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> Iterator[Fleet]:
    yield Fleet(full_cluster, registry, flux, unique[-6:], tmp_path)


def web_deployment(namespace: str, *, env: dict[str, str], replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "registry.example/web:1.0",
                            "env": [{"name": k, "value": v} for k, v in env.items()],
                        }
                    ]
                },
            },
        },
    }


def pods(cluster: Cluster, namespace: str) -> dict[str, str]:
    """Pod name -> uid, of the running Pods of ``namespace``."""
    found = cluster.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in yaml.safe_load(found)["items"]}


def test_a_single_app_is_handed_over(fleet: Fleet) -> None:
    target = fleet.name("web")
    fleet.cluster.kubectl("create", "namespace", target)
    digest = fleet.push("web", {"deploy.yaml": dump(web_deployment(target, env={"A": "1", "B": "2"}))})
    kubectl_apply(fleet.cluster, fleet.source("web"), fleet.kustomization("web"))
    ks = fleet.wait_applied("web", digest)
    assert ks["status"]["inventory"]["entries"]
    before = pods(fleet.cluster, target)
    assert len(before) == 2
    imported = fleet.lockgate(
        "import", "--from-cluster", "-n", fleet.flux_ns, "--runner-namespace", fleet.runner_ns,
        "-O", "lockgate.yaml", check=False,
    )  # fmt: skip
    assert imported.code == 10, imported.err
    fleet.flux("suspend", "kustomization", fleet.name("web"), "-n", fleet.flux_ns)
    adopted = fleet.lockgate("adopt", "--config", "lockgate.yaml", "-o", "json", check=False)
    assert adopted.code == 0, adopted.out + adopted.err
    live = get_json(fleet.cluster, "deployment", "web", target)
    assert live is not None and flux_owned(live) == []
    assert pods(fleet.cluster, target) == before
    wait_for("still two pods", lambda: len(pods(fleet.cluster, target)) == 2, timeout=5)
