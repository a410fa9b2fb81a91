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


def flux_applied() -> dict[str, Any]:
    """A ConfigMap as kustomize-controller applied it: its Apply entry owns the data and Flux's
    owner labels."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "resourceVersion": "9",
            "labels": {
                "kustomize.toolkit.fluxcd.io/name": "app",
                "kustomize.toolkit.fluxcd.io/namespace": "flux",
            },
            "managedFields": [
                {
                    "manager": "kustomize-controller",
                    "operation": "Apply",
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:data": {"f:k": {}, "f:gone": {}},
                        "f:metadata": {
                            "f:labels": {
                                "f:kustomize.toolkit.fluxcd.io/name": {},
                                "f:kustomize.toolkit.fluxcd.io/namespace": {},
                            }
                        },
                    },
                },
                {"manager": "kube-controller-manager", "operation": "Update", "fieldsV1": {"f:x": {}}},
            ],
        },
        "data": {"k": "v", "gone": "1"},
    }


def test_an_override_manager_is_taken_over_whatever_its_operation() -> None:
    """Flux's --override-manager: kustomize-controller's Apply entry becomes lockgate's, only
    when named (a plain pass leaves another Apply manager alone)."""
    live = flux_applied()
    assert not takeover.needs_takeover(live, "lockgate")
    assert takeover.needs_takeover(live, "lockgate", ("kustomize-controller",))
    ops = takeover.takeover_patch(live, "lockgate", ("kustomize-controller",))
    entries = ops[1]["value"]
    assert [(e["manager"], e["operation"]) for e in entries] == [
        ("lockgate", "Apply"),
        ("kube-controller-manager", "Update"),
    ]
    assert entries[0]["fieldsV1"] == live["metadata"]["managedFields"][0]["fieldsV1"]


def test_after_an_override_what_the_artifact_no_longer_sets_is_removed() -> None:
    """The dry run shows what the adopt pass does: Flux's owner labels and a dropped key go."""
    live = flux_applied()
    desired = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "ns"},
        "data": {"k": "v"},
    }
    predicted = takeover.predict_after_takeover(live, live, desired, "lockgate", ("kustomize-controller",))
    assert predicted["data"] == {"k": "v"}
    assert "labels" not in predicted["metadata"]


def test_a_dry_run_acts_as_the_override_manager_it_takes_over() -> None:
    live = flux_applied()
    assert takeover.acting_as(live, "lockgate", ("kustomize-controller",)) == "kustomize-controller"
    assert takeover.acting_as(live, "lockgate", ()) == "lockgate"
    ours = {"manager": "lockgate", "operation": "Apply", "fieldsV1": {}}
    live["metadata"]["managedFields"].append(ours)  # Flux resumed after an adopt: still Flux's view
    assert takeover.acting_as(live, "lockgate", ("kustomize-controller",)) == "kustomize-controller"
    other = {"manager": "helm-controller", "operation": "Apply", "fieldsV1": {}}
    live["metadata"]["managedFields"].append(other)  # two overrides: no one name says it all
    assert takeover.acting_as(live, "lockgate", ("kustomize-controller", "helm-controller")) == "lockgate"
