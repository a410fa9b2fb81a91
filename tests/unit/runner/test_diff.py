"""Classifying an object by its copies before and after an apply; kubectl field takeover."""

from __future__ import annotations

from typing import Any

import pytest

from runner import diff
from runner.changeset import Action


def cm(
    data: dict[str, str],
    *,
    managers: tuple[str, ...] = ("lockgate",),
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "resourceVersion": "7",
            "annotations": annotations or {},
            "managedFields": [
                {"manager": m, "operation": "Apply" if m == "lockgate" else "Update", "fieldsV1": {}}
                for m in managers
            ],
        },
        "data": data,
    }


@pytest.mark.parametrize(
    ("before", "after", "takeover", "expected"),
    [
        ("same", cm({"k": "1"}), False, (Action.UNCHANGED, "", [])),
        ("changed", cm({"k": "2"}), False, (Action.CONFIGURED, "", ['data.k: "1" -> "2"'])),
        ("taken over only", cm({"k": "1"}), True, (Action.CONFIGURED, "fields taken over from kubectl", [])),
        ("changed and taken over", cm({"k": "2"}), True, (Action.CONFIGURED, "", ['data.k: "1" -> "2"'])),
    ],
)
def test_compare(
    before: str, after: dict[str, Any], takeover: bool, expected: tuple[Action, str, list[str]]
) -> None:
    found = diff.compare(cm({"k": "1"}), after, takeover=takeover)
    assert (found.action, found.reason, [str(c) for c in found.changes]) == expected


@pytest.mark.parametrize(
    ("live", "needed"),
    [
        (cm({}), False),
        (cm({}, managers=("lockgate", "kube-controller-manager")), False),
        (cm({}, managers=("lockgate", "kubectl-edit")), True),
        (cm({}, managers=("lockgate", "kubectl-client-side-apply")), True),
        (cm({}, annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}"}), True),
    ],
)
def test_needs_takeover(live: dict[str, Any], needed: bool) -> None:
    assert diff.needs_takeover(live, "lockgate") is needed


def test_the_takeover_patch_is_guarded_by_the_resource_version() -> None:
    ops = diff.takeover_patch(cm({}, managers=("lockgate", "kubectl-edit")), "lockgate")
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    assert [m["manager"] for m in ops[1]["value"]] == ["lockgate"]
