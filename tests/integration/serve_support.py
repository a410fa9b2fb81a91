"""Run ``lockgate serve`` as a child process against the world, and read what it says.

Each ``Served`` has its own config file, JSON log file and loopback ports; ``stop`` sends
SIGTERM (or another signal) and returns the exit code. The log is one JSON object per
line, so tests assert on events (``pass started``, ``pass finished``...) rather than text.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

from tests.world import binaries
from tests.world.errors import log_tail
from tests.world.kube import Cluster
from tests.world.process import free_port

LOCKGATE = [sys.executable, "-m", "lockgate"]


def sync_doc(name: str, url: str, runner_ns: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "url": url,
        "namespace": runner_ns,
        "interval": "10m",
        "prune": True,
        "verify": {"insecureSkip": True},
    }
    body.update(spec)
    return {"apiVersion": "lockgate.dev/v1alpha1", "kind": "Sync", "metadata": {"name": name}, "spec": body}


def runner_doc(metrics_port: int, webhook_port: int, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metricsAddress": f"127.0.0.1:{metrics_port}",
        "webhookAddress": f"127.0.0.1:{webhook_port}",
    }
    body.update(spec)
    return {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Runner",
        "metadata": {"name": "runner"},
        "spec": body,
    }


def write_config(path: Path, docs: Sequence[dict[str, Any]]) -> None:
    """Replace the file in one rename, as a ConfigMap's symlink swap does."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    tmp.replace(path)


def mounted_configmap(directory: Path, docs: Sequence[dict[str, Any]], *, key: str = "lockgate.yaml") -> Path:
    """Write ``docs`` as the kubelet updates a mounted ConfigMap; returns the path a Pod reads.

    The layout is the kubelet's: ``KEY -> ..data/KEY``, ``..data -> ..<version>``; an update
    writes a new version directory and swaps the ``..data`` symlink in one rename.
    """
    directory.mkdir(parents=True, exist_ok=True)
    version = directory / f"..{time.time_ns()}"
    version.mkdir()
    (version / key).write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    swap = directory / "..data_tmp"
    swap.unlink(missing_ok=True)
    swap.symlink_to(version.name)
    swap.replace(directory / "..data")
    link = directory / key
    if not link.is_symlink():
        link.symlink_to(f"..data/{key}")
    return link


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    config: Path
    log: Path
    metrics_port: int
    webhook_port: int
    identity: str
    stopped: int | None = field(default=None)

    # ---- what it says --------------------------------------------------------------
    def events(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for line in self.log.read_text(errors="replace").splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
        return out

    def tail(self) -> str:
        return log_tail(self.log, lines=60)

    def wait_event(
        self, predicate: Callable[[dict[str, Any]], bool], *, timeout: float = 60, what: str = ""
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in self.events():
                if predicate(event):
                    return event
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"serve exited ({self.proc.returncode}) waiting for {what}:\n{self.tail()}"
                )
            time.sleep(0.1)
        raise AssertionError(f"no log event {what} within {timeout}s:\n{self.tail()}")

    def metrics(self) -> str:
        return requests.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).text

    def readyz(self) -> requests.Response:
        return requests.get(f"http://127.0.0.1:{self.metrics_port}/readyz", timeout=5)

    def hook(
        self, sync: str, body: bytes = b"{}", headers: dict[str, str] | None = None
    ) -> requests.Response:
        return requests.post(
            f"http://127.0.0.1:{self.webhook_port}/hook/{sync}", data=body, headers=headers or {}, timeout=10
        )

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                if self.readyz().status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise AssertionError(f"serve not ready within {timeout}s:\n{self.tail()}")

    def sync_ready(self, name: str) -> bool:
        for line in self.metrics().splitlines():
            if line.startswith("lockgate_sync_info{") and f'name="{name}"' in line:
                return 'ready="True"' in line
        return False

    def wait_sync_ready(self, name: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited ({self.proc.returncode}):\n{self.tail()}")
            if self.sync_ready(name):
                return
            time.sleep(0.1)
        raise AssertionError(f"sync {name} not ready within {timeout}s:\n{self.tail()}")

    # ---- ending it -------------------------------------------------------------------
    def stop(self, sig: int = signal.SIGTERM, timeout: float = 40) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.stopped = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(
                f"serve did not stop within {timeout}s after {sig}:\n{self.tail()}"
            ) from None
        return self.stopped


def start_serve(
    cluster: Cluster,
    directory: Path,
    syncs: Sequence[dict[str, Any]],
    *,
    identity: str = "replica-0",
    runner: dict[str, Any] | None = None,
    config: Path | None = None,
    kubeconfig: Path | None = None,
    wait_ready: bool = True,
    ports: tuple[int, int] | None = None,
    log_format: str = "json",
    preexec_fn: Callable[[], None] | None = None,
) -> Served:
    """Write the config (unless ``config`` is given and exists) and start serve on it.

    With ``ports`` the given ``config`` is used as it is: its Runner document has those ports.
    ``preexec_fn`` runs in the child before serve starts (e.g. to cap its memory).
    The log is JSON (what ``events`` reads) unless ``log_format`` says ``text``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    metrics_port, webhook_port = ports or (free_port(), free_port())
    config = config or directory / "lockgate.yaml"
    if ports is None and not config.exists():
        write_config(config, [runner_doc(metrics_port, webhook_port, **(runner or {})), *syncs])
    elif (
        ports is None
    ):  # a replica on a shared file: its own ports through a per-replica copy of the Runner doc
        docs = [d for d in yaml.safe_load_all(config.read_text()) if d]
        docs = [d for d in docs if d.get("kind") != "Runner"]
        own = directory / f"{identity}.yaml"
        write_config(own, [runner_doc(metrics_port, webhook_port, **(runner or {})), *docs])
        config = own
    log = directory / f"serve-{identity}.log"
    env = {**os.environ, "LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize"))}
    out = open(log, "ab")  # noqa: SIM115 - handed to the child
    try:
        proc = subprocess.Popen(
            [
                *LOCKGATE,
                "serve",
                f"--config={config}",
                f"--kubeconfig={kubeconfig or cluster.kubeconfig}",
                f"--log-format={log_format}",
                f"--identity={identity}",
                "--grace-period=20s",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            preexec_fn=preexec_fn,
        )
    finally:
        out.close()
    served = Served(proc, config, log, metrics_port, webhook_port, identity)
    if wait_ready:
        served.wait_ready()
    return served
