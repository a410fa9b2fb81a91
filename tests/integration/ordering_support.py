"""A timeline of a namespace while a pass runs, to tell what the cluster saw first.

Each kind is listed, then watched, on its own thread; every version of every object is
kept with its ``resourceVersion``. The world's API server has one etcd, whose revisions
order all writes, so "the migration Job was Complete before the Deployment changed" is
a comparison of two of them, whatever the clocks and the threads did.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from runner.kube.client import Kube
from runner.kube.watch import StreamBroken, WatchStream
from runner.plan import health
from tests.world.kube import Cluster


@dataclass(frozen=True)
class Seen:
    version: int
    type: str
    object: dict[str, Any]


class Timeline:
    def __init__(self, cluster: Cluster, namespace: str, kinds: list[tuple[str, str]]) -> None:
        self.kube = Kube.from_kubeconfig(cluster.kubeconfig)
        self.namespace = namespace
        self.resources = [self.kube.resource(api_version, kind) for api_version, kind in kinds]
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.ready = [threading.Event() for _ in self.resources]
        self.streams: list[WatchStream] = []
        self.threads = [
            threading.Thread(target=self._follow, args=(index,), daemon=True) for index in range(len(kinds))
        ]

    def __enter__(self) -> Timeline:
        for thread in self.threads:
            thread.start()
        for ready in self.ready:
            assert ready.wait(30), "the timeline's first list did not answer"
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop.set()
        for stream in list(self.streams):
            stream.close()
        for thread in self.threads:
            thread.join(10)

    def _record(self, kind: str, event: str, obj: dict[str, Any]) -> None:
        obj.setdefault("kind", kind)
        version = int(obj["metadata"]["resourceVersion"])
        with self.lock:
            self.seen.append(Seen(version, event, obj))

    def _follow(self, index: int) -> None:
        res = self.resources[index]
        listed = self.kube.snapshot(res, self.namespace)
        for obj in listed.items:
            self._record(res.kind, "LISTED", {**obj, "apiVersion": res.api_version})
        version = listed.resource_version
        self.ready[index].set()
        while not self.stop.is_set():
            stream = self.kube.watch(res, self.namespace, resource_version=version, timeout=30)
            self.streams.append(stream)
            try:
                with stream:
                    for event in stream:
                        if self.stop.is_set():
                            return
                        version = str(event.object.get("metadata", {}).get("resourceVersion", version))
                        if event.type in ("ADDED", "MODIFIED", "DELETED"):
                            self._record(
                                res.kind, event.type, {**event.object, "apiVersion": res.api_version}
                            )
            except StreamBroken:
                continue

    def first(self, kind: str, name: str, when: Callable[[Seen], bool] = lambda s: True) -> int:
        """The etcd revision of the first version of ``kind/name`` matching ``when``."""
        with self.lock:
            seen = sorted(self.seen, key=lambda s: s.version)
        for entry in seen:
            if entry.object.get("kind") == kind and entry.object["metadata"]["name"] == name and when(entry):
                return entry.version
        names = sorted({(s.object.get("kind"), s.object["metadata"]["name"], s.type) for s in seen})
        raise AssertionError(f"the timeline never saw {kind}/{name} as asked; it saw {names}")


def complete(entry: Seen) -> bool:
    """A Job whose ``Complete`` condition is True."""
    conditions = (entry.object.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Complete" and c.get("status") == "True" for c in conditions)


def healthy(entry: Seen) -> bool:
    return health.compute(entry.object, now=0).status is health.HealthStatus.CURRENT


def image(tag: str) -> Callable[[Seen], bool]:
    """A Deployment (or Job) whose first container runs ``tag``."""

    def running(entry: Seen) -> bool:
        spec = ((entry.object.get("spec") or {}).get("template") or {}).get("spec") or {}
        return str((spec.get("containers") or [{}])[0].get("image", "")).endswith(tag)

    return running
