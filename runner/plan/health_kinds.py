"""The rules of the built-in kinds: kstatus's ``core.go``, and Flux's Job reader.

Pure; ``runner.plan.health`` keys them by kind in its tables. Each rule is kstatus's,
check for check and in kstatus's order, with kstatus's reasons and messages
(``kubernetes-sigs/cli-utils`` ``pkg/kstatus/status/core.go``; Flux runs the same code from
its fork). Where Flux departs from kstatus, the runner does as Flux: a Job is read by
Flux's own reader (``fluxcd/pkg`` ``runtime/statusreaders/job.go``), so a running Job is
InProgress until it completes, and ``spec.suspend: true`` is Current. The cases of both
projects' tests are ported in ``tests/unit/runner/plan/test_health_kstatus.py``.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from runner.plan.status import (
    Health,
    bool_field,
    conditions,
    current,
    failed,
    has_condition,
    in_progress,
    int_field,
    str_field,
    unknown,
)

#: how long a Pod may stay unschedulable, counted from its creation, before it is Failed
SCHEDULE_WINDOW = 15.0


def statefulset(obj: dict[str, Any], now: float) -> Health:
    # the controller sets no conditions: counts and revisions only (availableReplicas is not read)
    if str_field(obj, ".spec.updateStrategy.type", "") == "OnDelete":
        return current("StatefulSet is using the ondelete update strategy")
    spec_replicas = int_field(obj, ".spec.replicas", 1)
    ready = int_field(obj, ".status.readyReplicas", 0)
    current_replicas = int_field(obj, ".status.currentReplicas", 0)
    updated = int_field(obj, ".status.updatedReplicas", 0)
    replicas = int_field(obj, ".status.replicas", 0)
    partition = int_field(obj, ".spec.updateStrategy.rollingUpdate.partition", -1)
    if spec_replicas > replicas:
        return in_progress("LessReplicas", f"Replicas: {replicas}/{spec_replicas}")
    if spec_replicas > ready:
        return in_progress("LessReady", f"Ready: {ready}/{spec_replicas}")
    if replicas > spec_replicas:
        return in_progress("ExtraPods", f"Pending termination: {replicas - spec_replicas}")
    if partition != -1:
        if updated < spec_replicas - partition:
            return in_progress("PartitionRollout", f"updated: {updated}/{spec_replicas - partition}")
        return current(f"Partition rollout complete. updated: {updated}")
    if spec_replicas > current_replicas:
        return in_progress("LessCurrent", f"current: {current_replicas}/{spec_replicas}")
    if str_field(obj, ".status.currentRevision", "") != str_field(obj, ".status.updateRevision", ""):
        return in_progress("RevisionMismatch", "Waiting for updated revision to match current")
    return current(f"All replicas scheduled as expected. Replicas: {replicas}")


_MAX_INT32 = 2**31 - 1


def deployment(obj: dict[str, Any], now: float) -> Health:
    # without progressDeadlineSeconds the controller sets no Progressing condition
    progressing = int_field(obj, ".spec.progressDeadlineSeconds", _MAX_INT32) == _MAX_INT32
    available = False
    for condition in conditions(obj):
        if condition.get("type") == "Progressing":
            if condition.get("reason") == "ProgressDeadlineExceeded":
                said = condition.get("message")
                return failed(
                    "ProgressDeadlineExceeded",
                    "Progress deadline exceeded" + (f": {said}" if said else ""),
                )
            if condition.get("status") == "True" and condition.get("reason") == "NewReplicaSetAvailable":
                progressing = True
        elif condition.get("type") == "Available" and condition.get("status") == "True":
            available = True
    spec_replicas = int_field(obj, ".spec.replicas", 1)
    replicas = int_field(obj, ".status.replicas", 0)
    updated = int_field(obj, ".status.updatedReplicas", 0)
    ready = int_field(obj, ".status.readyReplicas", 0)
    available_replicas = int_field(obj, ".status.availableReplicas", 0)
    if spec_replicas > replicas:
        return in_progress("LessReplicas", f"Replicas: {replicas}/{spec_replicas}")
    if spec_replicas > updated:
        return in_progress("LessUpdated", f"Updated: {updated}/{spec_replicas}")
    if replicas > spec_replicas:
        return in_progress("ExtraPods", f"Pending termination: {replicas - spec_replicas}")
    if updated > available_replicas:
        return in_progress("LessAvailable", f"Available: {available_replicas}/{updated}")
    if spec_replicas > ready:
        return in_progress("LessReady", f"Ready: {ready}/{spec_replicas}")
    if not progressing:
        return in_progress("ReplicaSetNotAvailable", "ReplicaSet not Available")
    if not available:
        return in_progress("DeploymentNotAvailable", "Deployment not Available")
    return current(f"Deployment is available. Replicas: {replicas}")


def replicaset(obj: dict[str, Any], now: float) -> Health:
    if has_condition(obj, "ReplicaFailure", "True"):
        return in_progress("ReplicaFailure", "Replica Failure condition. Check Pods")
    spec_replicas = int_field(obj, ".spec.replicas", 1)
    replicas = int_field(obj, ".status.replicas", 0)
    ready = int_field(obj, ".status.readyReplicas", 0)
    available = int_field(obj, ".status.availableReplicas", 0)
    labelled = int_field(obj, ".status.fullyLabeledReplicas", 0)
    if spec_replicas > labelled:
        return in_progress("LessLabelled", f"Labelled: {labelled}/{spec_replicas}")
    if spec_replicas > available:
        return in_progress("LessAvailable", f"Available: {available}/{spec_replicas}")
    if spec_replicas > ready:
        return in_progress("LessReady", f"Ready: {ready}/{spec_replicas}")
    if replicas > spec_replicas:
        return in_progress("ExtraPods", f"Pending termination: {replicas - spec_replicas}")
    return current(f"ReplicaSet is available. Replicas: {replicas}")


def daemonset(obj: dict[str, Any], now: float) -> Health:
    # the controller always sets both once it has acted: kstatus is strict here
    kind = str(obj.get("kind", ""))
    if int_field(obj, ".metadata.generation", -1) == -1:
        return in_progress("NoGeneration", f"{kind} metadata.generation not found")
    if int_field(obj, ".status.observedGeneration", -1) == -1:
        return in_progress("NoObservedGeneration", f"{kind} status.observedGeneration not found")
    desired = int_field(obj, ".status.desiredNumberScheduled", -1)
    if desired == -1:
        return in_progress("NoDesiredNumber", "Missing .status.desiredNumberScheduled")
    for field_name, reason, word in (
        ("currentNumberScheduled", "LessCurrent", "Current"),
        ("updatedNumberScheduled", "LessUpdated", "Updated"),
        ("numberAvailable", "LessAvailable", "Available"),
        ("numberReady", "LessReady", "Ready"),
    ):
        have = int_field(obj, f".status.{field_name}", 0)
        if desired > have:
            return in_progress(reason, f"{word}: {have}/{desired}")
    return current(f"All replicas scheduled as expected. Replicas: {desired}")


def pvc(obj: dict[str, Any], now: float) -> Health:
    phase = str_field(obj, ".status.phase", "unknown")
    if phase != "Bound":
        return in_progress("NotBound", f"PVC is not Bound. phase: {phase}")
    return current("PVC is Bound")


def _created(obj: dict[str, Any]) -> float:
    """``metadata.creationTimestamp`` in seconds; a missing one is long ago (Go's zero time)."""
    text = str_field(obj, ".metadata.creationTimestamp", "")
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return -math.inf


def _crash_looping(obj: dict[str, Any]) -> list[str]:
    statuses = (obj.get("status") or {}).get("containerStatuses")
    names = []
    for container in statuses if isinstance(statuses, list) else []:
        waiting = ((container.get("state") or {}).get("waiting") or {}) if isinstance(container, dict) else {}
        if isinstance(waiting, dict) and waiting.get("reason") == "CrashLoopBackOff" and "name" in container:
            names.append(str(container["name"]))
    return names


def pod(obj: dict[str, Any], now: float) -> Health:
    phase = str_field(obj, ".status.phase", "")
    if phase == "Succeeded":
        return current("Pod has completed successfully")
    if phase == "Failed":
        return current("Pod has completed, but not successfully")
    if phase == "Running":
        if has_condition(obj, "Ready", "True"):
            return current("Pod is Ready")
        looping = _crash_looping(obj)
        if looping:
            return failed("ContainerCrashLooping", f"Containers in CrashLoop state: {','.join(looping)}")
        return in_progress("PodRunningNotReady", "Pod is running but is not Ready")
    if phase == "Pending":
        scheduled = has_condition(obj, "PodScheduled", "False")
        if scheduled is not None and scheduled.get("reason") == "Unschedulable":
            # counted from the Pod's creation, as kstatus: a Pod retried for a while is not new
            if now - SCHEDULE_WINDOW < _created(obj):
                return in_progress("PodNotScheduled", "Pod has not been scheduled")
            return failed("PodUnschedulable", "Pod could not be scheduled")
        return in_progress("PodPending", "Pod is in the Pending phase")
    if phase == "":
        return in_progress("PodNotObserved", "Pod phase not available")
    return unknown(f"unknown phase {phase}")


def pdb(obj: dict[str, Any], now: float) -> Health:
    # the generic observedGeneration check already ran: the disruption controller has seen it
    return current("AllowedDisruptions has been computed.")


def service(obj: dict[str, Any], now: float) -> Health:
    if str_field(obj, ".spec.type", "ClusterIP") == "LoadBalancer" and not str_field(
        obj, ".spec.clusterIP", ""
    ):
        return in_progress("NoIPAssigned", "ClusterIP not set. Service type: LoadBalancer")
    return current("Service is ready")


def crd(obj: dict[str, Any], now: float) -> Health:
    for condition in conditions(obj):
        kind, status = condition.get("type"), condition.get("status")
        reason, message = str(condition.get("reason", "")), str(condition.get("message", ""))
        if kind == "NamesAccepted" and status == "False":
            return failed(reason, message)
        if kind == "Established":
            if status == "False" and reason != "Installing":
                return failed(reason, message)
            if status == "True":
                return current("CRD is established")
    return in_progress("Installing", "Install in progress")


def always_current(obj: dict[str, Any], now: float) -> Health:
    return current("Resource is always ready")


def job(obj: dict[str, Any], now: float) -> Health:
    """Flux's Job reader: Current only once complete (or suspended); the generic checks do not run."""
    if bool_field(obj, ".spec.suspend", False):
        return current("Job is suspended")
    parallelism = int_field(obj, ".spec.parallelism", 1)
    completions = int_field(obj, ".spec.completions", parallelism)
    active = int_field(obj, ".status.active", 0)
    succeeded = int_field(obj, ".status.succeeded", 0)
    failures = int_field(obj, ".status.failed", 0)
    for condition in conditions(obj):
        if condition.get("type") == "Complete" and condition.get("status") == "True":
            return current(f"Job Completed. succeeded: {succeeded}/{completions}")
        if condition.get("type") == "Failed" and condition.get("status") == "True":
            return failed("JobFailed", f"Job Failed. failed: {failures}/{completions}")
    if not str_field(obj, ".status.startTime", ""):
        return in_progress("JobNotStarted", f"Job not started. active: 0/{parallelism}")
    return in_progress(
        "JobInProgress", f"Job in progress. success:{succeeded}, active: {active}, failed: {failures}"
    )
