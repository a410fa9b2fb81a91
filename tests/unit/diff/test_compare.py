"""Comparing two sets of objects (a pushed artifact against local manifests) into a change set."""

from __future__ import annotations

from typing import Any

from lockgate.diff import changeset, fields
from lockgate.manifests import K8sObject


def _obj(kind: str, name: str, **body: Any) -> K8sObject:
    api = "apps/v1" if kind == "Deployment" else "v1"
    return K8sObject(
        body={"apiVersion": api, "kind": kind, "metadata": {"name": name}, **body}, file="f", line=1
    )


def test_equal_sets() -> None:
    objs = [_obj("ConfigMap", "a", data={"k": "v"})]
    result = changeset.compare(objs, objs)
    assert not result.changed
    assert result.counts()["unchanged"] == 1


def test_created_deleted_configured_with_paths() -> None:
    before = [
        _obj(
            "Deployment",
            "web",
            spec={"replicas": 1, "template": {"spec": {"containers": [{"name": "app", "image": "a:1"}]}}},
        ),
        _obj("ConfigMap", "old"),
    ]
    after = [
        _obj(
            "Deployment",
            "web",
            spec={"replicas": 2, "template": {"spec": {"containers": [{"name": "app", "image": "a:2"}]}}},
        ),
        _obj("ConfigMap", "new", data={"x": "y"}),
    ]
    result = changeset.compare(before, after)
    assert [(str(e.key), e.action.value) for e in result.entries] == [
        ("ConfigMap/new", "created"),
        ("ConfigMap/old", "deleted"),
        ("Deployment.apps/web", "configured"),
    ]
    assert [(c.path, c.before, c.after) for c in result.entries[2].changes] == [
        ("spec.replicas", 1, 2),
        ("spec.template.spec.containers[name=app].image", "a:1", "a:2"),
    ]


def test_secret_values_never_show() -> None:
    before = [_obj("Secret", "s", data={"same": "c2VjcmV0", "changed": "b2xk"})]
    after = [_obj("Secret", "s", data={"same": "c2VjcmV0", "changed": "bmV3"})]
    result = changeset.compare(before, after)
    assert "b2xk" not in str(result.to_json()) and "bmV3" not in result.table()
    assert [(c.path, c.before, c.after) for c in result.entries[0].changes] == [
        ("data.changed", fields.MASK_BEFORE, fields.MASK_AFTER)
    ]


def test_string_data_equal_to_data_is_unchanged() -> None:
    before = [_obj("Secret", "s", data={"p": "eA=="})]
    after = [_obj("Secret", "s", stringData={"p": "x"})]
    assert not changeset.compare(before, after).changed
