"""Flux's own controllers as local processes against the world's cluster.

source-controller and kustomize-controller at the versions Flux v2.9.5 ships (pins in
``tests/world/pins.py``, built from the Go module proxy by ``tests/world/binaries.py``),
with their CRDs from the same modules (``config/crd/bases``), plus the CRDs of
notification-controller v1.9.4 (Alert, Provider, Receiver: objects ``lockgate import``
reads from the cluster; the controller itself does not run). They run as Flux's install
runs them (``--watch-all-namespaces``, JSON logs, ``GOMEMLIMIT`` at the 1 GiB memory limit
of Flux's Deployments, default concurrency), except that: leader election is off (one
replica), every listener is on loopback on a free port, source-controller stores its
artifacts in a temporary directory and advertises its artifact server on loopback, no
events address (there is no notification-controller; events still go to the API server),
and kustomize-controller gets ``--no-remote-bases`` (lockgate's default, so both render
the same artifacts). The peer of ``lockgate serve`` in bench/bench_serve.py, and the Flux
that ``lockgate import`` and ``lockgate adopt`` take over from in the tests.
"""

from __future__ import annotations

import functools
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.world import binaries
from tests.world.errors import WorldSetupError
from tests.world.kube import Cluster
from tests.world.process import Process, free_port, start, wait_until

CONTROLLERS = ("source-controller", "kustomize-controller")
#: modules whose CRDs are installed without running their controller
CRD_ONLY = ("notification-controller",)
NAMESPACE = "flux-system"
#: Flux's Deployments set GOMEMLIMIT from the container's memory limit (1Gi)
GOMEMLIMIT = "1GiB"


def crd_files() -> list[Path]:
    files: list[Path] = []
    for name in (*CONTROLLERS, *CRD_ONLY):
        files += sorted((binaries.module_dir(name) / "config" / "crd" / "bases").glob("*.yaml"))
    if not files:
        raise WorldSetupError("no CRDs found under config/crd/bases of the Flux controller modules")
    return files


def install_crds(cluster: Cluster) -> list[str]:
    """Apply the controllers' CRDs and wait until they are established; return their names."""
    names: list[str] = []
    files = crd_files()
    for path in files:
        names += [d["metadata"]["name"] for d in yaml.safe_load_all(path.read_text()) if d]
    args = ["apply", "--server-side", "--force-conflicts"]
    for path in files:
        args += ["-f", str(path)]
    cluster.kubectl(*args)
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{n}" for n in names))
    return names


def oci_repository(name: str, url: str, tag: str, *, interval: str) -> dict[str, Any]:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "OCIRepository",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"interval": interval, "url": url, "ref": {"tag": tag}, "insecure": True},
    }


def kustomization(name: str, *, interval: str, target_namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "interval": interval,
            "sourceRef": {"kind": "OCIRepository", "name": name},
            "path": "./",
            "prune": True,
            "wait": False,
            "targetNamespace": target_namespace,
        },
    }


@dataclass
class FluxControllers:
    """The two running controllers, their metrics and health addresses, and their logs."""

    processes: list[Process]
    metrics: dict[str, str]
    health: dict[str, str]
    storage: Path
    started: float = field(default_factory=time.monotonic)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def check(self) -> None:
        for process in self.processes:
            process.check()

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()


def start_controllers(cluster: Cluster, workdir: Path) -> FluxControllers:
    """Start source-controller and kustomize-controller (CRDs must be installed); wait until healthy."""
    workdir.mkdir(parents=True, exist_ok=True)
    storage = workdir / "storage"
    storage.mkdir(exist_ok=True)
    env = {
        "KUBECONFIG": str(cluster.kubeconfig),
        "RUNTIME_NAMESPACE": NAMESPACE,
        "GOMEMLIMIT": GOMEMLIMIT,
        "TMPDIR": str(workdir),
    }
    storage_addr = f"127.0.0.1:{free_port()}"
    metrics = {name: f"127.0.0.1:{free_port()}" for name in CONTROLLERS}
    health = {name: f"127.0.0.1:{free_port()}" for name in CONTROLLERS}
    common = ["--watch-all-namespaces", "--log-level=info", "--log-encoding=json", "--events-addr="]
    argv = {
        "source-controller": [
            *common,
            f"--storage-path={storage}",
            f"--storage-addr={storage_addr}",
            f"--storage-adv-addr={storage_addr}",
        ],
        "kustomize-controller": [*common, "--no-remote-bases=true"],
    }
    started = time.monotonic()
    processes: list[Process] = []
    try:
        for name in CONTROLLERS:
            processes.append(
                start(
                    name,
                    [
                        binaries.binary(name),
                        *argv[name],
                        f"--metrics-addr={metrics[name]}",
                        f"--health-addr={health[name]}",
                    ],
                    log=workdir / f"{name}.log",
                    env=env,
                    cwd=workdir,
                )
            )
        for process, name in zip(processes, CONTROLLERS, strict=True):
            wait_until(
                process,
                functools.partial(_healthy, health[name]),
                timeout=60,
                what="healthy (/healthz)",
                interval=0.1,
            )
    except BaseException:
        for process in reversed(processes):
            process.stop()
        raise
    return FluxControllers(processes, metrics, health, storage, started)


def _healthy(address: str) -> bool:
    with urllib.request.urlopen(f"http://{address}/healthz", timeout=2) as resp:
        return bool(resp.status == 200)


def cli() -> Path:
    """The flux CLI of the same release (``flux suspend``, ``flux resume``, ``flux get``...)."""
    return binaries.binary("flux")
