"""Pre-flight before the first write (beyond Flux): the whole set is dry-run on the server,
so an object the API server refuses stops the pass with the cluster unchanged."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest

from tests.integration.reconcile_support import (
    actions,
    configmap,
    deployment,
    dump,
    get,
    namespace,
    push_tree,
    run_pass,
)
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def _members(secret: dict[str, Any]) -> list[str]:
    doc = json.loads(gzip.decompress(base64.b64decode(secret["data"]["inventory.json.gz"])))
    return sorted(str(m["id"]) for m in doc["members"])


def _refused_deployment(ns: str) -> dict[str, Any]:
    bad = deployment("web", ns)
    bad["spec"]["replicas"] = -1  # the API server's validation refuses it
    return bad


def test_a_refused_object_leaves_the_cluster_unchanged(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-runner"
    first = push_tree(
        registry, unique, {"a.yaml": dump(namespace(unique), configmap("cfg", unique, {"k": "1"}))}, tag="v1"
    )
    assert run_pass(cluster, first, unique, runner).error is None
    before = get(cluster, "configmap", "cfg", unique)
    inventory = get(cluster, "secret", f"lockgate-{unique}", runner)
    assert before is not None and inventory is not None

    files = {
        "a.yaml": dump(
            namespace(unique),
            configmap("cfg", unique, {"k": "2"}),
            configmap("new", unique, {"k": "x"}),
            _refused_deployment(unique),
        )
    }
    refused = run_pass(cluster, push_tree(registry, unique, files, tag="v2"), unique, runner)
    assert refused.error is not None and int(refused.error.exit_code) == 5, refused.error
    assert f"Deployment.apps/{unique}/web" in refused.error.message and "replicas" in refused.error.message
    after = get(cluster, "configmap", "cfg", unique)
    assert after is not None and after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert get(cluster, "configmap", "new", unique) is None
    unchanged = get(cluster, "secret", f"lockgate-{unique}", runner)
    assert unchanged is not None
    # the member list is not touched (only the pass's result is recorded, as for any failure)
    assert _members(unchanged) == _members(inventory) and len(_members(inventory)) == 2
    assert (
        unchanged["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"]
        == "ConfigMap,Namespace"
    )


def test_objects_of_a_crd_in_the_same_set_and_a_new_namespace_pass_the_preflight(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    group = f"{unique}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
    widget = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": unique}}
    files = {"a.yaml": dump(crd, namespace(unique), configmap("cfg", unique, {"k": "1"}), widget)}
    done = run_pass(cluster, push_tree(registry, unique, files), unique, f"{unique}-runner")
    assert done.error is None, done.error
    assert actions(done)[f"Widget.{group}/{unique}/w"] == "created"
