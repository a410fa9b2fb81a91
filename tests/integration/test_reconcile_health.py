"""Health checks with real controllers and kwok nodes: success, failure, timeout, fail-fast."""

from __future__ import annotations

import time

import pytest

from tests.integration.reconcile_support import (
    cli,
    configmap,
    deployment,
    dump,
    namespace,
    push_tree,
    run_pass,
)
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = [pytest.mark.world, pytest.mark.full]

JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "migrate"},
    "spec": {
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.example/job:1"}],
            }
        }
    },
}


def test_waits_until_deployments_and_jobs_are_healthy(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    files = {
        "a.yaml": dump(
            namespace(unique),
            configmap("cfg", unique, {"k": "1"}),
            deployment("web", unique, replicas=2),
            {**JOB, "metadata": {"name": "migrate", "namespace": unique}},
        )
    }
    result = run_pass(
        full_cluster, push_tree(registry, unique, files), unique, f"{unique}-r", wait=True, timeout="90s"
    )
    assert result.error is None, result.error
    assert {k: h.status.value for k, h in result.health.items()} == {
        f"Namespace/{unique}": "Current",
        f"ConfigMap/{unique}/cfg": "Current",
        f"Deployment.apps/{unique}/web": "Current",
        f"Job.batch/{unique}/migrate": "Current",
    }


def test_fails_fast_on_an_unschedulable_deployment(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    stuck = deployment("stuck", unique, node_selector={"no-such-node": "true"}, deadline=5)
    files = {"a.yaml": dump(namespace(unique), stuck)}
    url = push_tree(registry, unique, files)
    started = time.monotonic()
    run = cli(
        full_cluster,
        url,
        "--name",
        unique,
        "-n",
        f"{unique}-r",
        "--insecure-skip-verify",
        "--wait",
        "--timeout",
        "3m",
    )
    assert run.code == 6, run.err
    assert time.monotonic() - started < 90
    assert f"Deployment.apps/{unique}/stuck: Failed: Progress deadline exceeded" in run.err
    # the condition underneath, from the Pod: the scheduler's own words
    assert "Pod stuck-" in run.err and "Unschedulable: 0/" in run.err, run.err
    assert "node(s) didn't match Pod's node affinity/selector" in run.err, run.err


def test_timeout_lists_each_unhealthy_object_with_its_reason(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    files = {
        "a.yaml": dump(
            namespace(unique),
            deployment("ok", unique),
            deployment("stuck", unique, node_selector={"no-such-node": "true"}),
        )
    }
    result = run_pass(
        full_cluster, push_tree(registry, unique, files), unique, f"{unique}-r", wait=True, timeout="8s"
    )
    assert result.error is not None and int(result.error.exit_code) == 6
    assert "timed out after 8s waiting for 1 object(s)" in result.error.message
    assert f"Deployment.apps/{unique}/stuck: InProgress:" in result.error.message
    assert f"Deployment.apps/{unique}/ok" not in result.error.message
    # the JSON health map is filled on a timeout too, with the Pod's condition underneath
    stuck = result.to_json()["health"][f"Deployment.apps/{unique}/stuck"]
    assert stuck["status"] == "InProgress" and "Unschedulable: 0/" in stuck["message"], stuck
