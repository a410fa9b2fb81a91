"""Helpers for the deletion tests: syncs run by ``reconcile --config``, ``lockgate delete``, the cluster."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from runner.kube.client import Kube
from runner.kube.discovery import LEASE, SECRET, Resource
from runner.plan import applyset
from runner.plan.inventory import Inventory, from_secret
from tests.integration.reconcile_support import LOCKGATE, Run, configmap
from tests.integration.serve_support import sync_doc, write_config
from tests.world import binaries
from tests.world.kube import Cluster

CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps", True)
#: a finalizer nothing in the world removes: the test does, when it wants the object gone
HOLD = "lockgate.dev/test-hold"


def held_configmap(name: str, namespace: str) -> dict[str, Any]:
    body = configmap(name, namespace, {"v": "1"})
    body["metadata"]["finalizers"] = [HOLD]
    return body


def lockgate(cluster: Cluster, *args: str, timeout: float = 300) -> Run:
    """``lockgate ARGS --kubeconfig ...`` as a child process."""
    env = {**os.environ, "LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize"))}
    proc = subprocess.run(
        [*LOCKGATE, *args, f"--kubeconfig={cluster.kubeconfig}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def delete_argv(cluster: Cluster, *args: str) -> list[str]:
    return [*LOCKGATE, "delete", *args, f"--kubeconfig={cluster.kubeconfig}"]


def run_syncs(cluster: Cluster, config: Path, *docs: dict[str, Any]) -> None:
    """Write ``docs`` to ``config`` and run one ``reconcile --config`` pass of them."""
    write_config(config, docs)
    ran = lockgate(cluster, "reconcile", "--config", str(config), "-o", "json")
    assert ran.code == 0, ran.err + ran.out


def doc(name: str, url: str, runner_ns: str, **spec: Any) -> dict[str, Any]:
    return sync_doc(name, url, runner_ns, **spec)


def inventory(kube: Kube, name: str, runner_ns: str) -> Inventory | None:
    parent = kube.get(SECRET, runner_ns, f"lockgate-{name}")
    return None if parent is None else from_secret(parent, name, runner_ns)


def lease(kube: Kube, name: str, runner_ns: str) -> dict[str, Any] | None:
    return kube.get(LEASE, runner_ns, f"lockgate-{name}")


def configmaps(kube: Kube, namespace: str) -> dict[str, dict[str, Any]]:
    """Every ConfigMap of ``namespace`` but the cluster's own, by name."""
    return {
        o["metadata"]["name"]: o
        for o in kube.list_all(CONFIGMAPS, namespace)
        if o["metadata"]["name"] != "kube-root-ca.crt"
    }


def part_of(body: dict[str, Any]) -> str | None:
    return (body["metadata"].get("labels") or {}).get(applyset.PART_OF_LABEL)


def release_hold(cluster: Cluster, name: str, namespace: str) -> None:
    cluster.kubectl(
        "patch", "configmap", name, "-n", namespace, "--type=json",
        "-p", json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]),
    )  # fmt: skip


def wait_for(what: str, check: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g}s: {what}")
        time.sleep(0.2)
