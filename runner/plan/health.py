"""Health of live objects: kstatus's rules as public tables, and Flux's readers before them.

Pure. ``compute(obj, now=..., custom=...)`` decides as Flux's status poller does: an object
whose kind has a reader of its own is read by it alone (``READERS``: Flux's Job reader, then
the sync's CEL ``healthCheckExprs`` through ``custom``); every other object gets kstatus's
``Compute``: the generic checks first (deletion, observedGeneration, the first
Reconciling=True or Stalled=True condition), then the rule for its kind from ``RULES``
(keyed by ``Kind.group``, ``Kind`` for the core group; add entries to teach it new kinds),
then the Ready condition, and Current by default. The rules themselves are in
``runner.plan.health_kinds``; messages and reasons are kstatus's own words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from runner.plan import health_kinds
from runner.plan.objects import Condition, conditions_of, metadata_of
from runner.plan.status import Health as Health
from runner.plan.status import HealthStatus as HealthStatus
from runner.plan.status import conditions, current, in_progress, int_field

if TYPE_CHECKING:
    from runner.plan.health_exprs import CustomHealth

#: a Pod unschedulable for longer than this after its creation is Failed (kstatus's ScheduleWindow)
UNSCHEDULABLE_GRACE = health_kinds.SCHEDULE_WINDOW

Rule = Callable[[dict[str, Any], float], Health]

CURRENT = Health(HealthStatus.CURRENT)

_NONE = Condition()

#: kstatus's legacyTypes: the rule of each built-in kind, after the generic checks; public so it can grow
RULES: dict[str, Rule] = {
    "Service": health_kinds.service,
    "Pod": health_kinds.pod,
    "Secret": health_kinds.always_current,
    "PersistentVolumeClaim": health_kinds.pvc,
    "StatefulSet.apps": health_kinds.statefulset,
    "DaemonSet.apps": health_kinds.daemonset,
    "DaemonSet.extensions": health_kinds.daemonset,
    "Deployment.apps": health_kinds.deployment,
    "Deployment.extensions": health_kinds.deployment,
    "ReplicaSet.apps": health_kinds.replicaset,
    "ReplicaSet.extensions": health_kinds.replicaset,
    "PodDisruptionBudget.policy": health_kinds.pdb,
    "CronJob.batch": health_kinds.always_current,
    "ConfigMap": health_kinds.always_current,
    "CustomResourceDefinition.apiextensions.k8s.io": health_kinds.crd,
}

#: Flux's custom status readers: they alone decide for their kind (no generic checks), and
#: come before the sync's CEL expressions (an expression for a Job is never asked, as in Flux)
READERS: dict[str, Rule] = {"Job.batch": health_kinds.job}


def group_kind(obj: dict[str, Any]) -> tuple[str, str]:
    api_version = str(obj.get("apiVersion", ""))
    return (api_version.rsplit("/", 1)[0] if "/" in api_version else ""), str(obj.get("kind", ""))


def _key(group: str, kind: str) -> str:
    return f"{kind}.{group}" if group else kind


def generic(obj: dict[str, Any]) -> Health | None:
    """kstatus's checks every kind gets first; None when they do not decide."""
    if metadata_of(obj).get("deletionTimestamp"):
        return Health(HealthStatus.TERMINATING, "Resource scheduled for deletion")
    # only when both are integers: a kind without them (or with strings) is not judged by them
    generation = int_field(obj, ".metadata.generation", -1)
    observed = int_field(obj, ".status.observedGeneration", -1)
    if generation != -1 and observed != -1 and observed != generation:
        kind = obj.get("kind", "")
        return in_progress(
            "LatestGenerationNotObserved",
            f"{kind} generation is {generation}, but latest observed generation is {observed}",
        )
    for condition in conditions(obj):
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Reconciling":
            return in_progress(str(condition.get("reason", "")), str(condition.get("message", "")))
        if condition.get("type") == "Stalled":
            return Health(
                HealthStatus.FAILED, str(condition.get("message", "")), str(condition.get("reason", ""))
            )
    return None


def _ready(obj: dict[str, Any]) -> Health | None:
    """The Ready condition, which many controllers set though kstatus's conventions do not."""
    for condition in conditions(obj):
        if condition.get("type") != "Ready":
            continue
        status = condition.get("status")
        if status == "True":
            return current("Resource is Ready")
        if status in ("False", "Unknown"):
            return in_progress(str(condition.get("reason", "")), str(condition.get("message", "")))
    return None


def compute(obj: dict[str, Any] | None, *, now: float, custom: CustomHealth | None = None) -> Health:
    """The health of ``obj`` (None: not found). ``custom``: the sync's CEL ``healthCheckExprs``."""
    if obj is None:
        return Health(HealthStatus.NOT_FOUND, "Resource not found")
    group, kind = group_kind(obj)
    reader = READERS.get(_key(group, kind))
    if reader is not None:
        return reader(obj, now)
    if custom is not None:
        evaluator = custom.evaluator(group, kind)
        if evaluator is not None:
            return custom.judge([(evaluator, obj)])[0]
    decided = generic(obj)
    if decided is not None:
        return decided
    rule = RULES.get(_key(group, kind))
    if rule is not None:
        return rule(obj, now)
    return _ready(obj) or current("Resource is current")


def compute_all(
    objs: Sequence[dict[str, Any] | None], *, now: float, custom: CustomHealth | None = None
) -> list[Health]:
    """``compute`` of each object, the sync's CEL expressions judging all theirs in one call
    to their engine (a wait's look: one round trip to the sandbox, not one per object)."""
    judged: list[Health | None] = [None] * len(objs)
    pairs: list[tuple[int, Any, dict[str, Any]]] = []
    for i, obj in enumerate(objs):
        evaluator = None
        if obj is not None and custom is not None:
            group, kind = group_kind(obj)
            if _key(group, kind) not in READERS:
                evaluator = custom.evaluator(group, kind)
        if evaluator is not None and obj is not None:
            pairs.append((i, evaluator, obj))
        else:
            judged[i] = compute(obj, now=now)
    if pairs and custom is not None:
        for (i, _, _), said in zip(pairs, custom.judge([(e, o) for _, e, o in pairs]), strict=True):
            judged[i] = said
    return [h for h in judged if h is not None]


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
