"""kubectl field takeover: which managers are adopted, and the guarded patch that adopts them."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.diff.normalize import LAST_APPLIED
from runner.plan import takeover


def cm(
    *, managers: tuple[str, ...] = ("lockgate",), annotations: dict[str, str] | None = None
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
                {
                    "manager": m,
                    "operation": "Apply" if m == "lockgate" else "Update",
                    "fieldsV1": {"f:data": {f"f:{m}": {}}},
                }
                for m in managers
            ],
        },
    }


@pytest.mark.parametrize(
    ("live", "needed"),
    [
        (cm(), False),
        (cm(managers=("lockgate", "kube-controller-manager")), False),
        (cm(managers=("lockgate", "kubectl-edit")), True),
        (cm(managers=("lockgate", "kubectl-client-side-apply")), True),
        (cm(annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}"}), True),
    ],
)
def test_needs_takeover(live: dict[str, Any], needed: bool) -> None:
    assert takeover.needs_takeover(live, "lockgate") is needed


def test_the_takeover_patch_is_guarded_by_the_resource_version() -> None:
    ops = takeover.takeover_patch(
        cm(managers=("lockgate", "kubectl-edit", "kube-controller-manager")), "lockgate"
    )
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    entries = ops[1]["value"]
    assert [m["manager"] for m in entries] == ["lockgate", "kube-controller-manager"]
    assert entries[0]["fieldsV1"]["f:data"] == {"f:lockgate": {}, "f:kubectl-edit": {}}


def test_the_last_applied_annotation_is_removed() -> None:
    live = cm(managers=("kubectl-client-side-apply",), annotations={LAST_APPLIED: "{}"})
    ops = takeover.takeover_patch(live, "lockgate")
    assert ops[-1] == {
        "op": "remove",
        "path": "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
    }
    assert ops[1]["value"][0]["manager"] == "lockgate" and ops[1]["value"][0]["operation"] == "Apply"
