"""Classifying an object by its copies before and after an apply; the no-op fast path."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.diff.changeset import Action
from runner.plan import classify, desired


def cm(data: dict[str, str], *, managers: tuple[str, ...] = ("lockgate",)) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "resourceVersion": "7",
            "managedFields": [
                {"manager": m, "operation": "Apply" if m == "lockgate" else "Update", "fieldsV1": {}}
                for m in managers
            ],
        },
        "data": data,
    }


@pytest.mark.parametrize(
    ("before", "after", "took_over", "expected"),
    [
        ("same", cm({"k": "1"}), False, (Action.UNCHANGED, "", [])),
        ("changed", cm({"k": "2"}), False, (Action.CONFIGURED, "", ['data.k: "1" -> "2"'])),
        ("taken over only", cm({"k": "1"}), True, (Action.CONFIGURED, classify.TAKEN_OVER, [])),
        ("changed and taken over", cm({"k": "2"}), True, (Action.CONFIGURED, "", ['data.k: "1" -> "2"'])),
    ],
)
def test_compare(
    before: str, after: dict[str, Any], took_over: bool, expected: tuple[Action, str, list[str]]
) -> None:
    found = classify.compare(cm({"k": "1"}), after, took_over=took_over)
    assert (found.action, found.reason, [str(c) for c in found.changes]) == expected


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
    assert classify.is_subset(desired, live) is subset


def test_content_hash_is_stable_and_order_independent() -> None:
    assert desired.content_hash({"a": 1, "b": 2}) == desired.content_hash({"b": 2, "a": 1})
    assert desired.content_hash({"a": 1}) != desired.content_hash({"a": 2})
