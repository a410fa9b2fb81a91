"""Health agrees with kstatus and Flux case by case: their own tests' tables, ported.

``tests/data/health/kstatus_cases.yaml`` holds every case of kstatus's
``status_compute_test.go`` and ``core_test.go``; ``flux_job_cases.yaml`` those of Flux's Job
reader. Each names the status and the reason (the condition kstatus would add) it decides;
where Flux departs from kstatus (Jobs) the runner gives Flux's verdict (``flux:``).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.plan import health
from runner.plan.health import HealthStatus

DATA = Path(__file__).resolve().parents[3] / "data" / "health"
NOW = 1_700_000_000.0


def _cases(name: str) -> list[tuple[str, dict[str, Any]]]:
    loaded = yaml.safe_load((DATA / name).read_text())
    return sorted(loaded.items())


def _stamp(offset: float) -> str:
    return dt.datetime.fromtimestamp(NOW + offset, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check(case: dict[str, Any], want: list[str]) -> None:
    obj = case["object"]
    if "created" in case:
        obj["metadata"]["creationTimestamp"] = _stamp(case["created"])
    got = health.compute(obj, now=NOW)
    assert got.status is HealthStatus(want[0]), got
    if len(want) > 1:
        assert got.reason == want[1], got
    if len(want) > 2:
        assert got.message == want[2], got


KSTATUS = _cases("kstatus_cases.yaml")
FLUX_JOB = _cases("flux_job_cases.yaml")


@pytest.mark.parametrize(("name", "case"), KSTATUS, ids=[n for n, _ in KSTATUS])
def test_kstatus_cases(name: str, case: dict[str, Any]) -> None:
    _check(case, case.get("flux", case["want"]))


@pytest.mark.parametrize(("name", "case"), FLUX_JOB, ids=[n for n, _ in FLUX_JOB])
def test_flux_job_reader_cases(name: str, case: dict[str, Any]) -> None:
    _check(case, case["want"])


def sts(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "generation": 1},
        "spec": {"replicas": 3},
        "status": {"observedGeneration": 1, **status},
    }


def pending_pod(*, created: float, unschedulable_since: float) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "creationTimestamp": _stamp(created)},
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "lastTransitionTime": _stamp(unschedulable_since),
                }
            ],
        },
    }


def deadline(**metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "generation": 2, **metadata},
        "spec": {"replicas": 1, "progressDeadlineSeconds": 5},
        "status": {
            "observedGeneration": 2,
            "replicas": 1,
            "conditions": [
                {
                    "type": "Progressing",
                    "status": "False",
                    "reason": "ProgressDeadlineExceeded",
                    "message": 'ReplicaSet "web-1" has timed out progressing.',
                }
            ],
        },
    }


#: the divergences issue 23 names, each decided by kstatus's rules (core.go, generic.go)
DIVERGENCES: list[tuple[str, dict[str, Any], HealthStatus, str]] = [
    (
        # kstatus never reads availableReplicas (older API servers do not set it)
        "stsWithoutAvailableReplicas",
        sts(replicas=3, readyReplicas=3, currentReplicas=3, currentRevision="r1", updateRevision="r1"),
        HealthStatus.CURRENT,
        "",
    ),
    (
        # an explicit partition of 0 is a partitioned rollout: updated replicas decide, not revisions
        "stsPartitionZero",
        {
            **sts(replicas=3, readyReplicas=3, updatedReplicas=3, currentRevision="r1", updateRevision="r2"),
            "spec": {"replicas": 3, "updateStrategy": {"rollingUpdate": {"partition": 0}}},
        },
        HealthStatus.CURRENT,
        "",
    ),
    ("depProgressDeadlineExceeded", deadline(), HealthStatus.FAILED, "ProgressDeadlineExceeded"),
    (
        # the observedGeneration check comes first: the controller has not judged the new spec yet
        "depDeadlineNotObserved",
        deadline(generation=3),
        HealthStatus.IN_PROGRESS,
        "LatestGenerationNotObserved",
    ),
    (
        # unschedulable for 2 s, but created a minute ago: kstatus counts from creation
        "podUnschedulableOldPod",
        pending_pod(created=-60, unschedulable_since=-2),
        HealthStatus.FAILED,
        "PodUnschedulable",
    ),
    (
        "podUnschedulableNewPod",
        pending_pod(created=-5, unschedulable_since=-600),
        HealthStatus.IN_PROGRESS,
        "PodNotScheduled",
    ),
    (
        # a Ready condition that is Unknown is not Current
        "readyUnknown",
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"generation": 1},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "Pending"}]},
        },
        HealthStatus.IN_PROGRESS,
        "Pending",
    ),
    (
        # the first of Reconciling and Stalled in the list decides, as kstatus reads them in order
        "reconcilingBeforeStalled",
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"generation": 1},
            "status": {
                "conditions": [
                    {"type": "Reconciling", "status": "True", "reason": "Working"},
                    {"type": "Stalled", "status": "True", "reason": "Stuck"},
                ]
            },
        },
        HealthStatus.IN_PROGRESS,
        "Working",
    ),
    (
        # a PDB is Current once observed (kstatus does not compare healthy counts)
        "pdbObservedUnhealthy",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"generation": 1},
            "status": {"observedGeneration": 1, "currentHealthy": 0, "desiredHealthy": 2},
        },
        HealthStatus.CURRENT,
        "",
    ),
    (
        # a Running, Ready Pod is Current even if a container loops (kstatus looks at Ready first)
        "podReadyWithLoopingSidecar",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {},
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "side", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
            },
        },
        HealthStatus.CURRENT,
        "",
    ),
    (
        # observedGeneration without metadata.generation tells nothing
        "observedWithoutGeneration",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}, "status": {"observedGeneration": 4}},
        HealthStatus.CURRENT,
        "",
    ),
]


@pytest.mark.parametrize(("name", "obj", "status", "reason"), DIVERGENCES, ids=[c[0] for c in DIVERGENCES])
def test_divergences_named_in_issue_23(
    name: str, obj: dict[str, Any], status: HealthStatus, reason: str
) -> None:
    got = health.compute(obj, now=NOW)
    assert (got.status, got.reason) == (status, reason), got


def test_the_same_words_as_kstatus() -> None:
    """The message is kstatus's own, so the CLI, the JSON report and the status page say what
    ``kubectl``-side tools built on kstatus say."""
    said = health.compute(
        yaml.safe_load((DATA / "kstatus_cases.yaml").read_text())["stsLessReady"]["object"], now=NOW
    )
    assert said.message == "Ready: 2/4"
    failed = health.compute(deadline(), now=NOW)
    assert failed.message == 'Progress deadline exceeded: ReplicaSet "web-1" has timed out progressing.'
    assert health.compute(None, now=NOW).message == "Resource not found"
