"""The install manifests (deploy/) against the world's full cluster, with the real kustomize.

Each base and variant is built by the pinned ``kustomize`` exactly as shipped and applied
server-side. The cluster is shared by the tests, so the built objects are then moved into
this test's own namespaces (``lockgate-system`` and ``apps`` renamed, cluster-scoped names
suffixed): nothing else in them changes. The Pods must be admitted by the API server's
Pod Security admission at the ``restricted`` level and scheduled on kwok nodes; then the
real ``lockgate`` CLI runs on the host as the deployed ServiceAccount (a token from the
TokenRequest API) and reconciles with exactly the RBAC the manifests grant.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.errors import ExitCode
from runner.pipeline import config
from tests.integration import serve_support
from tests.integration.reconcile_support import configmap, dump, get, push_tree
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = [pytest.mark.world, pytest.mark.full]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
LOCKGATE = Path(sys.executable).with_name("lockgate")
CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
}


def build(path: Path) -> list[dict[str, Any]]:
    """``kustomize build path``; fails with kustomize's message."""
    result = subprocess.run(
        [str(binaries.binary("kustomize")), "build", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 0, f"kustomize build {path} failed:\n{result.stderr}"
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def with_config(tmp_path: Path, base: str, text: str) -> Path:
    """An overlay of ``deploy/<base>`` whose --config file is ``text`` (as a user's overlay)."""
    overlay = tmp_path / f"overlay-{base.replace('/', '-')}"
    overlay.mkdir()
    (overlay / "config.yaml").write_text(text)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(DEPLOY / base, overlay)],
        "configMapGenerator": [{"name": "lockgate-config", "behavior": "replace", "files": ["config.yaml"]}],
    }
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return overlay


def relocate(docs: list[dict[str, Any]], namespaces: dict[str, str], suffix: str) -> list[dict[str, Any]]:
    """The same objects in this test's namespaces, cluster-scoped names made unique."""
    moved: list[dict[str, Any]] = json.loads(json.dumps(docs))
    for doc in moved:
        meta = doc["metadata"]
        if doc["kind"] == "Namespace":
            meta["name"] = namespaces[meta["name"]]
        elif doc["kind"] in CLUSTER_SCOPED:
            meta["name"] += suffix
        if "namespace" in meta:
            meta["namespace"] = namespaces[meta["namespace"]]
        for subject in doc.get("subjects", []):
            subject["namespace"] = namespaces[subject["namespace"]]
        if doc.get("roleRef", {}).get("kind") == "ClusterRole":
            doc["roleRef"]["name"] += suffix
        if doc["kind"] == "ValidatingAdmissionPolicyBinding":
            doc["spec"]["policyName"] += suffix
    return moved


def apply(cluster: Cluster, docs: list[dict[str, Any]]) -> None:
    cluster.kubectl("apply", "--server-side", "--field-manager=lockgate-test", "-f", "-", input=dump(*docs))


def pods(cluster: Cluster, namespace: str, selector: str) -> list[dict[str, Any]]:
    out = cluster.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "json").stdout
    items: list[dict[str, Any]] = json.loads(out)["items"]
    return items


def running_on_kwok(cluster: Cluster, namespace: str, selector: str) -> dict[str, Any]:
    """The first Pod matching ``selector`` once it is scheduled on a kwok node and started
    (Running; kwok completes a Job's Pod at once: Succeeded)."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        for pod in pods(cluster, namespace, selector):
            node = pod["spec"].get("nodeName", "")
            if node.startswith("kwok-node-") and pod.get("status", {}).get("phase") in (
                "Running",
                "Succeeded",
            ):
                return pod
        time.sleep(0.5)
    events = cluster.kubectl("get", "events", "-n", namespace, "-o", "wide", check=False).stdout
    raise AssertionError(
        f"no Pod {selector} Running on a kwok node in {namespace}; events:\n{events[-3000:]}"
    )


@pytest.fixture
def token_kubeconfig(full_cluster: Cluster, tmp_path: Path) -> Iterator[Any]:
    """``make(namespace, name)``: a kubeconfig with a TokenRequest token of that ServiceAccount
    (the token a Pod gets), removed after the test."""
    made: list[Path] = []

    def make(namespace: str, name: str) -> Path:
        token = full_cluster.kubectl("create", "token", name, "-n", namespace, "--duration=1h").stdout.strip()
        path = tmp_path / f"{namespace}-{name}.kubeconfig"
        path.touch(mode=0o600)
        user = {"name": "sa", "user": {"token": token}}
        cluster_entry = {
            "name": "world",
            "cluster": {"server": full_cluster.server, "certificate-authority": str(full_cluster.ca)},
        }
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [cluster_entry],
                    "users": [user],
                    "contexts": [{"name": "sa", "context": {"cluster": "world", "user": "sa"}}],
                    "current-context": "sa",
                }
            )
        )
        made.append(path)
        return path

    yield make
    for path in made:
        path.unlink(missing_ok=True)


def lockgate(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return subprocess.run([str(LOCKGATE), *args], capture_output=True, text=True, env=env, timeout=300)


def runner_doc(namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Runner",
        "metadata": {"name": "runner"},
        "spec": {"namespace": namespace, **spec},
    }


def sync_doc(name: str, url: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": name},
        "spec": {"url": url, "interval": "5m", "verify": {"insecureSkip": True}, **spec},
    }


def test_the_shipped_example_config_loads() -> None:
    loaded = config.load(DEPLOY / "common" / "config.yaml")
    assert loaded.runner.default_service_account == "lockgate-apply"
    assert [s.service_account_name for s in loaded.syncs] == ["lockgate-apply"]
    assert [s.source.warnings for s in loaded.syncs] == [()]  # its keyless identity pins the repository


def test_every_base_and_variant_builds() -> None:
    kinds = {
        base: sorted({d["kind"] for d in build(DEPLOY / base)})
        for base in (
            "runner",
            "runner-servicemonitor",
            "cronjob",
            "rbac/namespaced",
            "rbac/cluster",
            "rbac/tenant",
        )
    }
    assert kinds["runner"] == ["ConfigMap", "Deployment", "Namespace", "Service", "ServiceAccount"]
    assert "ServiceMonitor" in kinds["runner-servicemonitor"]
    assert kinds["cronjob"] == ["ConfigMap", "CronJob", "Namespace", "ServiceAccount"]
    assert "ClusterRole" in kinds["rbac/cluster"] and "Role" not in kinds["rbac/cluster"]
    assert "Role" in kinds["rbac/namespaced"]
    assert "ValidatingAdmissionPolicy" in kinds["rbac/tenant"] and "Role" in kinds["rbac/tenant"]
    for base in ("runner", "cronjob"):
        [image] = {
            c["image"]
            for d in build(DEPLOY / base)
            if d["kind"] in ("Deployment", "CronJob")
            for c in (d["spec"].get("template") or d["spec"]["jobTemplate"]["spec"]["template"])["spec"][
                "containers"
            ]
        }
        assert image == "ghcr.io/lockgate-dev/lockgate:0.1.0"


def test_the_servicemonitor_variant_applies_but_its_kind_needs_the_operators_crd(
    full_cluster: Cluster, unique: str
) -> None:
    """The component is separate because the CRD may be absent: without it the API server
    refuses just that object (the world has no Prometheus Operator)."""
    docs = relocate(
        build(DEPLOY / "runner-servicemonitor"), {"lockgate-system": f"{unique}-sys"}, f"-{unique}"
    )
    monitor = [d for d in docs if d["kind"] == "ServiceMonitor"]
    rest = [d for d in docs if d["kind"] != "ServiceMonitor"]
    assert len(monitor) == 1 and monitor[0]["spec"]["endpoints"][0]["port"] == "http-metrics"
    apply(full_cluster, rest)
    refused = full_cluster.kubectl(
        "apply",
        "--server-side",
        "--field-manager=lockgate-test",
        "-f",
        "-",
        input=dump(*monitor),
        check=False,
    )
    assert refused.returncode != 0 and "ServiceMonitor" in refused.stderr


def test_namespaced_install_runs_restricted_pods_and_reconciles_with_exactly_its_rbac(
    full_cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, token_kubeconfig: Any
) -> None:
    sys_ns, apps, other = f"{unique}-sys", f"{unique}-apps", f"{unique}-other"
    namespaces = {"lockgate-system": sys_ns, "apps": apps}
    url = push_tree(registry, f"{unique}/apps", {"cm.yaml": dump(configmap("web", apps, {"v": "1"}))})
    text = dump(
        runner_doc(sys_ns, defaultServiceAccount="lockgate-apply", noCrossNamespaceRefs=True),
        sync_doc("web", url, prune=True, wait=True),
    )
    runner = relocate(build(with_config(tmp_path, "runner", text)), namespaces, f"-{unique}")
    cronjob = relocate(build(with_config(tmp_path, "cronjob", text)), namespaces, f"-{unique}")
    rbac = relocate(build(DEPLOY / "rbac" / "namespaced"), namespaces, f"-{unique}")
    apply(full_cluster, runner)  # the base creates the namespace the RBAC variant binds in
    apply(full_cluster, rbac)
    apply(full_cluster, [d for d in cronjob if d["kind"] == "CronJob"])
    full_cluster.kubectl("create", "namespace", other)

    # the namespace enforces "restricted": a Pod without the security context is refused ...
    labels = json.loads(full_cluster.kubectl("get", "namespace", sys_ns, "-o", "json").stdout)["metadata"][
        "labels"
    ]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    refused = full_cluster.kubectl(
        "run", "plain", "-n", sys_ns, "--image=busybox", "--dry-run=server", check=False
    )
    assert refused.returncode != 0 and 'violates PodSecurity "restricted:latest"' in refused.stderr
    # ... and the Deployment's and the CronJob's Pods are admitted and scheduled on kwok nodes
    pod = running_on_kwok(full_cluster, sys_ns, "app.kubernetes.io/component=runner")
    [container] = pod["spec"]["containers"]
    assert container["args"][:3] == ["serve", "--config", "/etc/lockgate/config.yaml"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {m["mountPath"] for m in container["volumeMounts"]} >= {"/tmp", "/etc/lockgate"}
    assert pod["spec"]["serviceAccountName"] == "lockgate"
    full_cluster.kubectl("create", "job", "manual", "--from=cronjob/lockgate", "-n", sys_ns)
    job_pod = running_on_kwok(full_cluster, sys_ns, "job-name=manual")
    assert job_pod["spec"]["containers"][0]["args"][:3] == [
        "reconcile",
        "--config",
        "/etc/lockgate/config.yaml",
    ]

    # the runner, as the deployed ServiceAccount, with the config the ConfigMap holds
    as_runner = token_kubeconfig(sys_ns, "lockgate")
    [cm] = [d for d in runner if d["kind"] == "ConfigMap"]
    cfg = tmp_path / "config.yaml"
    cfg.write_text(cm["data"]["config.yaml"])
    done = lockgate("reconcile", "--config", str(cfg), "--kubeconfig", str(as_runner), "--output", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert get(full_cluster, "configmap", "web", apps) is not None
    lease = get(full_cluster, "lease", "lockgate-web", sys_ns)
    assert lease is not None

    # serve, as the Deployment runs it, with the same identity: Leases, the requestedAt
    # watch, a pass, and a clean stop (its membership Lease deleted)
    served_url = push_tree(
        registry, f"{unique}/served", {"cm.yaml": dump(configmap("served", apps, {"v": "1"}))}
    )
    served = serve_support.start_serve(
        full_cluster,
        tmp_path / "serve",
        [serve_support.sync_doc("served", served_url, sys_ns)],
        runner={"namespace": sys_ns, "defaultServiceAccount": "lockgate-apply", "noCrossNamespaceRefs": True},
        kubeconfig=as_runner,
    )
    try:
        served.wait_sync_ready("served")
    finally:
        code = served.stop()
    assert code == 0, served.tail()
    assert "permission denied" not in served.log.read_text(), served.tail()
    assert get(full_cluster, "configmap", "served", apps) is not None

    # outside the Role: a ConfigMap in a namespace lockgate-apply has no Role in
    sneak_url = push_tree(
        registry, f"{unique}/sneak", {"cm.yaml": dump(configmap("sneak", other, {"v": "1"}))}
    )
    sneak = tmp_path / "sneak.yaml"
    sneak.write_text(
        dump(runner_doc(sys_ns, defaultServiceAccount="lockgate-apply"), sync_doc("sneak", sneak_url))
    )
    denied = lockgate("reconcile", "--config", str(sneak), "--kubeconfig", str(as_runner))
    assert denied.returncode == ExitCode.APPLY, denied.stdout + denied.stderr
    tenant = f"ServiceAccount {sys_ns}/lockgate-apply"
    # the first request outside the Role is refused, naming the verb, resource and account
    pattern = rf"permission denied: {tenant} cannot (\w+) configmaps in namespace {other}"
    found = re.search(pattern, denied.stderr)
    assert found is not None and found[1] in ("list", "get", "create", "patch"), denied.stderr
    assert get(full_cluster, "configmap", "sneak", other) is None

    # impersonating any other ServiceAccount is refused to the runner, even a powerful one
    full_cluster.kubectl("create", "serviceaccount", "powerful", "-n", sys_ns)
    full_cluster.kubectl(
        "create",
        "rolebinding",
        "powerful",
        "-n",
        apps,
        "--clusterrole=admin",
        f"--serviceaccount={sys_ns}:powerful",
    )
    other_sa = tmp_path / "other-sa.yaml"
    other_sa.write_text(dump(runner_doc(sys_ns), sync_doc("other-sa", url, serviceAccountName="powerful")))
    denied = lockgate("reconcile", "--config", str(other_sa), "--kubeconfig", str(as_runner))
    out = denied.stdout + denied.stderr
    assert denied.returncode != 0, out
    assert f"the runner's identity cannot impersonate ServiceAccount {sys_ns}/powerful" in out, out
    assert f"'impersonate' verb on 'serviceaccounts' named powerful in namespace {sys_ns}" in out
    assert f'User "system:serviceaccount:{sys_ns}:lockgate" cannot impersonate' in out

    # without impersonation the runner itself may write nothing: not even its inventory
    itself = tmp_path / "itself.yaml"
    itself.write_text(dump(runner_doc(sys_ns), sync_doc("itself", url)))
    denied = lockgate("reconcile", "--config", str(itself), "--kubeconfig", str(as_runner))
    out = denied.stdout + denied.stderr
    assert denied.returncode != 0, out
    assert "permission denied: the runner's identity cannot" in out, out
    assert f'User "system:serviceaccount:{sys_ns}:lockgate" cannot' in out


def test_cluster_install_applies_cluster_scoped_objects_as_lockgate_apply(
    full_cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, token_kubeconfig: Any
) -> None:
    sys_ns, created = f"{unique}-sys", f"{unique}-new"
    namespaces = {"lockgate-system": sys_ns}
    url = push_tree(
        registry,
        f"{unique}/platform",
        {
            "ns.yaml": dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": created}}),
            "cm.yaml": dump(configmap("platform", created, {"v": "1"})),
        },
    )
    text = dump(
        runner_doc(sys_ns, defaultServiceAccount="lockgate-apply"), sync_doc("platform", url, wait=True)
    )
    runner = relocate(build(with_config(tmp_path, "cronjob", text)), namespaces, f"-{unique}")
    apply(full_cluster, runner)
    apply(full_cluster, relocate(build(DEPLOY / "rbac" / "cluster"), namespaces, f"-{unique}"))
    as_runner = token_kubeconfig(sys_ns, "lockgate")
    [cm] = [d for d in runner if d["kind"] == "ConfigMap"]
    cfg = tmp_path / "config.yaml"
    cfg.write_text(cm["data"]["config.yaml"])
    done = lockgate("reconcile", "--config", str(cfg), "--kubeconfig", str(as_runner))
    assert done.returncode == 0, done.stdout + done.stderr
    assert get(full_cluster, "configmap", "platform", created) is not None
    # the runner itself still holds no rights on workloads
    denied = full_cluster.kubectl(
        "auth",
        "can-i",
        "create",
        "configmaps",
        "-n",
        created,
        f"--as=system:serviceaccount:{sys_ns}:lockgate",
        check=False,
    )
    assert denied.stdout.strip() == "no"
