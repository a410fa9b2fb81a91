"""A GitOps repository with two clusters, their runners attesting for real, for ``lockgate preview``'s tests.

Two clusters are stood for by two runner configurations on the world's one cluster, as in the
promotion tests: each its own Runner ``clusterName`` (staging, production), runner namespace,
target namespace and attestation key (a Secret of ``cosign.key`` and ``cosign.password``), and
its own overlay (``commonMetadata``, a patch) and ``postBuild.substitute`` values. CI signs each
release with a release key; both syncs verify it with that key file. Production requires
staging's health attestation, so once staging attested a release production takes it on its
next pass. ``run`` is a real pass (``lockgate reconcile --config``'s library call), which
attests as a runner does.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import yaml

from lockgate import registry
from lockgate.signing import keys, sign
from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from tests.integration.reconcile_support import push_directory
from tests.world.kube import Cluster
from tests.world.registry import Registry

PASSWORD = b"runner-pw"
ENVS = ("staging", "production")


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


class GitOps:
    """One artifact repository, its release key, two clusters' runners and configurations."""

    def __init__(self, cluster: Cluster, reg: Registry, unique: str, tmp: Path) -> None:
        self.cluster, self.registry, self.repo, self.tmp = cluster, reg, unique, tmp
        self.kube = Kube.from_kubeconfig(cluster.kubeconfig)
        self.url = reg.oci(unique)
        self.id = unique[-6:]
        release = keys.generate_key_pair(PASSWORD)
        self.release = keys.load_private_key(release.private_pem, PASSWORD)
        (tmp / "release.pub").write_bytes(release.public_pem)
        wrong = keys.generate_key_pair(PASSWORD)
        (tmp / "wrong.pub").write_bytes(wrong.public_pem)
        for env in ENVS:
            pair = keys.generate_key_pair(PASSWORD)
            (tmp / f"{env}.pub").write_bytes(pair.public_pem)
            for ns in (self.ns(env), self.ns(env, "runner")):
                cluster.kubectl("create", "namespace", ns)
            secret = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "attest-key", "namespace": self.ns(env, "runner")},
                "data": {
                    "cosign.key": base64.b64encode(pair.private_pem).decode(),
                    "cosign.password": base64.b64encode(PASSWORD).decode(),
                },
            }
            cluster.kubectl("apply", "-f", "-", input=json.dumps(secret))

    def ns(self, env: str, kind: str = "apps") -> str:
        return f"{env}-{kind}-{self.id}"

    def publish(self, root: Path, version: str) -> str:
        """Push ``root`` as ``version`` and sign it with the release key; the digest."""
        url = push_directory(self.registry, self.repo, root, tag=version)
        sign.sign_with_key(registry.parse(url), self.release)
        return url.rsplit("@", 1)[1]

    def config(self, env: str, *, verify_key: str = "release.pub", **spec: Any) -> Path:
        runner = {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Runner",
            "spec": {"clusterName": env, "namespace": self.ns(env, "runner")},
        }
        verify: dict[str, Any] = {"key": str(self.tmp / verify_key)}
        if env == "production":
            verify["attestations"] = [{"cluster": "staging", "key": str(self.tmp / "staging.pub")}]
        sync = {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Sync",
            "metadata": {"name": "shop"},
            "spec": {
                "url": self.url,
                "semver": ">=1.0.0",
                "interval": "1m",
                "targetNamespace": self.ns(env),
                "prune": True,
                "wait": True,
                "timeout": "30s",
                "verify": verify,
                "attest": {"secretRef": {"name": "attest-key"}},
                **spec,
            },
        }
        path = self.tmp / "clusters" / f"{env}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump_all([runner, sync], sort_keys=False))
        return path

    def run(self, path: Path) -> Result:
        (options,) = config.load(path).syncs
        result = pipeline.reconcile(options, kube=self.kube)
        assert result.error is None, result.error
        return result


def dump(*objects: dict[str, Any]) -> str:
    return yaml.safe_dump_all(list(objects), sort_keys=False)


def configmap(
    name: str, data: dict[str, str], *, immutable: bool = False, **annotations: str
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}
    return {**body, "immutable": True} if immutable else body


def role_binding(name: str, role: str, **annotations: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}],
    }


def what_a_pass_did(result: Result) -> dict[str, tuple[str, tuple[str, ...]]]:
    """object -> (action, changed paths) of what a real pass created, configured or deleted."""
    return {
        str(e.key): (e.action.value, tuple(c.path for c in e.changes))
        for e in result.changeset.entries
        if e.action.value in ("created", "configured", "deleted")
    }


def what_the_preview_said(target: dict[str, Any]) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {
        o["object"]: (o["action"], tuple(c["path"] for c in o.get("changes", ())))
        for o in target["objects"]
        if o["action"] in ("created", "configured", "deleted")
    }
