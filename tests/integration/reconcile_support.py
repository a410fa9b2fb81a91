"""Helpers for the reconcile tests: push manifest trees as artifacts, run passes, read the cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lockgate import registry
from lockgate.artifact import manifest, pack
from lockgate.signing.options import VerifyOptions
from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

LOCKGATE = [sys.executable, "-m", "lockgate"]


def push_tree(reg: Registry, repo: str, files: dict[str, str], tag: str = "latest") -> str:
    """Pack ``files`` (path -> text) as a Flux artifact; returns ``oci://host/repo:tag@digest``."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "src"
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        return push_directory(reg, repo, root, tag)


def push_directory(reg: Registry, repo: str, root: Path, tag: str = "latest") -> str:
    """Pack ``root`` as it is (no checks: as another tool would) and push it; returns the URL with digest."""
    with tempfile.TemporaryDirectory() as tmp:
        layer = pack.pack(root, Path(tmp) / "layer.tgz")
        built = manifest.build(
            layer.digest, layer.size, {"org.opencontainers.image.revision": f"{tag}@sha1:0"}
        )
        ref = registry.parse(reg.oci(repo, f":{tag}"))
        client = registry.RegistryClient.for_reference(ref)
        for data, digest in ((built.config_blob, built.manifest.config.digest),):
            client.upload_blob(repo, data, digest=digest, size=len(data))
        with open(layer.path, "rb") as stream:
            client.upload_blob(repo, stream, digest=layer.digest, size=layer.size)
        digest = client.put_manifest(repo, tag, built.content, built.manifest.media_type)
    return reg.oci(repo, f":{tag}@{digest}")


def dump(*objects: dict[str, Any]) -> str:
    return yaml.safe_dump_all(list(objects), sort_keys=False)


def configmap(name: str, namespace: str, data: dict[str, str], **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **metadata},
        "data": data,
    }


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def deployment(
    name: str, ns: str, *, replicas: int = 1, node_selector: dict[str, str] | None = None, deadline: int = 600
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "registry.example/app:1.0"}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "progressDeadlineSeconds": deadline,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def run_pass(
    cluster: Cluster, url: str, name: str, runner_ns: str, *, kubeconfig: Path | None = None, **flags: Any
) -> Result:
    """One in-process pass (the library the CLI calls), unsigned unless a policy is given."""
    verify = flags.pop("verify", VerifyOptions(insecure_skip=True))
    options = config.sync_options(name=name, url=url, verify=verify, namespace=runner_ns, **flags)
    kube = Kube.from_kubeconfig(kubeconfig or cluster.kubeconfig)
    return pipeline.reconcile(options, kube=kube)


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def cli(
    cluster: Cluster,
    *args: str,
    kubeconfig: Path | None = None,
    timeout: float = 300,
    env: dict[str, str] | None = None,
) -> Run:
    """``lockgate reconcile ARGS`` as a child process; ``env`` replaces the environment."""
    if env is None:
        env = {**os.environ, "LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize"))}
    proc = subprocess.run(
        [*LOCKGATE, "reconcile", *args, f"--kubeconfig={kubeconfig or cluster.kubeconfig}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def events_of(cluster: Cluster, name: str, runner_ns: str) -> list[dict[str, Any]]:
    """The Events recorded on the parent ``lockgate-NAME``, oldest first."""
    out = cluster.kubectl(
        "get",
        "events",
        "-n",
        runner_ns,
        "--field-selector",
        f"involvedObject.name=lockgate-{name}",
        "-o",
        "json",
    )
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return sorted(items, key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["name"]))


def get(cluster: Cluster, kind: str, name: str, ns: str | None = None) -> dict[str, Any] | None:
    args = ["get", kind, name, "-o", "json", "--show-managed-fields"] + (["-n", ns] if ns else [])
    result = cluster.kubectl(*args, check=False)
    if result.returncode != 0:
        if "NotFound" in result.stderr:
            return None
        raise AssertionError(result.stderr)
    value: dict[str, Any] = json.loads(result.stdout)
    return value


def actions(result: Result) -> dict[str, str]:
    return {str(e.key): e.action.value for e in result.changeset.entries}
