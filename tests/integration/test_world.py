"""The world's components are real and behave as their real selves: registry, cluster, git."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.world.gitremote import GitRemote
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


# ---- registry ----------------------------------------------------------------------------
def _push_blob(registry: Registry, repo: str, data: bytes, auth: tuple[str, str] | None = None) -> str:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    start = requests.post(f"{registry.url}/v2/{repo}/blobs/uploads/", auth=auth, timeout=10)
    assert start.status_code == 202, start.text
    location = start.headers["Location"]
    if location.startswith("/"):
        location = registry.url + location
    sep = "&" if "?" in location else "?"
    done = requests.put(
        f"{location}{sep}digest={digest}",
        data=data,
        auth=auth,
        timeout=10,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert done.status_code == 201, done.text
    return digest


def test_registry_stores_and_serves_a_blob(registry: Registry, unique: str) -> None:
    data = f"hello from {unique}".encode()
    digest = _push_blob(registry, f"world/{unique}", data)
    got = requests.get(f"{registry.url}/v2/world/{unique}/blobs/{digest}", timeout=10)
    assert got.status_code == 200
    assert got.content == data
    missing = requests.get(f"{registry.url}/v2/world/{unique}/blobs/sha256:{'0' * 64}", timeout=10)
    assert missing.status_code == 404


def test_registry_deletes_manifests(registry: Registry, unique: str) -> None:
    repo = f"world/{unique}"
    config = _push_blob(registry, repo, b"{}")
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": config, "size": 2},
            "layers": [],
        }
    ).encode()
    put = requests.put(
        f"{registry.url}/v2/{repo}/manifests/v1",
        data=manifest,
        timeout=10,
        headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"},
    )
    assert put.status_code == 201, put.text
    digest = put.headers["Docker-Content-Digest"]
    assert digest == "sha256:" + hashlib.sha256(manifest).hexdigest()
    deleted = requests.delete(f"{registry.url}/v2/{repo}/manifests/{digest}", timeout=10)
    assert deleted.status_code == 202
    assert requests.get(f"{registry.url}/v2/{repo}/manifests/v1", timeout=10).status_code == 404


def test_auth_registry_refuses_anonymous_and_accepts_its_user(auth_registry: Registry, unique: str) -> None:
    assert auth_registry.username and auth_registry.password
    anonymous = requests.post(f"{auth_registry.url}/v2/{unique}/blobs/uploads/", timeout=10)
    assert anonymous.status_code == 401
    assert anonymous.headers["WWW-Authenticate"].startswith("Basic")
    wrong = requests.get(f"{auth_registry.url}/v2/", auth=(auth_registry.username, "wrong"), timeout=10)
    assert wrong.status_code == 401
    digest = _push_blob(
        auth_registry, unique, b"secret", auth=(auth_registry.username, auth_registry.password)
    )
    assert digest.startswith("sha256:")


# ---- cluster -----------------------------------------------------------------------------
def test_server_side_apply_of_a_configmap(cluster: Cluster, unique: str) -> None:
    from kubernetes import client, dynamic

    api = cluster.api_client()
    client.CoreV1Api(api).create_namespace({"metadata": {"name": unique}})
    cms = dynamic.DynamicClient(api).resources.get(api_version="v1", kind="ConfigMap")
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": unique},
        "data": {"greeting": "hello"},
    }
    cms.server_side_apply(body=body, name="cfg", namespace=unique, field_manager="lockgate-test")
    live = client.CoreV1Api(api).read_namespaced_config_map("cfg", unique)
    assert live.data == {"greeting": "hello"}
    managers = [m.manager for m in live.metadata.managed_fields]
    assert "lockgate-test" in managers
    assert live.metadata.managed_fields[0].operation == "Apply"


def test_restricted_service_account_is_denied_by_rbac(cluster: Cluster, unique: str) -> None:
    from kubernetes import client

    kubeconfig = cluster.service_account_kubeconfig(
        "reader", unique, rules=[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]
    )
    core = client.CoreV1Api(cluster.api_client(kubeconfig))
    assert core.list_namespaced_config_map(unique).items is not None  # allowed
    with pytest.raises(client.ApiException) as denied:
        core.create_namespaced_config_map(unique, {"metadata": {"name": "nope"}})
    assert denied.value.status == 403
    assert 'cannot create resource "configmaps"' in json.loads(denied.value.body)["message"]
    with pytest.raises(client.ApiException) as other_ns:
        core.list_namespaced_secret("default")
    assert other_ns.value.status == 403


def test_pinned_kubectl_talks_to_the_cluster(cluster: Cluster) -> None:
    out = cluster.kubectl("version", "-o", "json")
    versions = json.loads(out.stdout)
    assert versions["serverVersion"]["gitVersion"] == versions["clientVersion"]["gitVersion"]
    assert versions["serverVersion"]["gitVersion"].startswith("v1.")


def _deployment(name: str, replicas: int, node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [{"name": "app", "image": "registry.example/app:1.0"}]}
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        },
    }


def _wait_for(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.25)
    return False


@pytest.mark.full
def test_deployment_rolls_out_on_kwok_nodes_and_unschedulable_stays_pending(
    full_cluster: Cluster, unique: str
) -> None:
    from kubernetes import client

    api = full_cluster.api_client()
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    core.create_namespace({"metadata": {"name": unique}})
    _wait_for(lambda: _has_default_sa(core, unique), 30)
    apps.create_namespaced_deployment(unique, _deployment("web", 2))
    apps.create_namespaced_deployment(unique, _deployment("stuck", 1, {"no-such-node": "true"}))

    def available(name: str) -> bool:
        dep = apps.read_namespaced_deployment(name, unique)
        conditions = {c.type: c.status for c in (dep.status.conditions or [])}
        return conditions.get("Available") == "True" and (dep.status.available_replicas or 0) == 2

    assert _wait_for(lambda: available("web"), 60), full_cluster_logs(full_cluster)
    pods = core.list_namespaced_pod(unique, label_selector="app=web").items
    assert len(pods) == 2 and all(p.spec.node_name.startswith("kwok-node-") for p in pods)
    assert all(p.status.phase == "Running" for p in pods)
    stuck = core.list_namespaced_pod(unique, label_selector="app=stuck").items
    assert len(stuck) == 1
    assert stuck[0].status.phase == "Pending"
    scheduled = {c.type: (c.status, c.reason) for c in (stuck[0].status.conditions or [])}
    assert scheduled.get("PodScheduled") == ("False", "Unschedulable")
    dep = apps.read_namespaced_deployment("stuck", unique)
    assert (dep.status.available_replicas or 0) == 0


@pytest.mark.full
def test_job_completes_on_kwok_nodes(full_cluster: Cluster, unique: str) -> None:
    from kubernetes import client

    api = full_cluster.api_client()
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    core.create_namespace({"metadata": {"name": unique}})
    _wait_for(lambda: _has_default_sa(core, unique), 30)
    batch.create_namespaced_job(
        unique,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "once"},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "registry.example/job:1"}],
                    }
                }
            },
        },
    )

    def complete() -> bool:
        job = batch.read_namespaced_job("once", unique)
        return any(c.type == "Complete" and c.status == "True" for c in (job.status.conditions or []))

    assert _wait_for(complete, 60), full_cluster_logs(full_cluster)


def _has_default_sa(core: Any, namespace: str) -> bool:
    from kubernetes import client

    try:
        core.read_namespaced_service_account("default", namespace)
        return True
    except client.ApiException:
        return False


def full_cluster_logs(cluster: Cluster) -> str:
    from tests.world.errors import log_tail

    return "\n".join(f"--- {p.name}\n{log_tail(p.log, 10)}" for p in cluster.processes)


# ---- git ---------------------------------------------------------------------------------
def _git(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env_args = ["-c", "user.name=World Test", "-c", "user.email=world@example.invalid"]
    return subprocess.run(["git", *env_args, *args], cwd=cwd, capture_output=True, text=True, check=check)


def test_git_push_lands_and_non_fast_forward_is_rejected(
    git_remote: GitRemote, unique: str, tmp_path: Path
) -> None:
    url = git_remote.create(unique)
    one, two = tmp_path / "one", tmp_path / "two"
    _git("init", "-q", "-b", "main", str(one), cwd=tmp_path)
    (one / "a.txt").write_text("a\n")
    _git("add", "a.txt", cwd=one)
    _git("commit", "-q", "-m", "first", cwd=one)
    _git("push", "-q", url, "main", cwd=one)
    _git("clone", "-q", url, str(two), cwd=tmp_path)
    assert (two / "a.txt").read_text() == "a\n"
    # the second clone moves the remote on; the first one's push is now non-fast-forward
    (two / "b.txt").write_text("b\n")
    _git("add", "b.txt", cwd=two)
    _git("commit", "-q", "-m", "second", cwd=two)
    _git("push", "-q", "origin", "main", cwd=two)
    (one / "c.txt").write_text("c\n")
    _git("add", "c.txt", cwd=one)
    _git("commit", "-q", "-m", "third", cwd=one)
    rejected = _git("push", url, "main", cwd=one, check=False)
    assert rejected.returncode != 0
    assert "rejected" in rejected.stderr and "fetch first" in rejected.stderr
    head = _git("ls-remote", url, "refs/heads/main", cwd=tmp_path).stdout.split()[0]
    assert head == _git("rev-parse", "HEAD", cwd=two).stdout.strip()


@pytest.mark.full
def test_kwok_nodes_renew_their_leases(full_cluster: Cluster) -> None:
    """Without lease renewals the node-lifecycle controller marks the nodes, and so every pod
    on them, NotReady after its grace period: rollouts would flip back to unavailable."""
    from kubernetes import client

    coordination = client.CoordinationV1Api(full_cluster.api_client())

    def renew_times() -> dict[str, Any]:
        leases = coordination.list_namespaced_lease("kube-node-lease").items
        return {lease.metadata.name: lease.spec.renew_time for lease in leases}

    first = renew_times()
    assert {f"kwok-node-{i}" for i in range(3)} <= set(first)
    assert _wait_for(lambda: all(renew_times()[n] != first[n] for n in first if n.startswith("kwok")), 60)
