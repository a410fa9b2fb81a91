"""A fleet on the world's one cluster: several runners, each with its own clusterName, runner
namespace, target namespace and key, attesting the releases of one repository.

Each runner is stood for by a ``lockgate reconcile --config`` configuration (a Runner document
with its ``clusterName`` and namespace, a Sync with ``attest`` and ``attest.onFailure``), run
in process through the library the CLI calls (``pipeline.reconcile``), as test_promotion.py
does; its key is a Secret of ``cosign.key`` and ``cosign.password`` in its runner namespace.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from lockgate.signing import attest, keys
from lockgate.signing.policy import KeyPolicy
from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from tests.integration.reconcile_support import LOCKGATE, configmap, deployment, dump, push_tree
from tests.integration.signing_support import client_for
from tests.world.kube import Cluster
from tests.world.registry import Registry

PASSWORD = b"fleet-pw"
#: five clusters of different names, sorted as ``lockgate fleet`` sorts its columns
CLUSTERS = ("ap-1", "eu-1", "eu-2", "us-1", "us-2")


def digest(url: str) -> str:
    return url.rsplit("@", 1)[1]


class Runners:
    """The runners of ``names``, each in its own namespaces with its own key."""

    def __init__(
        self,
        cluster: Cluster,
        registry: Registry,
        unique: str,
        tmp_path: Path,
        names: tuple[str, ...] = CLUSTERS,
    ) -> None:
        self.cluster, self.registry, self.repo, self.tmp = cluster, registry, unique, tmp_path
        self.kube = Kube.from_kubeconfig(cluster.kubeconfig)
        self.url = registry.oci(unique)
        self.id = unique[-6:]
        self.names = names
        self.keys: dict[str, keys.PrivateKey] = {}
        for name in names:
            pair = keys.generate_key_pair(PASSWORD)
            self.keys[name] = keys.load_private_key(pair.private_pem, PASSWORD)
            self.pub(name).write_bytes(pair.public_pem)
            for ns in (self.ns(name), self.ns(name, "run")):
                cluster.kubectl("create", "namespace", ns)
            secret = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "attest-key", "namespace": self.ns(name, "run")},
                "data": {
                    "cosign.key": base64.b64encode(pair.private_pem).decode(),
                    "cosign.password": base64.b64encode(PASSWORD).decode(),
                },
            }
            cluster.kubectl("apply", "-f", "-", input=json.dumps(secret))

    def ns(self, name: str, kind: str = "app") -> str:
        return f"{name}-{kind}-{self.id}"

    def pub(self, name: str) -> Path:
        return self.tmp / f"{name}.pub"

    def key_flags(self, names: tuple[str, ...] | None = None) -> list[str]:
        return [f"--key={self.pub(name)}" for name in names or self.names]

    def push(self, version: str, *, broken: bool = False) -> str:
        objects: list[dict[str, Any]] = [configmap("app", "default", {"version": version})]
        if broken:  # asks for a node no cluster has: unavailable with or without controllers
            objects.append(deployment("web", "default", node_selector={"no-such-node": "true"}))
        return push_tree(self.registry, self.repo, {"app.yaml": dump(*objects)}, tag=version)

    def config(self, name: str, **spec: Any) -> Path:
        runner = {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Runner",
            "spec": {"clusterName": name, "namespace": self.ns(name, "run")},
        }
        sync = {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Sync",
            "metadata": {"name": "app"},
            "spec": {
                "url": self.url,
                "semver": ">=1.0.0",
                "interval": "1m",
                "targetNamespace": self.ns(name),
                "wait": True,
                "timeout": "3s",
                "verify": {"insecureSkip": True},
                "attest": {"secretRef": {"name": "attest-key"}, "onFailure": True},
                **spec,
            },
        }
        path = self.tmp / f"{name}.yaml"
        path.write_text(yaml.safe_dump_all([runner, sync]))
        return path

    def run(self, name: str, **spec: Any) -> Result:
        (options,) = config.load(self.config(name, **spec)).syncs
        return pipeline.reconcile(options, kube=self.kube)

    def attestation(self, name: str, url: str) -> dict[str, Any]:
        """The predicate ``name``'s runner signed for ``url``'s digest (exactly one)."""
        found = attest.read(
            client_for(self.registry, self.repo),
            self.repo,
            digest(url),
            KeyPolicy(self.keys[name].public_key()),
        )
        (made,) = [a for a in found.attestations if a.predicate.get("cluster") == name]
        return made.predicate


def fleet(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``lockgate fleet ARGS`` as a user runs it."""
    return subprocess.run(
        [*LOCKGATE, "fleet", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
