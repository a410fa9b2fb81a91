"""What each RBAC variant of deploy/rbac lets its identities do, proved with their real tokens.

Each variant is built with the pinned kustomize, moved into this test's namespaces (as
tests/integration/test_deploy.py does) and applied to the world's API server; then every
request is made with a token the TokenRequest API issued to the ServiceAccount (what a Pod
mounts), so RBAC and admission answer exactly as they would in a cluster:

- ``cluster``: lockgate-apply is cluster-admin in all but name, as its comment says: it mints
  a token of another account, creates a Pod under another account, reads kube-system's
  Secrets. The test keeps that documentation honest.
- ``namespaced``: the runner reads Secrets in its own namespace only; lockgate-apply mints no
  token and touches no Secret outside its namespaces.
- ``tenant``: the tenant's lockgate-apply mints no token, runs no Pod as itself (admission
  policy), makes no token Secret, reads no Secret outside its namespace, yet applies what a
  tenant needs; the runner reads Secrets only in its own namespace and the tenant's, and a
  real ``lockgate reconcile`` as the runner applies a tenant's sync.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.reconcile_support import configmap, dump, get, push_tree
from tests.integration.test_deploy import DEPLOY, apply, build, lockgate, relocate, runner_doc, sync_doc
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = [pytest.mark.world]

#: a Pod the ``restricted`` Pod Security level admits, so only RBAC and the policy can refuse it
RESTRICTED = {
    "securityContext": {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    },
    "containers": [
        {
            "name": "app",
            "image": "registry.example/app:1",
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        }
    ],
}

Tokens = Callable[[str, str], Path]


@pytest.fixture
def as_account(cluster: Cluster, tmp_path: Path) -> Tokens:
    """``as_account(namespace, name)``: a kubeconfig holding a TokenRequest token of that account."""

    def make(namespace: str, name: str) -> Path:
        token = cluster.kubectl("create", "token", name, "-n", namespace, "--duration=1h").stdout.strip()
        path = tmp_path / f"{namespace}-{name}.kubeconfig"
        path.touch(mode=0o600)
        entry = {
            "name": "world",
            "cluster": {"server": cluster.server, "certificate-authority": str(cluster.ca)},
        }
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [entry],
            "users": [{"name": "sa", "user": {"token": token}}],
            "contexts": [{"name": "sa", "context": {"cluster": "world", "user": "sa"}}],
            "current-context": "sa",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    return make


def request(cluster: Cluster, kubeconfig: Path, *args: str, body: dict[str, Any] | None = None) -> str:
    """kubectl as that token; ``""`` when allowed, else the API server's refusal."""
    argv = [*args, "-f", "-"] if body is not None else list(args)
    done = cluster.kubectl(*argv, kubeconfig=kubeconfig, input=dump(body) if body else None, check=False)
    return "" if done.returncode == 0 else done.stderr.strip()


def pod(name: str, namespace: str, account: str) -> dict[str, Any]:
    spec = {**RESTRICTED, "serviceAccountName": account}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def token_secret(namespace: str, account: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": {
            "name": f"{account}-token",
            "namespace": namespace,
            "annotations": {"kubernetes.io/service-account.name": account},
        },
    }


def forbidden(refusal: str, *words: str) -> bool:
    return "forbidden" in refusal.lower() and all(word in refusal for word in words)


def wait_until_enforced(cluster: Cluster, body: dict[str, Any], policy: str, *, seconds: float = 60) -> bool:
    """Whether ``policy`` refuses ``body`` (a server-side dry run as admin) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        refused = request(cluster, cluster.kubeconfig, "create", "--dry-run=server", body=body)
        if forbidden(refused, f"ValidatingAdmissionPolicy '{policy}'"):
            return True
        time.sleep(0.5)
    return False


def install(cluster: Cluster, unique: str, variant: str, namespaces: dict[str, str]) -> list[dict[str, Any]]:
    """The runner base's namespace and accounts, then the variant, in this test's namespaces."""
    runner = [
        d for d in build(DEPLOY / "cronjob") if d["kind"] in ("Namespace", "ServiceAccount")
    ]  # the base creates the runner namespace and its account; the RBAC binds in it
    apply(cluster, relocate(runner, namespaces, f"-{unique}"))
    docs = relocate(build(DEPLOY / "rbac" / variant), namespaces, f"-{unique}")
    apply(cluster, docs)
    return docs


def test_the_cluster_variant_is_cluster_admin_in_all_but_name(
    cluster: Cluster, unique: str, as_account: Tokens
) -> None:
    # the variant says what it is
    said = (DEPLOY / "rbac" / "cluster" / "apply-clusterrole.yaml").read_text()
    assert "CLUSTER-ADMIN IN ALL BUT NAME" in said and "serviceaccounts/token" in said
    assert "not RBAC escalation" not in said
    sys_ns, other = f"{unique}-sys", f"{unique}-other"
    install(cluster, unique, "cluster", {"lockgate-system": sys_ns})
    cluster.kubectl("create", "namespace", other)
    cluster.kubectl("create", "serviceaccount", "admin-bot", "-n", other)
    cluster.kubectl("create", "secret", "generic", "db", "-n", other, "--from-literal=password=x")
    apply_sa = as_account(sys_ns, "lockgate-apply")
    # a token of the runner's own account, and of any other
    assert request(cluster, apply_sa, "create", "token", "lockgate", "-n", sys_ns) == ""
    assert request(cluster, apply_sa, "create", "token", "admin-bot", "-n", other) == ""
    # a Pod under another namespace's account (it would mount that account's token)
    assert request(cluster, apply_sa, "create", "--dry-run=server", body=pod("p", other, "admin-bot")) == ""
    # every Secret everywhere
    assert request(cluster, apply_sa, "get", "secret", "db", "-n", other) == ""
    assert request(cluster, apply_sa, "get", "secrets", "-n", "kube-system") == ""
    # the verbs it lacks are one token away: impersonation is refused to it directly
    refused = request(cluster, apply_sa, "get", "pods", "-n", other, "--as=system:admin")
    assert forbidden(refused, "impersonate"), refused
    # and the runner may impersonate it, so the runner's token is worth as much
    runner = as_account(sys_ns, "lockgate")
    assert request(cluster, runner, "auth", "can-i", "create", "serviceaccounts/token", "-n", other,
                   f"--as=system:serviceaccount:{sys_ns}:lockgate-apply") == ""  # fmt: skip


def test_the_namespaced_variant_keeps_secrets_and_tokens_in_their_namespace(
    cluster: Cluster, unique: str, as_account: Tokens
) -> None:
    sys_ns, apps, other = f"{unique}-sys", f"{unique}-apps", f"{unique}-other"
    install(cluster, unique, "namespaced", {"lockgate-system": sys_ns, "apps": apps})
    cluster.kubectl("create", "namespace", other)
    for namespace in (sys_ns, apps, other):
        cluster.kubectl("create", "secret", "generic", "s", "-n", namespace, "--from-literal=k=v")
    runner = as_account(sys_ns, "lockgate")
    # the runner reads Secrets in its own namespace, and nowhere else
    assert request(cluster, runner, "get", "secret", "s", "-n", sys_ns) == ""
    for namespace in (apps, other):
        refused = request(cluster, runner, "get", "secret", "s", "-n", namespace)
        assert forbidden(refused, 'cannot get resource "secrets"', namespace), refused
    refused = request(cluster, runner, "get", "secrets", "--all-namespaces")
    assert forbidden(refused, 'cannot list resource "secrets"'), refused
    refused = request(cluster, runner, "create", "token", "lockgate-apply", "-n", sys_ns)
    assert forbidden(refused, "serviceaccounts/token"), refused
    # lockgate-apply: its workloads' namespace, its inventories; no tokens, no other Secrets
    apply_sa = as_account(sys_ns, "lockgate-apply")
    assert request(cluster, apply_sa, "get", "secret", "s", "-n", apps) == ""
    refused = request(cluster, apply_sa, "get", "secret", "s", "-n", other)
    assert forbidden(refused, 'cannot get resource "secrets"'), refused
    for account, namespace in (("lockgate", sys_ns), ("lockgate-apply", sys_ns)):
        refused = request(cluster, apply_sa, "create", "token", account, "-n", namespace)
        assert forbidden(refused, "serviceaccounts/token"), refused
    refused = request(cluster, apply_sa, "create", "--dry-run=server", body=pod("p", sys_ns, "lockgate"))
    assert forbidden(refused, 'cannot create resource "pods"'), refused


def test_the_tenant_variant_denies_tokens_pods_as_itself_and_other_secrets(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, as_account: Tokens
) -> None:
    sys_ns, tenant, neighbour = f"{unique}-sys", f"{unique}-a", f"{unique}-other"
    docs = install(cluster, unique, "tenant", {"lockgate-system": sys_ns, "team-a": tenant})
    [policy] = [d["metadata"]["name"] for d in docs if d["kind"] == "ValidatingAdmissionPolicy"]
    try:
        cluster.kubectl("create", "namespace", neighbour)
        for namespace in (sys_ns, neighbour):
            cluster.kubectl("create", "secret", "generic", "s", "-n", namespace, "--from-literal=k=v")
        tenant_sa = as_account(tenant, "lockgate-apply")

        # what a tenant's artifacts need, in its namespace
        cluster.kubectl("create", "serviceaccount", "app", "-n", tenant, kubeconfig=tenant_sa)
        assert request(cluster, tenant_sa, "create", body=pod("app", tenant, "app")) == ""
        assert request(cluster, tenant_sa, "create", "secret", "generic", "own", "-n", tenant,
                       "--from-literal=k=v") == ""  # fmt: skip
        assert request(cluster, tenant_sa, "get", "secret", "own", "-n", tenant) == ""
        assert request(cluster, tenant_sa, "create", "deployment", "web", "-n", tenant,
                       "--image=registry.example/web:1") == ""  # fmt: skip

        # no token minting, for itself or any other account
        for account in ("lockgate-apply", "app"):
            refused = request(cluster, tenant_sa, "create", "token", account, "-n", tenant)
            assert forbidden(refused, 'cannot create resource "serviceaccounts/token"'), refused
        # no Pod as the identity lockgate applies with: the policy refuses it, whoever asks (the
        # API server takes a new policy up asynchronously: wait until a server-side dry run says so)
        enforced = wait_until_enforced(cluster, pod("as-apply", tenant, "lockgate-apply"), policy)
        assert enforced, f"ValidatingAdmissionPolicy {policy} never enforced"
        for kubeconfig in (tenant_sa, cluster.kubeconfig):
            refused = request(cluster, kubeconfig, "create", body=pod("as-apply", tenant, "lockgate-apply"))
            assert forbidden(refused, f"ValidatingAdmissionPolicy '{policy}'", "lockgate-apply"), refused
        # nor the token Secret the token controller would fill
        refused = request(cluster, tenant_sa, "create", body=token_secret(tenant, "lockgate-apply"))
        assert forbidden(refused, f"ValidatingAdmissionPolicy '{policy}'", "token Secrets"), refused
        # no Secret outside its namespace, not even the runner's
        for namespace in (sys_ns, neighbour):
            refused = request(cluster, tenant_sa, "get", "secret", "s", "-n", namespace)
            assert forbidden(refused, 'cannot get resource "secrets"'), refused
        refused = request(cluster, tenant_sa, "get", "secrets", "--all-namespaces")
        assert forbidden(refused, 'cannot list resource "secrets"'), refused
        # no RBAC kinds: it cannot hand its rights to an account of its own
        refused = request(cluster, tenant_sa, "create", "rolebinding", "mine", "-n", tenant,
                          "--role=lockgate-apply", f"--serviceaccount={tenant}:app")  # fmt: skip
        assert forbidden(refused, 'cannot create resource "rolebindings"'), refused

        # the runner: Secrets in its namespace and the tenant's only; impersonates lockgate-apply
        runner = as_account(sys_ns, "lockgate")
        assert request(cluster, runner, "get", "secret", "own", "-n", tenant) == ""
        assert request(cluster, runner, "get", "secret", "s", "-n", sys_ns) == ""
        refused = request(cluster, runner, "get", "secret", "s", "-n", neighbour)
        assert forbidden(refused, 'cannot get resource "secrets"'), refused
        refused = request(cluster, runner, "create", "token", "lockgate-apply", "-n", tenant)
        assert forbidden(refused, "serviceaccounts/token"), refused

        # and a real pass of a tenant's sync, as the runner, applies with exactly these rights
        url = push_tree(registry, f"{unique}/team-a", {"cm.yaml": dump(configmap("web", tenant, {"v": "1"}))})
        syncs = tmp_path / "syncs.yaml"
        syncs.write_text(
            dump(
                runner_doc(sys_ns, defaultServiceAccount="lockgate-apply", noCrossNamespaceRefs=True),
                sync_doc("web", url, namespace=tenant, prune=True),
            )
        )
        done = lockgate("reconcile", "--config", str(syncs), "--kubeconfig", str(runner), "--output", "json")
        assert done.returncode == 0, done.stdout + done.stderr
        assert get(cluster, "configmap", "web", tenant) is not None
        assert get(cluster, "secret", "lockgate-web", tenant) is not None  # its inventory, in its namespace
        # the same sync reaching into the neighbour's namespace is refused
        sneak_url = push_tree(
            registry, f"{unique}/sneak", {"cm.yaml": dump(configmap("sneak", neighbour, {"v": "1"}))}
        )
        syncs.write_text(dump(runner_doc(sys_ns, defaultServiceAccount="lockgate-apply"),
                              sync_doc("sneak", sneak_url, namespace=tenant)))  # fmt: skip
        denied = lockgate("reconcile", "--config", str(syncs), "--kubeconfig", str(runner))
        assert denied.returncode != 0 and f"ServiceAccount {tenant}/lockgate-apply cannot" in denied.stderr, (
            denied.stderr
        )
        assert get(cluster, "configmap", "sneak", neighbour) is None
    finally:
        # the policy is cluster-wide: leave no binding behind for later tests' namespaces
        for kind in ("validatingadmissionpolicybinding", "validatingadmissionpolicy"):
            cluster.kubectl("delete", kind, policy, "--ignore-not-found", check=False)
