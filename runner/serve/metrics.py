"""What ``lockgate serve`` tells Prometheus: one ``Metrics`` value per process, on its own registry.

The scheduler calls ``observe_pass`` after every pass (full or cheap check), ``set_sync_info``
when a sync's state changes, ``count_api`` and ``count_registry`` with request deltas, and
``reload`` after each configuration reload; ``/metrics`` (``runner.serve.http``) renders
``exposition``. Nothing is global: each ``Metrics`` holds its own ``CollectorRegistry``, so
tests (and a reload that rebuilds the service) can make as many as they like.

``gotk_reconcile_duration_seconds`` carries Flux's name, labels and buckets
(``fluxcd/pkg`` ``runtime/metrics/recorder.go``: ``ExponentialBucketsRange(10e-3, 1800, 10)``),
so Flux's Grafana dashboards chart lockgate's syncs with ``kind="Sync"``. The info series
follows Flux's ``gotk_resource_info``: ``ready`` is ``True``/``False``, ``suspended``
``true``/``false``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping

import prometheus_client
from prometheus_client import CollectorRegistry

from lockgate.diff.changeset import Action
from runner.pipeline.reconcile import SyncOptions
from runner.pipeline.result import Result

KIND = "Sync"
PROVIDERS = ("github", "generic", "slack")
OUTCOMES = ("applied", "unchanged", "skipped", "failed", "abandoned", "rolledBack")
# passes that ended with the cluster holding the sync's objects: they set the managed count
_SETTLED = frozenset({"applied", "unchanged", "rolledBack"})
# the text format prometheus_client's ``generate_latest`` writes (stable across its versions)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def exponential_buckets_range(low: float, high: float, count: int) -> tuple[float, ...]:
    """client_golang's ``prometheus.ExponentialBucketsRange``: ``count`` bounds from ``low`` to ``high``."""
    factor = (high / low) ** (1.0 / (count - 1))
    return tuple(low * factor**i for i in range(count))


# Flux's reconcile duration buckets: 10 ms to 30 min in ten exponential steps
FLUX_BUCKETS = exponential_buckets_range(10e-3, 1800, 10)


class Metrics:
    """The serve process's metrics; every method is safe to call from any thread."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        sync = ["name", "namespace"]
        self._duration = prometheus_client.Histogram(
            "gotk_reconcile_duration_seconds",
            "The duration in seconds of a GitOps Toolkit resource reconciliation.",
            ["kind", *sync],
            buckets=FLUX_BUCKETS,
            registry=self.registry,
        )
        self._info = prometheus_client.Gauge(
            "lockgate_sync_info",
            "A sync's source and state (always 1): url, revision, digest, ready, suspended.",
            [*sync, "url", "revision", "digest", "ready", "suspended"],
            registry=self.registry,
        )
        # by phase only, not by sync: 13 series whatever the number of syncs
        self._phases = prometheus_client.Histogram(
            "lockgate_pass_phase_seconds",
            "Where full passes spend their time: resolve, verify, pull, build, prepare, inventory, "
            "plan, preflight, record, apply, prune, events, wait, hooks, attest.",
            ["phase"],
            buckets=FLUX_BUCKETS,
            registry=self.registry,
        )
        self._passes = prometheus_client.Counter(
            "lockgate_passes",
            "Passes by outcome: applied, unchanged, skipped (cheap check, same digest), failed, "
            "abandoned, rolledBack.",
            [*sync, "outcome"],
            registry=self.registry,
        )
        self._managed = prometheus_client.Gauge(
            "lockgate_managed_objects",
            "Objects the sync manages after its last settled pass.",
            sync,
            registry=self.registry,
        )
        self._drift = prometheus_client.Counter(
            "lockgate_drift_corrections",
            "Objects created or configured again by a pass whose digest had not changed.",
            sync,
            registry=self.registry,
        )
        self._drift_detected = prometheus_client.Counter(
            "lockgate_drift_detected",
            "Objects found drifted and left as they are (driftDetection.mode warn), counted at "
            "every pass that finds them.",
            sync,
            registry=self.registry,
        )
        self._api = prometheus_client.Counter(
            "lockgate_api_requests",
            "Requests to the Kubernetes API server, by verb.",
            ["verb"],
            registry=self.registry,
        )
        self._registry_requests = prometheus_client.Counter(
            "lockgate_registry_requests",
            "Requests to OCI registries (token services included), by HTTP verb.",
            ["verb"],
            registry=self.registry,
        )
        self._reloads = prometheus_client.Counter(
            "lockgate_config_reloads",
            "Configuration reloads, by result (success: taken into use, failure: refused).",
            ["result"],
            registry=self.registry,
        )
        for result in ("success", "failure"):
            self._reloads.labels(result)
        self._notifications = prometheus_client.Counter(
            "lockgate_notifications",
            "Notifications delivered (commit statuses, events, messages), by provider type and sync.",
            ["provider", "sync"],
            registry=self.registry,
        )
        self._notification_failures = prometheus_client.Counter(
            "lockgate_notification_failures",
            "Notifications given up (after the retries, or dropped by a full queue), by provider "
            "type and sync; the pass itself is not failed.",
            ["provider", "sync"],
            registry=self.registry,
        )
        self._waiting = prometheus_client.Gauge(
            "lockgate_promotion_waiting",
            "1 while the newest digest of a sync's source lacks the attestations its "
            "verify.attestations require (or their soak time), else 0; the pass's waiting says which.",
            sync,
            registry=self.registry,
        )
        self._lock = threading.Lock()
        self._info_labels: dict[tuple[str, str], tuple[str, ...]] = {}
        self._settled_digest: dict[tuple[str, str], str] = {}

    def observe_pass(self, sync: SyncOptions, result: Result, outcome: str) -> None:
        """Record one pass of ``sync``; its namespace is ``result.namespace`` (the runner namespace)."""
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown pass outcome {outcome!r}; expected one of {', '.join(OUTCOMES)}")
        name, namespace = sync.name, result.namespace or sync.namespace or ""
        self._duration.labels(KIND, name, namespace).observe(max(result.seconds, 0.0))
        self._passes.labels(name, namespace, outcome).inc()
        for phase, seconds in result.timings.seconds.items():
            self._phases.labels(phase).observe(seconds)
        if result.digest or result.waiting:  # a full pass (a cheap check knows nothing of attestations)
            self._waiting.labels(name, namespace).set(1 if result.waiting else 0)
        if outcome not in _SETTLED:
            return
        counts = result.changeset.counts()
        managed = sum(counts[a.value] for a in (Action.CREATED, Action.CONFIGURED, Action.UNCHANGED))
        self._managed.labels(name, namespace).set(managed)
        with self._lock:
            before = self._settled_digest.get((name, namespace))
            self._settled_digest[(name, namespace)] = result.digest
        corrected = counts[Action.CREATED.value] + counts[Action.CONFIGURED.value]
        # drift: the same artifact applied again and the cluster had moved away from it
        if outcome == "applied" and before is not None and before == result.digest and corrected:
            self._drift.labels(name, namespace).inc(corrected)
        drifted = len(result.changeset.drifted)
        if drifted:
            self._drift_detected.labels(name, namespace).inc(drifted)

    def set_sync_info(
        self,
        name: str,
        namespace: str,
        url: str,
        revision: str,
        digest: str,
        ready: bool,
        suspended: bool,
    ) -> None:
        """The sync's one info series; a change of any label replaces the old series."""
        labels = (
            name,
            namespace,
            url,
            revision,
            digest,
            "True" if ready else "False",
            "true" if suspended else "false",
        )
        with self._lock:
            old = self._info_labels.get((name, namespace))
            self._info_labels[(name, namespace)] = labels
            if old is not None and old != labels:
                with contextlib.suppress(KeyError):
                    self._info.remove(*old)
            self._info.labels(*labels).set(1)

    def forget(self, name: str, namespace: str) -> None:
        """Drop every series of a sync that a reload removed."""
        with self._lock:
            info = self._info_labels.pop((name, namespace), None)
            self._settled_digest.pop((name, namespace), None)
            with contextlib.suppress(KeyError):
                if info is not None:
                    self._info.remove(*info)
            for outcome in OUTCOMES:
                with contextlib.suppress(KeyError):
                    self._passes.remove(name, namespace, outcome)
            for metric in (self._managed, self._drift, self._drift_detected, self._waiting):
                with contextlib.suppress(KeyError):
                    metric.remove(name, namespace)
            with contextlib.suppress(KeyError):
                self._duration.remove(KIND, name, namespace)
            for provider in PROVIDERS:
                for counter in (self._notifications, self._notification_failures):
                    with contextlib.suppress(KeyError):
                        counter.remove(provider, name)

    def count_api(self, counts: Mapping[str, int]) -> None:
        """Add request deltas per verb (``get``, ``list``, ``patch``...) as ``Kube.counts`` keeps them."""
        for verb, n in counts.items():
            if n > 0:
                self._api.labels(verb).inc(n)

    def count_registry(self, verb: str, n: int = 1) -> None:
        """Add ``n`` registry requests of ``verb`` (lower-case HTTP method, as ``Transport.counts``)."""
        if n > 0:
            self._registry_requests.labels(verb.lower()).inc(n)

    def notification_sent(self, provider: str, sync: str) -> None:
        self._notifications.labels(provider, sync).inc()

    def notification_failed(self, provider: str, sync: str) -> None:
        self._notification_failures.labels(provider, sync).inc()

    def reload(self, ok: bool) -> None:
        self._reloads.labels("success" if ok else "failure").inc()

    def exposition(self) -> tuple[bytes, str]:
        """The Prometheus text format of everything above, and its content type."""
        return prometheus_client.generate_latest(self.registry), CONTENT_TYPE
