"""kstatus rules, table-driven: generic checks first, then the kind's rule, then Ready."""

from __future__ import annotations

from typing import Any

import pytest

from runner.plan import health
from runner.plan.health import HealthStatus

NOW = 1_000_000.0


def cond(kind: str, status: str, reason: str = "", when: str = "1970-01-12T13:46:40Z") -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "lastTransitionTime": when}


def dep(spec_replicas: int = 2, generation: int = 1, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "generation": generation},
        "spec": {"replicas": spec_replicas},
        "status": {"observedGeneration": 1, **status},
    }


AVAILABLE: dict[str, Any] = {
    "replicas": 2,
    "updatedReplicas": 2,
    "availableReplicas": 2,
    "readyReplicas": 2,
    "conditions": [cond("Available", "True")],
}

CASES: list[tuple[str, dict[str, Any] | None, HealthStatus]] = [
    ("notFound", None, HealthStatus.NOT_FOUND),
    ("depAvailable", dep(**AVAILABLE), HealthStatus.CURRENT),
    ("depNotObserved", dep(generation=2, **AVAILABLE), HealthStatus.IN_PROGRESS),
    (
        "depNotAvailable",
        dep(replicas=2, updatedReplicas=2, availableReplicas=1, readyReplicas=1),
        HealthStatus.IN_PROGRESS,
    ),
    (
        "depDeadline",
        dep(conditions=[cond("Progressing", "False", "ProgressDeadlineExceeded")]),
        HealthStatus.FAILED,
    ),
    (
        "depTerminating",
        {**dep(**AVAILABLE), "metadata": {"name": "d", "deletionTimestamp": "t"}},
        HealthStatus.TERMINATING,
    ),
    (
        "stalled",
        {
            "kind": "Widget",
            "apiVersion": "x/v1",
            "metadata": {},
            "status": {"conditions": [cond("Stalled", "True")]},
        },
        HealthStatus.FAILED,
    ),
    (
        "reconciling",
        {
            "kind": "Widget",
            "apiVersion": "x/v1",
            "metadata": {},
            "status": {"conditions": [cond("Reconciling", "True")]},
        },
        HealthStatus.IN_PROGRESS,
    ),
    (
        "readyFalse",
        {
            "kind": "Widget",
            "apiVersion": "x/v1",
            "metadata": {},
            "status": {"conditions": [cond("Ready", "False")]},
        },
        HealthStatus.IN_PROGRESS,
    ),
    ("unknownKindCurrent", {"kind": "Widget", "apiVersion": "x/v1", "metadata": {}}, HealthStatus.CURRENT),
    (
        "jobRunning",
        {"kind": "Job", "apiVersion": "batch/v1", "metadata": {}, "status": {"active": 1}},
        HealthStatus.IN_PROGRESS,
    ),
    (
        "jobComplete",
        {
            "kind": "Job",
            "apiVersion": "batch/v1",
            "metadata": {},
            "status": {"conditions": [cond("Complete", "True")]},
        },
        HealthStatus.CURRENT,
    ),
    (
        "jobFailed",
        {
            "kind": "Job",
            "apiVersion": "batch/v1",
            "metadata": {},
            "status": {"conditions": [cond("Failed", "True")]},
        },
        HealthStatus.FAILED,
    ),
    (
        "podUnschedulableLong",
        {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {},
            "status": {
                "phase": "Pending",
                "conditions": [cond("PodScheduled", "False", "Unschedulable", "1970-01-12T13:40:00Z")],
            },
        },
        HealthStatus.FAILED,
    ),
    (
        "podUnschedulableNew",
        {
            "kind": "Pod",
            "apiVersion": "v1",
            # 5 s old: kstatus counts the 15 s from the Pod's creation
            "metadata": {"creationTimestamp": "1970-01-12T13:46:35Z"},
            "status": {
                "phase": "Pending",
                "conditions": [cond("PodScheduled", "False", "Unschedulable", "1970-01-12T13:46:35Z")],
            },
        },
        HealthStatus.IN_PROGRESS,
    ),
    (
        "podRunningReady",
        {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {},
            "status": {"phase": "Running", "conditions": [cond("Ready", "True")]},
        },
        HealthStatus.CURRENT,
    ),
    (
        "podCrashLoop",
        {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {},
            "status": {
                "phase": "Running",
                "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
            },
        },
        HealthStatus.FAILED,
    ),
    (
        "pvcPending",
        {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "metadata": {}, "status": {"phase": "Pending"}},
        HealthStatus.IN_PROGRESS,
    ),
    (
        "lbWithoutIP",
        {"kind": "Service", "apiVersion": "v1", "metadata": {}, "spec": {"type": "LoadBalancer"}},
        HealthStatus.IN_PROGRESS,
    ),
    (
        "crdEstablished",
        {
            "kind": "CustomResourceDefinition",
            "apiVersion": "apiextensions.k8s.io/v1",
            "metadata": {},
            "status": {"conditions": [cond("Established", "True")]},
        },
        HealthStatus.CURRENT,
    ),
    (
        "crdNamesRejected",
        {
            "kind": "CustomResourceDefinition",
            "apiVersion": "apiextensions.k8s.io/v1",
            "metadata": {},
            "status": {"conditions": [cond("NamesAccepted", "False")]},
        },
        HealthStatus.FAILED,
    ),
    (
        "stsPartitioned",
        {
            "kind": "StatefulSet",
            "apiVersion": "apps/v1",
            "metadata": {},
            "spec": {
                "replicas": 3,
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
            },
            "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 1},
        },
        HealthStatus.CURRENT,
    ),
    (
        "stsLessReady",
        {
            "kind": "StatefulSet",
            "apiVersion": "apps/v1",
            "metadata": {},
            "spec": {"replicas": 3},
            "status": {"replicas": 3, "readyReplicas": 2},
        },
        HealthStatus.IN_PROGRESS,
    ),
    (
        "dsNotScheduled",
        {
            "kind": "DaemonSet",
            "apiVersion": "apps/v1",
            "metadata": {},
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 2},
        },
        HealthStatus.IN_PROGRESS,
    ),
    ("configMap", {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {}}, HealthStatus.CURRENT),
]


@pytest.mark.parametrize(("name", "obj", "status"), CASES, ids=[c[0] for c in CASES])
def test_compute(name: str, obj: dict[str, Any] | None, status: HealthStatus) -> None:
    assert health.compute(obj, now=NOW).status is status


def test_the_table_is_public_and_extensible() -> None:
    widget = {"kind": "Widget", "apiVersion": "example.com/v1", "metadata": {}, "status": {"ok": False}}
    health.RULES["Widget.example.com"] = lambda obj, now: health.Health(
        HealthStatus.CURRENT if obj["status"]["ok"] else HealthStatus.IN_PROGRESS, "not ok"
    )
    try:
        assert health.compute(widget, now=NOW).status is HealthStatus.IN_PROGRESS
    finally:
        del health.RULES["Widget.example.com"]


def test_explain_pods_gives_the_condition_underneath() -> None:
    unschedulable = {
        "metadata": {"name": "web-1"},
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 3 Insufficient cpu.",
                }
            ],
        },
    }
    pulling = {
        "metadata": {"name": "web-2"},
        "status": {
            "containerStatuses": [
                {"name": "app", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}}}
            ]
        },
    }
    healthy = {"metadata": {"name": "web-0"}, "status": {"phase": "Running"}}
    said = health.explain_pods([pulling, unschedulable, healthy])
    assert said == "Pod web-1: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu. (and 2 more pods)"
    assert health.explain_pods([pulling]) == "Pod web-2: container app: ImagePullBackOff: not found"
    assert health.explain_pods([healthy]) is None
    assert health.pod_selector({"spec": {"selector": {"matchLabels": {"b": "2", "a": "1"}}}}) == "a=1,b=2"
    assert health.pod_selector({"spec": {}}) is None
