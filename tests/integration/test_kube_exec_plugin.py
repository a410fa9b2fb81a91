"""Exec credential plugins against the real API server, as EKS, GKE and AKS kubeconfigs use them.

The plugin is a real executable (``kube_support.ExecPlugin``) answering with a real
ServiceAccount token, so the server's RBAC decides: what the account may do succeeds,
what it may not is denied by name. An expired or refused credential runs the plugin again.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lockgate.errors import AuthError
from runner.kube.client import Kube
from tests.integration.kube_support import (
    V1,
    V1BETA1,
    ExecPlugin,
    token,
    token_of,
    whoami,
    write_kubeconfig,
)
from tests.integration.reconcile_support import cli, configmap, dump, get, push_tree
from tests.world.kube import Cluster
from tests.world.pki import CertificateAuthority
from tests.world.registry import Registry

pytestmark = pytest.mark.world

#: what a pass needs in its namespace: the inventory Secret, the ConfigMaps it applies, Events
RUNNER_RULES = [
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "create", "patch"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create", "patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    # readable, not writable: the denial must name the verb
    {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list"]},
]
NAMESPACE_RULES = [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}]


def plugin_kubeconfig(cluster: Cluster, plugin: ExecPlugin, path: Path) -> Path:
    return write_kubeconfig(
        path,
        cluster.server,
        cluster={"certificate-authority": str(cluster.ca)},
        user={"exec": plugin.exec_config(installHint="the test writes it")},
    )


def service_account_token(cluster: Cluster, name: str, namespace: str, **rules: object) -> str:
    return token_of(cluster.service_account_kubeconfig(name, namespace, **rules))  # type: ignore[arg-type]


@pytest.mark.parametrize("api_version", [V1, V1BETA1])
def test_the_plugins_token_carries_the_service_accounts_rbac(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, api_version: str
) -> None:
    sa_token = service_account_token(
        cluster, "runner", unique, rules=RUNNER_RULES, cluster_rules=NAMESPACE_RULES
    )
    plugin = ExecPlugin(tmp_path / "plugin", api_version).write(token(sa_token))
    kubeconfig = plugin_kubeconfig(cluster, plugin, tmp_path / "kubeconfig")
    allowed = push_tree(registry, unique, {"a.yaml": dump(configmap("a", unique, {"k": "1"}))})
    run = cli(
        cluster, allowed, "--name", unique, "-n", unique, "--insecure-skip-verify", kubeconfig=kubeconfig
    )
    assert run.code == 0, run.err
    live = get(cluster, "configmap", "a", unique)
    assert live is not None and live["data"] == {"k": "1"}
    assert plugin.invocations()[0]["info"] == {
        "apiVersion": api_version,
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }

    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": unique},
        "spec": {"ports": [{"port": 80}]},
    }
    denied = push_tree(registry, unique, {"s.yaml": dump(service)}, tag="denied")
    run = cli(
        cluster, denied, "--name", unique, "-n", unique, "--insecure-skip-verify", kubeconfig=kubeconfig
    )
    assert run.code == 5, run.err
    assert f"cannot patch services in namespace {unique}" in run.err
    assert sa_token not in run.err + run.out


def test_the_credential_is_cached_until_it_expires_then_renewed(
    cluster: Cluster, unique: str, tmp_path: Path
) -> None:
    sa_token = service_account_token(cluster, "short", unique)
    plugin = ExecPlugin(tmp_path / "plugin").write(token(sa_token, expires_in=3))
    kube = Kube.from_kubeconfig(plugin_kubeconfig(cluster, plugin, tmp_path / "kubeconfig"))
    expected = f"system:serviceaccount:{unique}:short"
    assert [whoami(kube) for _ in range(5)] == [expected] * 5
    assert len(plugin.invocations()) == 1
    time.sleep(3.2)
    assert whoami(kube) == expected
    assert len(plugin.invocations()) == 2


def test_a_refused_token_runs_the_plugin_again_once(cluster: Cluster, unique: str, tmp_path: Path) -> None:
    sa_token = service_account_token(cluster, "renewed", unique)
    plugin = ExecPlugin(tmp_path / "plugin").write(token("revoked-" + sa_token[8:]), token(sa_token))
    kube = Kube.from_kubeconfig(plugin_kubeconfig(cluster, plugin, tmp_path / "kubeconfig"))
    assert whoami(kube) == f"system:serviceaccount:{unique}:renewed"
    assert len(plugin.invocations()) == 2
    assert kube.counts["create"] == 2  # the refused request, then the retry


def test_a_token_refused_again_is_an_auth_error_after_one_renewal(
    cluster: Cluster, unique: str, tmp_path: Path
) -> None:
    plugin = ExecPlugin(tmp_path / "plugin").write(token("first-bad"), token("second-bad"))
    kube = Kube.from_kubeconfig(plugin_kubeconfig(cluster, plugin, tmp_path / "kubeconfig"))
    with pytest.raises(AuthError, match=r"refused the credentials \(401 Unauthorized\)") as raised:
        whoami(kube)
    assert len(plugin.invocations()) == 2
    assert "bad" not in str(raised.value)


def test_a_plugins_client_certificate_is_used_and_renewed_in_memory(
    cluster: Cluster, unique: str, tmp_path: Path
) -> None:
    assert cluster.admin is not None
    (tmp_path / "stranger-ca").mkdir()
    stranger = CertificateAuthority.create(tmp_path / "stranger-ca")
    foreign = stranger.issue(tmp_path / "stranger-ca" / "mallory", "mallory")

    def pair(cert: Path, key: Path) -> dict[str, object]:
        return {"status": {"clientCertificateData": cert.read_text(), "clientKeyData": key.read_text()}}

    # a certificate the server does not accept, then the admin's
    plugin = ExecPlugin(tmp_path / "plugin").write(
        pair(foreign.cert, foreign.key), pair(cluster.admin.cert, cluster.admin.key)
    )
    kube = Kube.from_kubeconfig(plugin_kubeconfig(cluster, plugin, tmp_path / "kubeconfig"))
    assert whoami(kube) == "lockgate-admin"
    assert len(plugin.invocations()) == 2
