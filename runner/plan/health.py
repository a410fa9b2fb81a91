"""Health of live objects: kstatus rules as a public table.

Pure. ``compute(obj, now=...)`` runs the generic checks first (deletion,
observedGeneration, Reconciling/Stalled), then the rule for the object's kind from
``RULES`` (keyed by ``Kind.group``; add entries to teach it new kinds), then the Ready
condition, and says Current by default. A running Job is InProgress, as Flux treats it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from runner.plan.objects import Condition, conditions_of, metadata_of

#: a Pod unschedulable for longer than this is Failed (kstatus)
UNSCHEDULABLE_GRACE = 15.0


class HealthStatus(Enum):
    CURRENT = "Current"
    IN_PROGRESS = "InProgress"
    FAILED = "Failed"
    TERMINATING = "Terminating"
    NOT_FOUND = "NotFound"


@dataclass(frozen=True)
class Health:
    status: HealthStatus
    message: str = ""


Rule = Callable[[dict[str, Any], float], Health]

CURRENT = Health(HealthStatus.CURRENT)


_NONE = Condition()


def _is_true(obj: dict[str, Any], kind: str) -> bool:
    return conditions_of(obj).get(kind, _NONE).get("status") == "True"


def _int(section: Any, name: str, default: int = 0) -> int:
    value = section.get(name) if isinstance(section, dict) else None
    return value if isinstance(value, int) else default


def _timestamp(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _progress(what: str, want: int, have: int) -> Health:
    return Health(HealthStatus.IN_PROGRESS, f"{what}: {have}/{want}")


def deployment(obj: dict[str, Any], now: float) -> Health:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    progressing = conditions_of(obj).get("Progressing", _NONE)
    if progressing.get("reason") == "ProgressDeadlineExceeded":
        return Health(HealthStatus.FAILED, f"progress deadline exceeded: {progressing.get('message', '')}")
    want = _int(spec, "replicas", 1)
    replicas, updated = _int(status, "replicas"), _int(status, "updatedReplicas")
    available, ready = _int(status, "availableReplicas"), _int(status, "readyReplicas")
    if want > replicas:
        return _progress("replicas", want, replicas)
    if want > updated:
        return _progress("updated replicas", want, updated)
    if replicas > want:
        return Health(HealthStatus.IN_PROGRESS, f"pending termination: {replicas - want}")
    if updated > available:
        return _progress("available replicas", updated, available)
    if want > ready:
        return _progress("ready replicas", want, ready)
    if not _is_true(obj, "Available"):
        return Health(HealthStatus.IN_PROGRESS, "Deployment is not Available")
    return CURRENT


def statefulset(obj: dict[str, Any], now: float) -> Health:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type") == "OnDelete":
        return CURRENT
    want = _int(spec, "replicas", 1)
    for field in ("replicas", "readyReplicas", "availableReplicas"):
        if want > _int(status, field):
            return _progress(field, want, _int(status, field))
    partition = _int(strategy.get("rollingUpdate"), "partition")
    if partition:
        if _int(status, "updatedReplicas") < want - partition:
            return _progress(
                "updated replicas (partitioned)", want - partition, _int(status, "updatedReplicas")
            )
        return CURRENT
    if want > _int(status, "currentReplicas"):
        return _progress("current replicas", want, _int(status, "currentReplicas"))
    if status.get("currentRevision") != status.get("updateRevision"):
        return Health(HealthStatus.IN_PROGRESS, "waiting for the rolling update to finish")
    return CURRENT


def daemonset(obj: dict[str, Any], now: float) -> Health:
    status = obj.get("status") or {}
    want = _int(status, "desiredNumberScheduled", -1)
    if want < 0:
        return Health(HealthStatus.IN_PROGRESS, "no desiredNumberScheduled yet")
    for field in ("currentNumberScheduled", "updatedNumberScheduled", "numberAvailable", "numberReady"):
        if want > _int(status, field):
            return _progress(field, want, _int(status, field))
    return CURRENT


def replicaset(obj: dict[str, Any], now: float) -> Health:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if _is_true(obj, "ReplicaFailure"):
        return Health(HealthStatus.IN_PROGRESS, "replica failure")
    want = _int(spec, "replicas", 1)
    for field in ("fullyLabeledReplicas", "availableReplicas", "readyReplicas"):
        if want > _int(status, field):
            return _progress(field, want, _int(status, field))
    return CURRENT


def pod(obj: dict[str, Any], now: float) -> Health:
    status = obj.get("status") or {}
    phase = status.get("phase")
    if phase in ("Succeeded", "Failed"):
        return CURRENT
    for container in status.get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") == "CrashLoopBackOff":
            return Health(HealthStatus.FAILED, f"container {container.get('name')} is in CrashLoopBackOff")
    scheduled = conditions_of(obj).get("PodScheduled", _NONE)
    if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
        since = _timestamp(scheduled.get("lastTransitionTime"))
        if since is not None and now - since > UNSCHEDULABLE_GRACE:
            return Health(HealthStatus.FAILED, f"unschedulable: {scheduled.get('message', '')}")
        return Health(HealthStatus.IN_PROGRESS, "pod is not scheduled yet")
    if phase == "Running" and _is_true(obj, "Ready"):
        return CURRENT
    return Health(HealthStatus.IN_PROGRESS, f"pod is {phase or 'Pending'}")


def job(obj: dict[str, Any], now: float) -> Health:
    if _is_true(obj, "Failed"):
        return Health(HealthStatus.FAILED, conditions_of(obj)["Failed"].get("message") or "Job failed")
    if _is_true(obj, "Complete"):
        return CURRENT
    return Health(HealthStatus.IN_PROGRESS, "Job is running")


def pvc(obj: dict[str, Any], now: float) -> Health:
    phase = (obj.get("status") or {}).get("phase")
    return CURRENT if phase == "Bound" else Health(HealthStatus.IN_PROGRESS, f"claim is {phase or 'Pending'}")


def service(obj: dict[str, Any], now: float) -> Health:
    spec = obj.get("spec") or {}
    if spec.get("type") == "LoadBalancer" and not spec.get("clusterIP"):
        return Health(HealthStatus.IN_PROGRESS, "ClusterIP not set")
    return CURRENT


def pdb(obj: dict[str, Any], now: float) -> Health:
    status = obj.get("status") or {}
    if _int(status, "currentHealthy") < _int(status, "desiredHealthy"):
        return _progress("healthy pods", _int(status, "desiredHealthy"), _int(status, "currentHealthy"))
    return CURRENT


def crd(obj: dict[str, Any], now: float) -> Health:
    accepted = conditions_of(obj).get("NamesAccepted", _NONE)
    if accepted.get("status") == "False":
        return Health(HealthStatus.FAILED, f"names not accepted: {accepted.get('message', '')}")
    if _is_true(obj, "Established"):
        return CURRENT
    return Health(HealthStatus.IN_PROGRESS, "CRD is not Established")


def always_current(obj: dict[str, Any], now: float) -> Health:
    return CURRENT


#: kind rules, keyed by ``Kind.group`` (``Kind`` for the core group); public so it can grow
RULES: dict[str, Rule] = {
    "Deployment.apps": deployment,
    "StatefulSet.apps": statefulset,
    "DaemonSet.apps": daemonset,
    "ReplicaSet.apps": replicaset,
    "Pod": pod,
    "Job.batch": job,
    "PersistentVolumeClaim": pvc,
    "Service": service,
    "PodDisruptionBudget.policy": pdb,
    "CustomResourceDefinition.apiextensions.k8s.io": crd,
    "Secret": always_current,
    "ConfigMap": always_current,
    "CronJob.batch": always_current,
}


def _group_kind(obj: dict[str, Any]) -> str:
    api_version = str(obj.get("apiVersion", ""))
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return f"{obj.get('kind')}.{group}" if group else str(obj.get("kind"))


def generic(obj: dict[str, Any]) -> Health | None:
    """The checks every kind gets first; None when they do not decide."""
    metadata = metadata_of(obj)
    if metadata.get("deletionTimestamp"):
        return Health(HealthStatus.TERMINATING, "object is being deleted")
    status = obj.get("status")
    observed = status.get("observedGeneration") if isinstance(status, dict) else None
    if isinstance(observed, int) and observed != metadata.get("generation"):
        return Health(HealthStatus.IN_PROGRESS, "the controller has not observed the latest generation")
    conditions = conditions_of(obj)
    if conditions.get("Stalled", _NONE).get("status") == "True":
        return Health(HealthStatus.FAILED, conditions["Stalled"].get("message") or "Stalled")
    if conditions.get("Reconciling", _NONE).get("status") == "True":
        return Health(HealthStatus.IN_PROGRESS, conditions["Reconciling"].get("message") or "Reconciling")
    return None


def compute(obj: dict[str, Any] | None, *, now: float) -> Health:
    if obj is None:
        return Health(HealthStatus.NOT_FOUND, "object not found")
    decided = generic(obj)
    if decided is not None:
        return decided
    rule = RULES.get(_group_kind(obj))
    if rule is not None:
        return rule(obj, now)
    ready = conditions_of(obj).get("Ready")
    if ready is not None and ready.get("status") == "False":
        return Health(HealthStatus.IN_PROGRESS, ready.get("message") or "Ready is False")
    return CURRENT


#: workload kinds whose Pods are looked at when they stay unhealthy (Kind.group)
WORKLOADS = frozenset(
    {"Deployment.apps", "StatefulSet.apps", "DaemonSet.apps", "ReplicaSet.apps", "Job.batch"}
)

_CONTAINER_TROUBLE = (
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "InvalidImageName",
    "RunContainerError",
)


def pod_selector(obj: dict[str, Any]) -> str | None:
    """The label selector of a workload's Pods (``spec.selector.matchLabels``), if it has one."""
    spec = obj.get("spec") or {}
    selector = spec.get("selector") or {}
    labels = selector.get("matchLabels") if isinstance(selector, dict) else None
    if not isinstance(labels, dict) or not labels:
        return None
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _pod_trouble(pod_obj: dict[str, Any]) -> str | None:
    name = metadata_of(pod_obj).get("name", "")
    scheduled = conditions_of(pod_obj).get("PodScheduled", _NONE)
    if scheduled.get("status") == "False":
        return (
            f"Pod {name}: {scheduled.get('reason', 'NotScheduled')}: {scheduled.get('message', '')}".rstrip(
                ": "
            )
        )
    status = pod_obj.get("status") or {}
    for container in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        state = container.get("state") or {}
        waiting = state.get("waiting") or {}
        if waiting.get("reason") in _CONTAINER_TROUBLE:
            said = f": {waiting['message']}" if waiting.get("message") else ""
            return f"Pod {name}: container {container.get('name')}: {waiting['reason']}{said}"
        # a container that ended with an error: now (a Pod that failed), or before its restart
        for ended in (state.get("terminated"), (container.get("lastState") or {}).get("terminated")):
            if isinstance(ended, dict) and ended.get("exitCode") not in (None, 0):
                said = f": {str(ended['message']).strip()[:300]}" if ended.get("message") else ""
                return (
                    f"Pod {name}: container {container.get('name')} exited with {ended['exitCode']}"
                    f" ({ended.get('reason', 'Error')}{said})"
                )
    ready = conditions_of(pod_obj).get("Ready", _NONE)
    if ready.get("status") == "False" and ready.get("message"):
        return f"Pod {name}: {ready.get('reason', 'NotReady')}: {ready['message']}"
    return None


def explain_pods(pods: list[dict[str, Any]]) -> str | None:
    """What the Pods underneath a workload say (the first telling one), e.g. ``Pod web-1:
    Unschedulable: 0/3 nodes are available: Insufficient cpu``; None when they say nothing."""
    ordered = sorted(pods, key=lambda p: str(metadata_of(p).get("name", "")))
    for pod_obj in ordered:
        trouble = _pod_trouble(pod_obj)
        if trouble:
            more = len(ordered) - 1
            return trouble + (f" (and {more} more pod{'s' if more > 1 else ''})" if more else "")
    return None
