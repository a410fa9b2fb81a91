"""The life of a sync, as a story: create, leave unchanged, update, prune, correct drift."""

from __future__ import annotations

import pytest

from runner.plan import applyset
from tests.integration.reconcile_support import (
    actions,
    configmap,
    dump,
    get,
    namespace,
    push_tree,
    run_pass,
)
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def test_creates_in_order_then_does_not_apply_unchanged_objects(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    files = {
        "all.yaml": dump(
            configmap("a", unique, {"k": "1"}), namespace(unique), configmap("b", unique, {"k": "2"})
        )
    }
    url = push_tree(registry, unique, files, tag="v1")
    first = run_pass(cluster, url, unique, f"{unique}-runner")
    assert first.error is None, first.error
    assert actions(first) == {
        f"Namespace/{unique}": "created",
        f"ConfigMap/{unique}/a": "created",
        f"ConfigMap/{unique}/b": "created",
    }
    assert str(first.changeset.entries[0].key) == f"Namespace/{unique}"
    live = get(cluster, "configmap", "a", unique)
    assert live is not None
    parent = get(cluster, "secret", f"lockgate-{unique}", f"{unique}-runner")
    assert parent is not None
    set_id = applyset.applyset_id(f"lockgate-{unique}", f"{unique}-runner")
    assert live["metadata"]["labels"][applyset.PART_OF_LABEL] == set_id
    assert parent["metadata"]["labels"][applyset.ID_LABEL] == set_id
    assert parent["metadata"]["annotations"][applyset.GROUP_KINDS_ANNOTATION] == "ConfigMap,Namespace"
    assert [m["manager"] for m in live["metadata"]["managedFields"]] == ["lockgate"]

    second = run_pass(cluster, url, unique, f"{unique}-runner")
    assert second.error is None, second.error
    assert set(actions(second).values()) == {"unchanged"}
    assert second.requests.get("patch", 0) <= 1, second.requests  # only the parent's last result
    third = run_pass(cluster, url, unique, f"{unique}-runner")
    assert set(actions(third).values()) == {"unchanged"}
    assert third.requests.get("patch", 0) == 0, third.requests
    after = get(cluster, "configmap", "a", unique)
    assert after is not None and after["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]


def test_updates_what_changed_and_prunes_what_was_removed(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-runner"
    v1 = {"all.yaml": dump(namespace(unique), *(configmap(f"c{i}", unique, {"k": "1"}) for i in range(4)))}
    assert run_pass(cluster, push_tree(registry, unique, v1, "v1"), unique, runner, prune=True).error is None
    v2 = {
        "all.yaml": dump(
            namespace(unique),
            configmap("c0", unique, {"k": "2"}),
            configmap("c1", unique, {"k": "1"}),
            configmap("c2", unique, {"k": "1"}),
        )
    }
    result = run_pass(cluster, push_tree(registry, unique, v2, "v2"), unique, runner, prune=True)
    assert result.error is None, result.error
    assert actions(result) == {
        f"Namespace/{unique}": "unchanged",
        f"ConfigMap/{unique}/c0": "configured",
        f"ConfigMap/{unique}/c1": "unchanged",
        f"ConfigMap/{unique}/c2": "unchanged",
        f"ConfigMap/{unique}/c3": "deleted",
    }
    changed = next(e for e in result.changeset.entries if e.key.name == "c0")
    assert [str(c) for c in changed.changes] == ['data.k: "1" -> "2"']
    assert get(cluster, "configmap", "c3", unique) is None
    assert get(cluster, "configmap", "c0", unique)["data"] == {"k": "2"}  # type: ignore[index]


def test_reverts_a_kubectl_edit_and_a_kubectl_apply(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-runner"
    url = push_tree(
        registry, unique, {"a.yaml": dump(namespace(unique), configmap("cfg", unique, {"k": "1"}))}
    )
    assert run_pass(cluster, url, unique, runner).error is None
    cluster.kubectl(
        "patch", "configmap", "cfg", "-n", unique, "--type=merge", "-p", '{"data":{"k":"edited","extra":"x"}}'
    )
    drifted = run_pass(cluster, url, unique, runner)
    assert drifted.error is None, drifted.error
    entry = next(e for e in drifted.changeset.entries if e.key.name == "cfg")
    assert entry.action.value == "configured"
    assert get(cluster, "configmap", "cfg", unique)["data"] == {"k": "1"}  # type: ignore[index]
    client_side = dump(configmap("cfg", unique, {"k": "client", "more": "z"}))
    cluster.kubectl("apply", "-f", "-", input=client_side)
    again = run_pass(cluster, url, unique, runner)
    assert again.error is None, again.error
    live = get(cluster, "configmap", "cfg", unique)
    assert live is not None and live["data"] == {"k": "1"}
    assert "kubectl.kubernetes.io/last-applied-configuration" not in (
        live["metadata"].get("annotations") or {}
    )
    assert set(actions(run_pass(cluster, url, unique, runner)).values()) == {"unchanged"}
