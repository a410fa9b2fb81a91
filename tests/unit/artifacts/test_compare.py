"""The per-object diff: added, removed, changed with field paths, Secret values never shown."""

from __future__ import annotations

from typing import Any

from action.artifacts import compare
from lockgate.manifests import K8sObject


def _obj(kind: str, name: str, **body: Any) -> K8sObject:
    api = "apps/v1" if kind == "Deployment" else "v1"
    return K8sObject(
        body={"apiVersion": api, "kind": kind, "metadata": {"name": name}, **body}, file="f", line=1
    )


def test_equal_sets() -> None:
    objs = [_obj("ConfigMap", "a", data={"k": "v"})]
    result = compare.compare(objs, objs)
    assert result.equal and result.unchanged == 1
    assert result.to_json()["equal"] is True


def test_added_removed_changed_with_paths() -> None:
    before = [
        _obj(
            "Deployment",
            "web",
            spec={"replicas": 1, "template": {"spec": {"containers": [{"image": "a:1"}]}}},
        ),
        _obj("ConfigMap", "old"),
    ]
    after = [
        _obj(
            "Deployment",
            "web",
            spec={"replicas": 2, "template": {"spec": {"containers": [{"image": "a:2"}]}}},
        ),
        _obj("ConfigMap", "new", data={"x": "y"}),
    ]
    result = compare.compare(before, after)
    assert [(str(o.key), o.action.value) for o in result.objects] == [
        ("ConfigMap/new", "added"),
        ("ConfigMap/old", "removed"),
        ("Deployment.apps/web", "changed"),
    ]
    changed = result.objects[2]
    assert [(c.path, c.before, c.after) for c in changed.changes] == [
        ("spec.replicas", 1, 2),
        ("spec.template.spec.containers[0].image", "a:1", "a:2"),
    ]
    text = compare.render_text(result)
    assert "~ Deployment.apps/web (changed)\n    spec.replicas: 1 -> 2" in text
    assert text.endswith("3 objects differ: 1 added, 1 removed, 1 changed; 0 unchanged")


def test_added_and_removed_fields_show_absent() -> None:
    result = compare.compare(
        [_obj("ConfigMap", "a", data={"k": "v"})], [_obj("ConfigMap", "a", data={"n": "w"})]
    )
    assert {(c.path, c.before, c.after) for c in result.objects[0].changes} == {
        ("data.k", "v", "<absent>"),
        ("data.n", "<absent>", "w"),
    }


def test_secret_values_are_masked() -> None:
    before = [_obj("Secret", "s", data={"same": "c2VjcmV0", "changed": "b2xk", "gone": "eA=="})]
    after = [
        _obj("Secret", "s", data={"same": "c2VjcmV0", "changed": "bmV3", "added": "eQ=="}, type="Opaque")
    ]
    result = compare.compare(before, after)
    rendered = compare.render_text(result) + str(result.to_json())
    for secret in ("c2VjcmV0", "b2xk", "bmV3", "eA==", "eQ=="):
        assert secret not in rendered
    paths = {c.path: (c.before, c.after) for c in result.objects[0].changes}
    assert paths["data.changed"] == (compare.MASK_BEFORE, compare.MASK_AFTER)
    assert paths["data.gone"] == (compare.MASK_BEFORE, "<absent>")
    assert paths["type"] == ("<absent>", "Opaque")
    assert "data.same" not in paths


def test_secret_with_equal_values_is_unchanged() -> None:
    objs = [_obj("Secret", "s", stringData={"p": "x"})]
    assert compare.compare(objs, objs).equal
