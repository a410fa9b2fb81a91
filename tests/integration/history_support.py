"""Helpers for the history and rollback tests: passes with rollback and healthChecks, other commands."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from lockgate.signing.options import VerifyOptions
from runner.kube.client import Kube
from runner.pipeline import config, status
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from runner.plan.inventory import Inventory
from tests.integration.reconcile_support import LOCKGATE, Run
from tests.world import binaries
from tests.world.kube import Cluster


def options(url: str, name: str, runner_ns: str, **fields: Any) -> pipeline.SyncOptions:
    """Unsigned sync options; ``fields`` are SyncOptions fields (rollback, health_checks, wait...)."""
    flags = {k: fields.pop(k) for k in ("timeout", "prune", "wait") if k in fields}
    base = config.sync_options(
        name=name, url=url, verify=VerifyOptions(insecure_skip=True), namespace=runner_ns, **flags
    )
    return dataclasses.replace(base, **fields)


def run(cluster: Cluster, sync: pipeline.SyncOptions, **kwargs: Any) -> Result:
    return pipeline.reconcile(sync, kube=Kube.from_kubeconfig(cluster.kubeconfig), **kwargs)


def inventory(cluster: Cluster, name: str, runner_ns: str) -> Inventory:
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    (found,) = status.read(namespace=runner_ns, name=name, kube=kube).inventories
    return found


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


def sync_file(path: Path, name: str, url: str, runner_ns: str, **spec: Any) -> Path:
    doc = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": name},
        "spec": {
            "url": url,
            "interval": "5m",
            "namespace": runner_ns,
            "verify": {"insecureSkip": True},
            **spec,
        },
    }
    path.write_text(yaml.safe_dump(doc))
    return path
