"""Normalisation and drift: Flux's rules, a readable diff, Secrets masked."""

from __future__ import annotations

from typing import Any

import pytest

from runner import normalize


def svc(ports: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", **meta},
        "spec": {"ports": ports},
    }


@pytest.mark.parametrize(
    ("name", "live", "desired", "drifted"),
    [
        ("defaultProtocolTCP", svc([{"port": 80, "protocol": "TCP"}]), svc([{"port": 80}]), False),
        ("portChanged", svc([{"port": 80, "protocol": "TCP"}]), svc([{"port": 81}]), True),
        (
            "serverMetadataIgnored",
            svc([{"port": 80}], resourceVersion="5", uid="u", managedFields=[{}], creationTimestamp="t"),
            svc([{"port": 80}]),
            False,
        ),
        ("labelAdded", svc([{"port": 80}]), svc([{"port": 80}], labels={"a": "b"}), True),
        (
            "statusIgnored",
            {**svc([{"port": 80}]), "status": {"loadBalancer": {}}},
            svc([{"port": 80}]),
            False,
        ),
        (
            "stringDataFoldedIntoData",
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"p": "c2VjcmV0"}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"p": "secret"}},
            False,
        ),
    ],
)
def test_drift(name: str, live: dict[str, Any], desired: dict[str, Any], drifted: bool) -> None:
    assert normalize.is_drifted(live, desired) is drifted


def test_field_changes_are_readable_paths() -> None:
    live = {
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "1"}},
        "data": {"k": "1", "gone": "x"},
    }
    desired = {"kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "2"}}, "data": {"k": "2"}}
    assert [str(c) for c in normalize.field_changes(live, desired)] == [
        'metadata.labels.a: "1" -> "2"',
        'data.gone: "x" -> <absent>',
        'data.k: "1" -> "2"',
    ]


def test_secret_values_are_masked_in_diffs() -> None:
    live = {"kind": "Secret", "metadata": {"name": "s"}, "data": {"p": "b2xk"}}
    desired = {"kind": "Secret", "metadata": {"name": "s"}, "data": {"p": "bmV3"}}
    changes = normalize.field_changes(live, desired)
    assert [str(c) for c in changes] == ['data.p: "***" -> "***"']
    assert "b2xk" not in repr(changes) and "bmV3" not in repr(changes)


@pytest.mark.parametrize(
    ("desired", "live", "subset"),
    [
        ({"a": 1}, {"a": 1, "b": 2}, True),
        ({"a": [{"x": 1}]}, {"a": [{"x": 1, "y": 2}]}, True),
        ({"a": [{"x": 1}]}, {"a": [{"x": 1}, {"x": 2}]}, False),
        ({"a": {"b": "1"}}, {"a": {"b": "2"}}, False),
        ({"a": 1}, {}, False),
    ],
)
def test_is_subset(desired: Any, live: Any, subset: bool) -> None:
    assert normalize.is_subset(desired, live) is subset


def test_content_hash_is_stable_and_order_independent() -> None:
    assert normalize.content_hash({"a": 1, "b": 2}) == normalize.content_hash({"b": 2, "a": 1})
    assert normalize.content_hash({"a": 1}) != normalize.content_hash({"a": 2})
