"""Helpers for the tests that hand over from Flux's real controllers (``tests.world.flux``).

A ``Fleet`` is one test's share of the world: its registry repositories, its own Flux
namespace (``flux-<suffix>``: the controllers watch every namespace, and ``lockgate import
--from-cluster -n`` then reads this test's objects only), its workload namespaces and its
lockgate runner namespace, so tests run in any order. Artifacts are pushed and signed by
lockgate itself (``lockgate push --sign key``: cosign-compatible), so Flux's OCIRepositories
verify them with the same public key, as a migrating fleet does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.world import binaries
from tests.world import flux as flux_world
from tests.world.kube import Cluster
from tests.world.registry import Registry

LOCKGATE = [sys.executable, "-m", "lockgate"]
PASSWORD = "flux-handover"
KUSTOMIZE_API = "kustomize.toolkit.fluxcd.io/v1"
SOURCE_API = "source.toolkit.fluxcd.io/v1"
OWNER_LABELS = ("kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace")


def kubectl_apply(cluster: Cluster, *docs: dict[str, Any]) -> None:
    cluster.kubectl(
        "apply", "--server-side", "--field-manager=test", "-f", "-", input=yaml.safe_dump_all(docs)
    )


def get_json(cluster: Cluster, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    args = [
        "get",
        kind,
        name,
        "-o",
        "json",
        "--show-managed-fields",
        *(["-n", namespace] if namespace else []),
    ]
    found = cluster.kubectl(*args, check=False)
    if found.returncode != 0:
        if "NotFound" in found.stderr:
            return None
        raise AssertionError(found.stderr)
    value: dict[str, Any] = json.loads(found.stdout)
    return value


def wait_for(what: str, check: Callable[[], bool], *, timeout: float = 180, every: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(every)
    raise AssertionError(f"not {what} after {timeout:.0f}s")


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Fleet:
    """One test's Flux fleet and the lockgate that takes it over."""

    cluster: Cluster
    registry: Registry
    controllers: flux_world.FluxControllers
    suffix: str
    work: Path
    #: the lockgate runner namespace of this test
    runner_ns: str = ""
    #: the namespace of this test's Flux objects
    flux_ns: str = ""
    key_dir: Path = field(default_factory=Path)

    def __post_init__(self) -> None:
        self.runner_ns = f"lg-{self.suffix}"
        self.flux_ns = f"flux-{self.suffix}"
        self.key_dir = self.work / "keys"
        self.key_dir.mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            "LOCKGATE_PASSWORD": PASSWORD,
            "LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize")),
            "KUBECONFIG": str(self.cluster.kubeconfig),
            "DOCKER_CONFIG": str(self.work / "docker"),
        }
        self.lockgate("keygen", "--output-key-prefix", str(self.key_dir / "cosign"))
        for ns in (self.runner_ns, self.flux_ns):
            self.cluster.kubectl("create", "namespace", ns, check=False)
        # the public key, in Flux's namespace (for the OCIRepositories) and lockgate's
        for ns in (self.flux_ns, self.runner_ns):
            self.cluster.kubectl(
                "create", "secret", "generic", self.keys_secret, "-n", ns,
                f"--from-file=cosign.pub={self.key_dir / 'cosign.pub'}",
            )  # fmt: skip

    @property
    def keys_secret(self) -> str:
        return f"cosign-{self.suffix}"

    def name(self, base: str) -> str:
        return f"{base}-{self.suffix}"

    # ---- lockgate ----------------------------------------------------------------------------
    def lockgate(self, *args: str, check: bool = True, timeout: float = 300) -> Run:
        proc = subprocess.run(
            [*LOCKGATE, *args], capture_output=True, text=True, env=self.env, cwd=self.work, timeout=timeout
        )
        run = Run(proc.returncode, proc.stdout, proc.stderr)
        if check and run.code != 0:
            raise AssertionError(f"lockgate {' '.join(args)} exited {run.code}:\n{run.out}\n{run.err}")
        return run

    def import_from_cluster(self, *extra: str, out: str = "lockgate.yaml") -> Run:
        """``lockgate import --from-cluster`` of this test's Flux namespace, for its runner namespace."""
        return self.lockgate(
            "import", "--from-cluster", "-n", self.flux_ns,
            "--runner-namespace", self.runner_ns, "-O", out, *extra, check=False,
        )  # fmt: skip

    def push(self, app: str, files: dict[str, str], *extra: str, tag: str = "latest") -> str:
        """Push and sign ``files`` as the artifact of ``app`` (``extra``: more push flags, e.g.
        ``--source``/``--revision``); returns its digest."""
        with tempfile.TemporaryDirectory(dir=self.work) as tmp:
            root = Path(tmp) / app
            for name, text in files.items():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_text(text)
            pushed = self.lockgate(
                "push", str(root), self.url(app, tag), "--sign", "key",
                "--key", str(self.key_dir / "cosign.key"), "-o", "json", *extra,
            ).json()  # fmt: skip
        return str(pushed["digest"])

    def url(self, app: str, tag: str = "latest") -> str:
        return self.registry.oci(f"{self.suffix}/{app}", f":{tag}")

    # ---- Flux --------------------------------------------------------------------------------
    def flux(self, *args: str) -> str:
        proc = subprocess.run(
            [str(flux_world.cli()), f"--kubeconfig={self.cluster.kubeconfig}", *args],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            raise AssertionError(
                f"flux {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
            )
        return proc.stdout + proc.stderr

    def source(self, app: str, *, interval: str = "10m") -> dict[str, Any]:
        return {
            "apiVersion": SOURCE_API,
            "kind": "OCIRepository",
            "metadata": {"name": self.name(app), "namespace": self.flux_ns},
            "spec": {
                "interval": interval,
                "url": self.url(app).rsplit(":", 1)[0],
                "ref": {"tag": "latest"},
                "insecure": True,
                "verify": {"provider": "cosign", "secretRef": {"name": self.keys_secret}},
            },
        }

    def kustomization(self, app: str, *, interval: str = "10m", **spec: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "interval": interval,
            "sourceRef": {"kind": "OCIRepository", "name": self.name(app)},
            "path": "./",
            "prune": True,
            "wait": True,
            "timeout": "2m",
        }
        body.update(spec)
        return {
            "apiVersion": KUSTOMIZE_API,
            "kind": "Kustomization",
            "metadata": {"name": self.name(app), "namespace": self.flux_ns},
            "spec": body,
        }

    def kustomization_of(self, app: str) -> dict[str, Any]:
        found = get_json(
            self.cluster, "kustomizations.kustomize.toolkit.fluxcd.io", self.name(app), self.flux_ns
        )
        assert found is not None, f"Kustomization {self.name(app)} is gone"
        return found

    def wait_applied(self, app: str, digest: str, *, timeout: float = 240) -> dict[str, Any]:
        """Until Flux's Kustomization is Ready with ``digest`` applied; fails with its conditions."""
        last: dict[str, Any] = {}

        def done() -> bool:
            nonlocal last
            self.controllers.check()
            last = self.kustomization_of(app)
            status = last.get("status") or {}
            conditions = {c.get("type"): c for c in status.get("conditions") or []}
            ready = conditions.get("Ready") or {}
            if ready.get("reason") == "BuildFailed":  # never to come right (a source may come late)
                raise AssertionError(f"Kustomization {self.name(app)}: {ready.get('message')}")
            applied = str(status.get("lastAppliedRevision", ""))
            return ready.get("status") == "True" and applied.endswith(digest)

        try:
            wait_for(f"Kustomization {self.name(app)} applied {digest}", done, timeout=timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; status: {json.dumps(last.get('status'), indent=1)}") from None
        return last

    def reconcile(self, kind: str, app: str) -> None:
        """Ask Flux for a reconcile now (what ``flux reconcile`` sets)."""
        self.cluster.kubectl(
            "annotate", "--overwrite", "-n", self.flux_ns, f"{kind}/{self.name(app)}",
            f"reconcile.fluxcd.io/requestedAt={time.time_ns()}",
        )  # fmt: skip


def flux_owned(obj: dict[str, Any]) -> list[str]:
    """What of Flux's ownership an object still carries: its owner labels, kustomize-controller's fields."""
    labels = obj["metadata"].get("labels") or {}
    found = [f"label {label}" for label in OWNER_LABELS if label in labels]
    found += [
        f"managedFields {m['manager']} ({m['operation']})"
        for m in obj["metadata"].get("managedFields") or []
        if m.get("manager") == "kustomize-controller"
    ]
    return found
