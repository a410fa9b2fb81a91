"""Watching long-running processes from outside: CPU and memory from /proc, Prometheus
counters from their /metrics, and object counts from the API server.

CPU is ``utime + stime`` of ``/proc/<pid>/stat`` (all threads of the process), so a delta
over a window divided by the window is the share of one core. Peak memory is ``VmHWM`` of
``/proc/<pid>/status``: the resident high-water mark of the process's own address space
(a fresh one after ``exec``, so unlike ``ru_maxrss`` it carries nothing of the parent).
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.world.kube import Cluster

_TICKS = os.sysconf("SC_CLK_TCK")
#: only metadata: counting thousands of objects stays cheap for the API server and for us
_METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
_METADATA_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process has used so far."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def memory_kib(pid: int, key: str = "VmHWM") -> int:
    """A ``/proc/<pid>/status`` memory line in KiB (``VmHWM`` peak, ``VmRSS`` now)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    raise KeyError(f"{key} not in /proc/{pid}/status")


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


def parse(text: str, *names: str) -> list[Sample]:
    """The samples of the named metrics (all when none) in a Prometheus text exposition."""
    out: list[Sample] = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not names or sample.name in names or family.name in names:
                out.append(Sample(sample.name, dict(sample.labels), float(sample.value)))
    return out


def scrape(url: str, *names: str, timeout: float = 10.0) -> list[Sample]:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return parse(resp.read().decode(), *names)


def by_label(samples: Sequence[Sample], label: str, *, suffix: str = "") -> dict[str, int]:
    """Sum sample values grouped by one label (only samples whose name ends with ``suffix``)."""
    out: dict[str, int] = {}
    for sample in samples:
        if suffix and not sample.name.endswith(suffix):
            continue
        key = sample.labels.get(label, "?").lower()
        out[key] = out.get(key, 0) + int(sample.value)
    return out


WRITE_VERBS = frozenset({"post", "put", "patch", "delete", "create", "update", "apply", "deletecollection"})


def writes(counts: dict[str, int]) -> int:
    return sum(v for k, v in counts.items() if k in WRITE_VERBS)


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in sorted(set(after) | set(before))}


class ApiServer:
    """The world's API server as the admin, for counting what the tools under test created."""

    def __init__(self, cluster: Cluster) -> None:
        assert cluster.admin is not None
        self.server = cluster.server
        self.session = requests.Session()
        # REQUESTS_CA_BUNDLE and proxy variables would override the world's CA and loopback
        self.session.trust_env = False
        self.session.cert = (str(cluster.admin.cert), str(cluster.admin.key))
        self.session.verify = str(cluster.ca)

    def list(
        self, prefix: str, *, namespace: str, label_selector: str = "", metadata_only: bool = False
    ) -> list[dict[str, Any]]:
        """Objects from the API server's watch cache (``resourceVersion=0``: no etcd read)."""
        kind = prefix.rsplit("/", 1)[-1]
        base = prefix.rsplit("/", 1)[0]
        params = {"resourceVersion": "0"}
        if label_selector:
            params["labelSelector"] = label_selector
        headers = {"Accept": _METADATA_LIST} if metadata_only else {}
        resp = self.session.get(
            f"{self.server}{base}/namespaces/{namespace}/{kind}", params=params, headers=headers, timeout=30
        )
        resp.raise_for_status()
        items: list[dict[str, Any]] = resp.json().get("items") or []
        return items

    def count(self, prefix: str, *, namespace: str, label_selector: str = "") -> int:
        return len(self.list(prefix, namespace=namespace, label_selector=label_selector, metadata_only=True))

    def get(self, path: str) -> dict[str, Any]:
        resp = self.session.get(f"{self.server}{path}", timeout=30)
        resp.raise_for_status()
        data: dict[str, Any] = resp.json()
        return data

    def requests_total(self) -> int:
        """Every request the API server has served (``apiserver_request_total``, all clients)."""
        resp = self.session.get(f"{self.server}/metrics", timeout=30)
        resp.raise_for_status()
        return sum(int(s.value) for s in parse(resp.text, "apiserver_request_total"))


def poll(interval: float, deadline: float) -> Iterator[float]:
    """Yield the elapsed monotonic time every ``interval`` seconds until ``deadline`` (monotonic)."""
    while True:
        now = time.monotonic()
        if now >= deadline:
            return
        yield now
        time.sleep(interval)


def registry_requests(log: Path) -> dict[str, int]:
    """Requests the world's registry has answered so far, by user agent product (``flux``,
    ``lockgate``, ...), counted from its ``response completed`` log lines (every request,
    whatever the client says about itself)."""
    counts: dict[str, int] = {}
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return counts
    for line in text.splitlines():
        if "response completed" not in line:
            continue
        agent = "?"
        start = line.find("http.request.useragent=")
        if start >= 0:
            value = line[start + len("http.request.useragent=") :]
            value = value[1:] if value.startswith('"') else value
            agent = value.split("/", 1)[0].split()[0].strip('"') or "?"
        counts[agent] = counts.get(agent, 0) + 1
    return counts


class NameWatch:
    """The names of the objects one watch sees (metadata only), kept current by a thread.

    Polling a list of thousands of objects every half second costs the API server (and the
    2-core machine both tools share with it) more than the tools under test; one watch costs
    an event per change.
    """

    def __init__(self, api: ApiServer, path: str, *, label_selector: str = "") -> None:
        self.api = api
        self.path = path
        self.label_selector = label_selector
        self.names: set[str] = set()
        self.error = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name=f"watch {path}")
        self._response: requests.Response | None = None

    def start(self) -> NameWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._response is not None:
            self._response.close()
        self._thread.join(timeout=5)

    def count(self) -> int:
        with self._lock:
            return len(self.names)

    def _loop(self) -> None:
        version = "0"
        while not self._stop.is_set():
            params = {"watch": "1", "resourceVersion": version, "allowWatchBookmarks": "true"}
            if self.label_selector:
                params["labelSelector"] = self.label_selector
            if version == "0":
                with self._lock:
                    self.names.clear()
            try:
                with self.api.session.get(
                    f"{self.api.server}{self.path}",
                    params=params,
                    headers={"Accept": _METADATA_WATCH},
                    stream=True,
                    timeout=(10, 120),
                ) as resp:
                    self._response = resp
                    resp.raise_for_status()
                    for line in resp.iter_lines():
                        if self._stop.is_set():
                            return
                        if not line:
                            continue
                        event = json.loads(line)
                        kind, obj = event.get("type"), event.get("object", {})
                        meta = obj.get("metadata", {})
                        if kind == "ERROR":
                            version = "0"  # 410 Gone: start again from the watch cache
                            break
                        version = meta.get("resourceVersion", version)
                        with self._lock:
                            if kind in ("ADDED", "MODIFIED"):
                                self.names.add(meta.get("name", ""))
                            elif kind == "DELETED":
                                self.names.discard(meta.get("name", ""))
            except Exception as exc:  # closing the stream from stop() lands here too
                if self._stop.is_set():
                    return
                self.error = str(exc)
                time.sleep(0.5)
