"""Multi-tenant lockdown: ``Runner.spec.noCrossNamespaceRefs``, as Flux's --no-cross-namespace-refs.

A sync's namespace is its ``spec.namespace`` (else the Runner's): its inventory, Lease,
Events and ServiceAccount live there, and its Secret and ConfigMap references are read
there, by name only (a reference with a namespace is refused when the file is loaded).
The references that could still cross namespaces are a ``dependsOn`` on a sync of another
namespace: under the lockdown they are refused at load, naming the sync, the field and
both namespaces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lockgate.errors import UsageError
from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from tests.integration.reconcile_support import configmap, dump, get, push_tree
from tests.world.kube import Cluster
from tests.world.registry import Registry


def runner(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "lockgate.dev/v1alpha1", "kind": "Runner", "metadata": {"name": "r"}, "spec": spec}


def sync(name: str, **spec: Any) -> dict[str, Any]:
    body = {"url": "oci://registry.example/app:1", "interval": "5m", "verify": {"insecureSkip": True}}
    return {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": name},
        "spec": {**body, **spec},
    }


def test_a_depends_on_across_namespaces_is_refused_under_the_lockdown(tmp_path: Path) -> None:
    path = tmp_path / "syncs.yaml"
    docs = [sync("infra", namespace="platform"), sync("app", namespace="team-a", dependsOn=["infra"])]
    path.write_text(dump(runner(namespace="lockgate-system", noCrossNamespaceRefs=True), *docs))
    with pytest.raises(UsageError) as refused:
        config.load(path)
    message = refused.value.message
    assert (
        f"{path}:" in message
        and "Sync/app: spec.dependsOn[0]: Sync/infra is in namespace platform" in message
    )
    assert "not in this sync's namespace team-a" in message and "noCrossNamespaceRefs" in message

    # without the lockdown, and within one namespace under it, the same order is fine
    path.write_text(dump(runner(namespace="lockgate-system"), *docs))
    assert [s.name for s in config.load(path).syncs] == ["infra", "app"]
    same = [sync("infra", namespace="team-a"), sync("app", namespace="team-a", dependsOn=["infra"])]
    path.write_text(dump(runner(noCrossNamespaceRefs=True), *same))
    assert [s.name for s in config.load(path).syncs] == ["infra", "app"]
    # a sync without spec.namespace is in the Runner's
    path.write_text(dump(runner(namespace="team-a", noCrossNamespaceRefs=True), sync("infra"), same[1]))
    assert len(config.load(path).syncs) == 2


def test_a_reference_cannot_name_another_namespace(tmp_path: Path) -> None:
    path = tmp_path / "syncs.yaml"
    refs = sync(
        "app",
        namespace="team-a",
        secretRef={"name": "creds", "namespace": "lockgate-system"},
        postBuild={"substituteFrom": [{"kind": "Secret", "name": "vars", "namespace": "lockgate-system"}]},
    )
    path.write_text(dump(runner(noCrossNamespaceRefs=True), refs))
    with pytest.raises(UsageError) as refused:
        config.load(path)
    assert "Sync/app: spec.secretRef.namespace: unknown field" in refused.value.message
    assert "Sync/app: spec.postBuild.substituteFrom[0].namespace: unknown field" in refused.value.message


def test_references_are_read_in_the_syncs_own_namespace_only(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """The runner namespace holds the ConfigMap and the keys Secret; a tenant's sync in its own
    namespace naming them finds nothing there, and nothing is applied."""
    runner_ns, tenant_ns, app = f"{unique}-r", f"{unique}-t", f"{unique}-app"
    for ns in (runner_ns, tenant_ns, app):
        cluster.kubectl("create", "namespace", ns)
    cluster.kubectl("create", "configmap", "vars", "-n", runner_ns, "--from-literal=v=runner")
    cluster.kubectl("create", "secret", "generic", "keys", "-n", runner_ns, "--from-literal=a.pub=x")
    url = push_tree(registry, f"{unique}/x", {"cm.yaml": dump(configmap("x", app, {"v": "${v}"}))})
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    path = tmp_path / "syncs.yaml"

    substituting = sync(
        "vars",
        url=url,
        namespace=tenant_ns,
        postBuild={"substituteFrom": [{"kind": "ConfigMap", "name": "vars"}]},
    )
    path.write_text(dump(runner(namespace=runner_ns, noCrossNamespaceRefs=True), substituting))
    [options] = config.load(path).syncs
    result = pipeline.reconcile(options, kube=kube)
    assert result.error is not None
    assert f"ConfigMap/{tenant_ns}/vars (spec.postBuild.substituteFrom[0]): not found" in result.error.message

    verifying = sync("keys", url=url, namespace=tenant_ns, verify={"secretRef": {"name": "keys"}})
    path.write_text(dump(runner(namespace=runner_ns, noCrossNamespaceRefs=True), verifying))
    [options] = config.load(path).syncs
    result = pipeline.reconcile(options, kube=kube)
    assert result.error is not None
    assert f"Secret/{tenant_ns}/keys (spec.verify.secretRef.name): not found" in result.error.message
    assert get(cluster, "configmap", "x", app) is None
