"""Tenants: a sync with ``serviceAccountName`` makes every request as that ServiceAccount.

The API server decides by the ServiceAccount's RBAC (impersonation), so a tenant's artifact
can create only what its Role allows; a refusal names the verb, the resource and the
ServiceAccount. The runner's own identity (the admin here) holds more than the tenant.
"""

from __future__ import annotations

from pathlib import Path

from lockgate.errors import ExitCode
from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from tests.integration.history_support import sync_file
from tests.integration.reconcile_support import configmap, dump, get, push_tree
from tests.integration.tenants_support import tenant
from tests.world.kube import Cluster
from tests.world.registry import Registry


def test_a_tenant_creates_what_its_role_allows_and_is_refused_the_rest(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns, mine, theirs = f"{unique}-r", f"{unique}-a", f"{unique}-b"
    for ns in (runner_ns, mine, theirs):
        cluster.kubectl("create", "namespace", ns)
    tenant(cluster, runner_ns, mine, "team-a")
    kube = Kube.from_kubeconfig(cluster.kubeconfig)

    allowed = push_tree(registry, f"{unique}/ok", {"cm.yaml": dump(configmap("web", mine, {"v": "1"}))})
    [sync] = config.load(
        sync_file(tmp_path / "ok.yaml", "team-a-ok", allowed, runner_ns, serviceAccountName="team-a")
    ).syncs
    result = pipeline.reconcile(sync, kube=kube)
    assert result.error is None, result.error
    obj = get(cluster, "configmap", "web", mine)
    assert obj is not None and obj["data"] == {"v": "1"}

    beyond = push_tree(
        registry,
        f"{unique}/beyond",
        {"cm.yaml": dump(configmap("web2", mine, {"v": "1"}), configmap("sneak", theirs, {"v": "1"}))},
    )
    [sync] = config.load(
        sync_file(tmp_path / "beyond.yaml", "team-a-beyond", beyond, runner_ns, serviceAccountName="team-a")
    ).syncs
    result = pipeline.reconcile(sync, kube=kube)
    assert result.error is not None and result.error.exit_code == ExitCode.APPLY
    message = result.error.message
    assert f"ServiceAccount {runner_ns}/team-a" in message and "configmaps" in message and theirs in message
    assert get(cluster, "configmap", "sneak", theirs) is None

    # the same artifact without the tenant runs as the runner (the admin) and succeeds
    [admin] = config.load(sync_file(tmp_path / "admin.yaml", "admin-beyond", beyond, runner_ns)).syncs
    assert pipeline.reconcile(admin, kube=kube).error is None


def test_default_service_account_makes_a_forgotten_one_fail_closed(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns, app = f"{unique}-r", f"{unique}-a"
    for ns in (runner_ns, app):
        cluster.kubectl("create", "namespace", ns)
    url = push_tree(registry, f"{unique}/x", {"cm.yaml": dump(configmap("x", app, {"v": "1"}))})
    path = tmp_path / "syncs.yaml"
    sync_file(path, "forgot", url, runner_ns)
    runner = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Runner",
        "metadata": {"name": "runner"},
        "spec": {"defaultServiceAccount": "nobody"},
    }
    path.write_text(dump(runner) + "---\n" + path.read_text())
    [sync] = config.load(path).syncs
    assert sync.service_account_name == "nobody"
    result = pipeline.reconcile(sync, kube=Kube.from_kubeconfig(cluster.kubeconfig))
    assert result.error is not None and f"ServiceAccount {runner_ns}/nobody" in result.error.message
    assert get(cluster, "configmap", "x", app) is None
