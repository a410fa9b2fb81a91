"""Wait until objects are healthy, by watching them: fail fast on Failed, explain a timeout.

One thread per resource and namespace lists the set's members there and then watches
them (label selector ``applyset.kubernetes.io/part-of=<id>``), keeping the newest copy
of each object. The caller's thread evaluates ``health.compute`` over the copies twice a
second (kstatus has time-based rules, e.g. a Pod unschedulable for more than 15 s) and
returns when all are Current, raises on the first Failed, or lists each unhealthy object
with its reason when the timeout passes. Objects outside the set (a sync's ``healthChecks``)
are watched one by one, by name (field selector ``metadata.name``), since they carry no
label of ours. ``interrupt`` is asked at each look and raises to end the wait there (the
runner is shutting down: nothing is left to write, so the pass stops at once).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lockgate.errors import HealthError, LockgateError
from lockgate.manifests import ObjectKey
from runner.kube.client import Kube
from runner.kube.discovery import Resource
from runner.kube.errors import KubeError
from runner.kube.watch import StreamBroken, WatchStream
from runner.plan import health, health_exprs
from runner.plan.desired import Desired
from runner.plan.health import Health, HealthStatus
from runner.ssa.manager import Manager

WATCH_SECONDS = 30


@dataclass(frozen=True)
class WaitOptions:
    timeout: float = 300.0
    interval: float = 0.5
    fail_fast: bool = True
    #: the sync's CEL ``healthCheckExprs`` (custom resources' health, as Flux)
    custom: health_exprs.CustomHealth | None = None


class HealthFailed(HealthError):
    """The objects that failed or did not become healthy in time, each with its reason."""

    def __init__(self, headline: str, report: dict[ObjectKey, Health], keys: Sequence[ObjectKey]) -> None:
        super().__init__(headline, details=_describe(report, keys))
        self.headline = headline
        self.report = report


class _Watcher(threading.Thread):
    def __init__(
        self, mgr: Manager, res: Resource, namespace: str, stop: threading.Event, *, name: str = ""
    ) -> None:
        super().__init__(daemon=True, name=f"watch-{res.plural}-{namespace}")
        self.mgr, self.res, self.namespace, self.stop = mgr, res, namespace, stop
        #: one object outside the set, by name; else the set's members
        self.labels = None if name else mgr.member_selector
        self.fields = f"metadata.name={name}" if name else None
        self.objects: dict[str, dict[str, object]] = {}
        self.synced = threading.Event()
        self.error: LockgateError | None = None
        self.lock = threading.Lock()
        self.stream: WatchStream | None = None

    def close(self) -> None:
        """Unblock the watch now rather than when its server-side timeout ends."""
        stream = self.stream
        if stream is not None:
            stream.close()

    def _relist(self) -> str:
        listed = self.mgr.kube.snapshot(
            self.res, self.namespace, label_selector=self.labels, field_selector=self.fields
        )
        with self.lock:
            self.objects = {o["metadata"]["name"]: o for o in listed.items}
        self.synced.set()
        return listed.resource_version

    def _open(self, version: str) -> WatchStream:
        stream = self.mgr.kube.watch(
            self.res,
            self.namespace,
            label_selector=self.labels,
            field_selector=self.fields,
            resource_version=version,
            timeout=WATCH_SECONDS,
        )
        self.stream = stream
        if self.stop.is_set():  # ``close`` ran before the stream existed
            stream.close()
        return stream

    def _follow(self, version: str) -> str:
        """Apply one watch's events to the copies; returns the version to continue from."""
        with self._open(version) as stream:
            for event in stream:
                if self.stop.is_set():
                    break
                metadata = event.object.get("metadata") or {}
                if event.type == "ERROR":  # e.g. 410 Gone: the version is too old
                    return self._relist()
                version = str(metadata.get("resourceVersion", version))
                if event.type == "BOOKMARK":
                    continue
                event.object.setdefault("apiVersion", self.res.api_version)
                event.object.setdefault("kind", self.res.kind)
                with self.lock:
                    if event.type == "DELETED":
                        self.objects.pop(str(metadata.get("name")), None)
                    else:
                        self.objects[str(metadata.get("name"))] = event.object
        return version

    def run(self) -> None:
        try:
            version = self._relist()
            while not self.stop.is_set():
                try:
                    version = self._follow(version)
                except KubeError as exc:
                    if exc.status != 410:
                        raise
                    version = self._relist()
                except StreamBroken:
                    if self.stop.is_set():
                        return
                    time.sleep(0.5)
                    version = self._relist()
        except LockgateError as exc:
            self.error = exc
            self.synced.set()

    def get(self, name: str) -> dict[str, object] | None:
        with self.lock:
            return self.objects.get(name)


def _describe(report: dict[ObjectKey, Health], keys: Sequence[ObjectKey]) -> list[str]:
    return [f"{key}: {report[key].status.value}: {report[key].message}" for key in keys]


Group = tuple[Resource, str, str]
POD = Resource("", "v1", "Pod", "pods", True)


def _explain_workloads(
    mgr: Manager,
    targets: Sequence[tuple[ObjectKey, Resource]],
    report: dict[ObjectKey, Health],
    unhealthy: Sequence[ObjectKey],
    getter: Callable[[tuple[ObjectKey, Resource]], Callable[[str], dict[str, object] | None]],
) -> None:
    """Add what the Pods say to each unhealthy workload's message: one LIST per workload,
    only on the way out of a failed wait (never during a healthy one)."""
    resources = dict(targets)
    for key in unhealthy:
        res = resources[key]
        if f"{key.kind}.{res.group}" not in health.WORKLOADS:
            continue
        obj = getter((key, res))(key.name)
        selector = health.pod_selector(dict(obj)) if obj is not None else None
        if selector is None:
            continue
        try:
            pods = list(mgr.kube.list_all(POD, key.namespace, label_selector=selector, limit=50))
        except LockgateError:
            continue  # not allowed to list Pods: the workload's own reason stands
        said = health.explain_pods(pods)
        if said:
            before = report[key]
            report[key] = Health(before.status, f"{before.message}; {said}" if before.message else said)


def wait(
    mgr: Manager,
    targets: Sequence[tuple[ObjectKey, Resource]],
    options: WaitOptions | None = None,
    *,
    extra: Sequence[tuple[ObjectKey, Resource]] = (),
    interrupt: Callable[[], None] | None = None,
    judge: Callable[[dict[str, Any] | None, float], Health] | None = None,
) -> dict[ObjectKey, Health]:
    """Block until every target (members of the set) and every ``extra`` object is Current;
    returns the final health of each. ``interrupt`` raises to stop waiting (see above);
    ``judge(obj, now)`` replaces ``health.compute`` (a hook is done only when it finished)."""
    options = options or WaitOptions()
    members = {key for key, _ in targets}
    added = [(key, res) for key, res in extra if key not in members]
    outside = {key for key, _ in added}
    targets = [*targets, *added]
    if not targets:
        return {}
    stop = threading.Event()
    watchers: dict[Group, _Watcher] = {}

    def group_of(key: ObjectKey, res: Resource) -> Group:
        return (res, key.namespace if res.namespaced else "", key.name if key in outside else "")

    for key, res in targets:
        group = group_of(key, res)
        if group not in watchers:
            watchers[group] = _Watcher(mgr, res, group[1], stop, name=group[2])
    for watcher in watchers.values():
        watcher.start()
    deadline = time.monotonic() + options.timeout
    report: dict[ObjectKey, Health] = {}
    try:
        while True:
            for watcher in watchers.values():
                while not watcher.synced.wait(min(options.interval, max(0.0, deadline - time.monotonic()))):
                    if interrupt is not None:
                        interrupt()
                    if time.monotonic() >= deadline:
                        break
                if watcher.error is not None:
                    raise watcher.error
            if interrupt is not None:
                interrupt()
            now = time.time()
            copies: list[dict[str, Any] | None] = []
            for key, res in targets:
                obj = watchers[group_of(key, res)].get(key.name)
                copies.append(dict(obj) if obj is not None else None)
            judged = (
                [judge(copy, now) for copy in copies]
                if judge is not None
                else health.compute_all(copies, now=now, custom=options.custom)
            )
            report.update(zip((key for key, _ in targets), judged, strict=True))
            failed = [k for k, _ in targets if report[k].status is HealthStatus.FAILED]
            if failed and options.fail_fast:
                _explain_workloads(mgr, targets, report, failed, lambda key: watchers[group_of(*key)].get)
                raise HealthFailed(f"{len(failed)} object(s) failed", report, failed)
            pending = [k for k, _ in targets if report[k].status is not HealthStatus.CURRENT]
            if not pending:
                return report
            if time.monotonic() >= deadline:
                _explain_workloads(mgr, targets, report, pending, lambda key: watchers[group_of(*key)].get)
                raise HealthFailed(
                    f"timed out after {options.timeout:g}s waiting for {len(pending)} object(s)",
                    report,
                    pending,
                )
            time.sleep(options.interval)
    finally:
        stop.set()
        for watcher in watchers.values():
            watcher.close()


def served_kinds(crd: Desired) -> list[tuple[str, str]]:
    """(apiVersion, kind) of each version a CRD serves."""
    spec = crd.body.get("spec") or {}
    kind = str((spec.get("names") or {}).get("kind", ""))
    group = str(spec.get("group", ""))
    return [
        (f"{group}/{v['name']}", kind)
        for v in spec.get("versions") or []
        if isinstance(v, dict) and v.get("served", True) and "name" in v
    ]


def wait_for_discovery(kube: Kube, crds: Sequence[Desired], *, timeout: float) -> None:
    """Established CRDs reach API discovery a moment later: wait until their kinds are served."""
    deadline = time.monotonic() + timeout
    for crd in crds:
        for api_version, kind in served_kinds(crd):
            while not kube.knows(api_version, kind):
                if time.monotonic() > deadline:
                    raise HealthError(
                        f"{crd.key} is Established, but the API server does not serve {kind} in "
                        f"{api_version} after {timeout:g}s; check the kube-apiserver log"
                    )
                time.sleep(0.2)
