"""``lockgate serve`` against Flux's own controllers: converge from cold, then idle.

N syncs of M ConfigMaps each, the same artifacts for both tools (pushed once to the world's
registry with lockgate's own packing, one repository per sync, objects without a namespace):

- Flux: source-controller + kustomize-controller as Flux v2.9.5 ships them (``bench/flux.py``),
  N OCIRepository (``insecure: true``, the registry is plain http) + N Kustomization
  (``prune: true``, ``wait: false``, ``targetNamespace: bench-serve-flux``), interval 1m;
- lockgate: one config file of N Sync documents (same URL, interval, prune, target namespace
  ``bench-serve-lg``) run by ``lockgate serve --config FILE --log-format json``.

Each tool runs alone (the other's processes stopped), in the same world, Flux first:

- *converge from cold*: the sync objects (Flux's custom resources, lockgate's config file)
  exist before the processes start; the clock runs from process start until all N x M
  ConfigMaps exist in the target namespace (counted through the API server's watch cache)
  and every sync has said Ready (Flux: every Kustomization has reported Ready=True with a
  lastAppliedRevision at least once; lockgate: every ``lockgate_sync_info{ready="true"}``);
- *idle*: after a settle time, a window with nothing changing (5 minutes by default):
  CPU as % of one core from ``/proc/<pid>/stat`` (both Flux controllers summed), peak RSS
  (``VmHWM``; for Flux the two controllers' peaks added, which bounds their joint peak from
  above), API requests per minute from the tools' own client counters (controller-runtime's
  ``rest_client_requests_total``; ``lockgate_api_requests_total``) and from the API server
  (``apiserver_request_total``, every client: the cluster's own background included, the same
  in both windows);
- *webhook to applied* (after the idle window, when the runner has a webhook): a new
  artifact under the same tag, then ``POST /hook/<sync>`` with the bearer token; the clock
  runs until the changed ConfigMaps are all in the cluster. Flux's peer is what its
  Receiver does on a hook: the ``reconcile.fluxcd.io/requestedAt`` annotation on the
  OCIRepository (there is no notification-controller here).

``run(world)`` plugs into ``bench/run.py`` (full sizes); ``python -m bench.bench_serve``
starts its own world and takes ``--syncs/--objects/--idle/--quick/--only``, and
``--replicas 3`` for the lockgate-only case of 1,000 syncs x 20 objects over three replicas.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

from bench import flux
from bench.common import BenchResult, markdown_table, push_objects
from bench.observe import (
    ApiServer,
    NameWatch,
    by_label,
    cpu_seconds,
    delta,
    memory_kib,
    registry_requests,
    scrape,
    writes,
)
from tests.world.kube import Cluster
from tests.world.process import Process, free_port, start
from tests.world.world import World

RESULTS = Path(__file__).resolve().parent / "results"
INTERVAL = "1m"
LABEL = "bench.lockgate.dev/serve"
RUNNER_NAMESPACE = "lockgate-system"
TARGET = {"flux": "bench-serve-flux", "lockgate": "bench-serve-lg"}
PEER = "Flux v2.9.5 (source-controller + kustomize-controller v1.9.5)"
HOOK_SECRET = "bench-serve-hook"
#: a hooked change not applied by then is reported at this bound (and no more hooks are tried)
HOOK_TIMEOUT = 180.0


@dataclass(frozen=True)
class Options:
    syncs: int = 100
    objects: int = 50
    idle: float = 300.0
    settle: float = 30.0
    timeout: float = 1200.0
    tools: tuple[str, ...] = ("flux", "lockgate")
    replicas: int = 1
    hooks: int = 5


@dataclass
class Phase:
    """One tool's run: converge, idle, webhook."""

    tool: str
    syncs: int
    objects: int
    replicas: int = 1
    converge_s: float = 0.0
    objects_s: float = 0.0
    ready_s: float = 0.0
    idle_s: float = 0.0
    cpu_percent: float = 0.0
    cpu_percent_each: list[float] = field(default_factory=list)
    peak_rss_kib: list[int] = field(default_factory=list)
    idle_rss_kib: list[int] = field(default_factory=list)
    client_requests: dict[str, int] = field(default_factory=dict)
    #: by user agent, from the registry's log
    registry_requests: dict[str, int] = field(default_factory=dict)
    #: lockgate's own lockgate_registry_requests_total, by verb
    own_registry_requests: dict[str, int] = field(default_factory=dict)
    #: work done in the idle window: Flux's controller_runtime_reconcile_total by controller,
    #: lockgate's lockgate_passes_total by outcome
    passes: dict[str, int] = field(default_factory=dict)
    apiserver_requests: int = 0
    hook_s: list[float] = field(default_factory=list)
    hook_apply_s: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def peak_rss_mb(self) -> float:
        return round(sum(self.peak_rss_kib) / 1024, 1)

    def per_minute(self, count: int) -> float:
        return round(count * 60 / self.idle_s, 1) if self.idle_s else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "peak_rss_mb": self.peak_rss_mb,
            "client_requests_per_minute": self.per_minute(sum(self.client_requests.values())),
            "client_writes_per_minute": self.per_minute(writes(self.client_requests)),
            "apiserver_requests_per_minute": self.per_minute(self.apiserver_requests),
        }


# ---- artifacts ---------------------------------------------------------------------


def sync_name(index: int) -> str:
    return f"s{index:04d}"


def configmaps(index: int, objects: int, *, revision: int) -> list[dict[str, Any]]:
    name = sync_name(index)
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{name}-o{j:03d}", "labels": {LABEL: "1", f"{LABEL}-sync": name}},
            "data": {"index": str(j), "revision": str(revision)},
        }
        for j in range(objects)
    ]


def push_artifacts(world: World, syncs: Sequence[int], objects: int, *, revision: int = 1) -> None:
    """One artifact per sync at ``bench/serve-<sync>:v1``, packed as lockgate packs."""
    for index in syncs:
        push_objects(
            world, f"bench/serve-{sync_name(index)}", "v1", configmaps(index, objects, revision=revision)
        )


def repository_url(world: World, index: int) -> str:
    return world.registry.oci(f"bench/serve-{sync_name(index)}")


# ---- waiting and measuring ---------------------------------------------------------


def _wait_converged(
    watch: NameWatch,
    *,
    target: str,
    expected: int,
    started: float,
    timeout: float,
    alive: Callable[[], None],
    ready: Callable[[], bool],
    phase: Phase,
) -> None:
    """Poll until ``expected`` ConfigMaps exist in ``target`` and ``ready()``; fill the phase's times."""
    deadline = started + timeout
    while True:
        alive()
        now = time.monotonic()
        count = watch.count()
        if count >= expected and not phase.objects_s:
            phase.objects_s = round(now - started, 2)
        if phase.objects_s and ready():
            phase.ready_s = round(time.monotonic() - started, 2)
            phase.converge_s = max(phase.objects_s, phase.ready_s)
            return
        if now > deadline:
            raise TimeoutError(
                f"{phase.tool}: {count}/{expected} ConfigMaps in {target} after {timeout:.0f}s"
                + ("" if count < expected else " (all objects there, not every sync Ready)")
            )
        time.sleep(0.2)


def configmap_watch(api: ApiServer, target: str) -> NameWatch:
    return NameWatch(api, f"/api/v1/namespaces/{target}/configmaps", label_selector=LABEL)


def _idle(
    phase: Phase,
    pids: Sequence[int],
    api: ApiServer,
    options: Options,
    *,
    client_counts: Callable[[], dict[str, int]],
    registry_log: Path,
    own_registry_counts: Callable[[], dict[str, int]] = dict,
    pass_counts: Callable[[], dict[str, int]] = dict,
    alive: Callable[[], None],
) -> None:
    time.sleep(options.settle)
    alive()
    cpu0 = [cpu_seconds(p) for p in pids]
    client0, api0 = client_counts(), api.requests_total()
    registry0, own0, passes0 = registry_requests(registry_log), own_registry_counts(), pass_counts()
    t0 = time.monotonic()
    end = t0 + options.idle
    while time.monotonic() < end:
        time.sleep(min(10.0, max(0.0, end - time.monotonic())))
        alive()
    phase.idle_s = round(time.monotonic() - t0, 1)
    cpu1 = [cpu_seconds(p) for p in pids]
    phase.client_requests = delta(client_counts(), client0)
    phase.registry_requests = {
        k: v for k, v in delta(registry_requests(registry_log), registry0).items() if v
    }
    phase.own_registry_requests = delta(own_registry_counts(), own0)
    phase.passes = delta(pass_counts(), passes0)
    phase.apiserver_requests = api.requests_total() - api0
    phase.cpu_percent_each = [round((b - a) * 100 / phase.idle_s, 3) for a, b in zip(cpu0, cpu1, strict=True)]
    phase.cpu_percent = round(sum(phase.cpu_percent_each), 3)
    phase.peak_rss_kib = [memory_kib(p, "VmHWM") for p in pids]
    phase.idle_rss_kib = [memory_kib(p, "VmRSS") for p in pids]


def _wait_changed(
    api: ApiServer, target: str, index: int, objects: int, revision: int, timeout: float
) -> float:
    """Seconds until every ConfigMap of sync ``index`` carries ``revision``."""
    started = time.monotonic()
    selector = f"{LABEL}-sync={sync_name(index)}"
    while time.monotonic() - started < timeout:
        items = api.list("/api/v1/configmaps", namespace=target, label_selector=selector)
        done = [i for i in items if i.get("data", {}).get("revision") == str(revision)]
        if len(done) >= objects:
            return time.monotonic() - started
        time.sleep(0.02)
    raise TimeoutError(f"sync {sync_name(index)} not at revision {revision} after {timeout:.0f}s")


# ---- Flux --------------------------------------------------------------------------


def run_flux(world: World, options: Options, workdir: Path) -> Phase:
    assert world.cluster is not None
    cluster = world.cluster
    api = ApiServer(cluster)
    phase = Phase("flux", options.syncs, options.objects)
    for ns in (flux.NAMESPACE, TARGET["flux"]):
        cluster.kubectl("create", "namespace", ns, check=False)
    flux.install_crds(cluster)
    docs: list[dict[str, Any]] = []
    for index in range(options.syncs):
        name = sync_name(index)
        docs.append(flux.oci_repository(name, repository_url(world, index), "v1", interval=INTERVAL))
        docs.append(flux.kustomization(name, interval=INTERVAL, target_namespace=TARGET["flux"]))
    manifest = workdir / "flux-syncs.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    cluster.kubectl("apply", "--server-side", "-f", str(manifest))
    watch = configmap_watch(api, TARGET["flux"]).start()
    try:
        controllers = flux.start_controllers(cluster, workdir / "flux")
    except BaseException:
        watch.stop()
        raise
    try:
        seen: set[str] = set()

        def all_ready() -> bool:
            done, total = flux.applied(api, seen)
            return done == total == options.syncs

        _wait_converged(
            watch,
            target=TARGET["flux"],
            expected=options.syncs * options.objects,
            started=controllers.started,
            timeout=options.timeout,
            alive=controllers.check,
            ready=all_ready,
            phase=phase,
        )
        print(f"  flux: converged in {phase.converge_s:.1f}s", flush=True)
        _idle(
            phase,
            controllers.pids,
            api,
            options,
            client_counts=lambda: flux.client_requests(controllers),
            registry_log=world.registry.process.log,
            pass_counts=lambda: flux.reconciles(controllers),
            alive=controllers.check,
        )
        print(f"  flux: idle {phase.idle_s:.0f}s, cpu {phase.cpu_percent:.2f}%", flush=True)
        for attempt in range(options.hooks):
            revision = 2 + attempt
            push_artifacts(world, [0], options.objects, revision=revision)
            started = time.monotonic()
            cluster.kubectl(
                "annotate",
                "--overwrite",
                "-n",
                flux.NAMESPACE,
                f"ocirepository/{sync_name(0)}",
                f"reconcile.fluxcd.io/requestedAt={time.time_ns()}",
            )
            try:
                _wait_changed(api, TARGET["flux"], 0, options.objects, revision, HOOK_TIMEOUT)
            except TimeoutError as exc:
                # kustomize-controller's queue is busy with interval reconciles: the hooked
                # Kustomization waits its turn; the row reports this bound, not a median
                phase.notes.append(f"hook {attempt + 1}: {exc}")
                phase.hook_s.append(HOOK_TIMEOUT)
                break
            phase.hook_s.append(round(time.monotonic() - started, 3))
        # the idle peaks are read again: the hook rounds may have raised them
        phase.peak_rss_kib = [memory_kib(p, "VmHWM") for p in controllers.pids]
    finally:
        watch.stop()
        controllers.stop()
    return phase


# ---- lockgate ----------------------------------------------------------------------


def lockgate_config(
    world: World, syncs: Sequence[int], *, metrics_port: int, webhook_port: int, hook_secret: str | None
) -> str:
    runner: dict[str, Any] = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Runner",
        "metadata": {"name": "runner"},
        "spec": {
            "namespace": RUNNER_NAMESPACE,
            "metricsAddress": f"127.0.0.1:{metrics_port}",
            "webhookAddress": f"127.0.0.1:{webhook_port}",
        },
    }
    if hook_secret:
        runner["spec"]["webhook"] = {"secretRef": {"name": hook_secret}}
    docs = [runner]
    for index in syncs:
        docs.append(
            {
                "apiVersion": "lockgate.dev/v1alpha1",
                "kind": "Sync",
                "metadata": {"name": sync_name(index)},
                "spec": {
                    "url": f"{repository_url(world, index)}:v1",
                    "interval": INTERVAL,
                    "prune": True,
                    "namespace": RUNNER_NAMESPACE,
                    "targetNamespace": TARGET["lockgate"],
                    "verify": {"insecureSkip": True},
                },
            }
        )
    return yaml.safe_dump_all(docs, sort_keys=False)


@dataclass
class Serve:
    """One running ``lockgate serve`` replica."""

    process: Process
    metrics: str
    webhook: str

    def metric(self, *names: str) -> list[Any]:
        return scrape(f"http://{self.metrics}/metrics", *names)

    def api_requests(self) -> dict[str, int]:
        return by_label(self.metric("lockgate_api_requests_total"), "verb", suffix="_total")

    def registry_requests(self) -> dict[str, int]:
        return by_label(self.metric("lockgate_registry_requests_total"), "verb", suffix="_total")

    def passes(self) -> dict[str, int]:
        return by_label(self.metric("lockgate_passes_total"), "outcome", suffix="_total")

    def ready_syncs(self) -> set[str]:
        return {
            s.labels.get("name", "")
            for s in self.metric("lockgate_sync_info")
            if s.labels.get("ready", "").lower() == "true" and s.value
        }

    def pass_seconds(self, sync: str) -> tuple[float, float]:
        """(sum, count) of ``gotk_reconcile_duration_seconds`` for one sync."""
        total = count = 0.0
        for s in self.metric("gotk_reconcile_duration_seconds"):
            if s.labels.get("name") != sync:
                continue
            if s.name.endswith("_sum"):
                total += s.value
            elif s.name.endswith("_count"):
                count += s.value
        return total, count


def start_serve(
    config: Path, cluster: Cluster, workdir: Path, *, metrics: str, webhook: str, name: str
) -> Serve:
    process = start(
        name,
        [
            sys.executable,
            "-m",
            "lockgate",
            "serve",
            "--config",
            str(config),
            f"--kubeconfig={cluster.kubeconfig}",
            "--log-format",
            "json",
        ],
        log=workdir / f"{name}.log",
        env={"LOCKGATE_RUNNER_IDENTITY": name, "POD_NAME": name},
        cwd=workdir,
    )
    return Serve(process, metrics, webhook)


def _sum_counts(serves: Sequence[Serve], pick: Callable[[Serve], dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for serve in serves:
        try:
            counts = pick(serve)
        except OSError:
            continue
        for key, value in counts.items():
            total[key] = total.get(key, 0) + value
    return total


def run_lockgate(world: World, options: Options, workdir: Path) -> Phase:
    assert world.cluster is not None
    cluster = world.cluster
    api = ApiServer(cluster)
    phase = Phase("lockgate", options.syncs, options.objects, replicas=options.replicas)
    for ns in (RUNNER_NAMESPACE, TARGET["lockgate"]):
        cluster.kubectl("create", "namespace", ns, check=False)
    token = secrets.token_urlsafe(24)
    cluster.kubectl(
        "create",
        "secret",
        "generic",
        HOOK_SECRET,
        "-n",
        RUNNER_NAMESPACE,
        f"--from-literal=token={token}",
        check=False,
    )
    serves: list[Serve] = []
    configs = []
    for replica in range(options.replicas):
        metrics_port, webhook_port = free_port(), free_port()
        config = workdir / f"lockgate-serve-{replica}.yaml"
        config.write_text(
            lockgate_config(
                world,
                range(options.syncs),
                metrics_port=metrics_port,
                webhook_port=webhook_port,
                hook_secret=HOOK_SECRET,
            )
        )
        configs.append((config, f"127.0.0.1:{metrics_port}", f"127.0.0.1:{webhook_port}"))
    watch = configmap_watch(api, TARGET["lockgate"]).start()
    started = time.monotonic()
    try:
        for replica, (config, metrics, webhook) in enumerate(configs):
            serves.append(
                start_serve(
                    config,
                    cluster,
                    workdir,
                    metrics=metrics,
                    webhook=webhook,
                    name=f"lockgate-serve-{replica}",
                )
            )

        def alive() -> None:
            for serve in serves:
                serve.process.check()

        def all_ready() -> bool:
            try:
                ready: set[str] = set()
                for serve in serves:
                    ready |= serve.ready_syncs()
            except OSError:
                return False
            return len(ready) >= options.syncs

        _wait_converged(
            watch,
            target=TARGET["lockgate"],
            expected=options.syncs * options.objects,
            started=started,
            timeout=options.timeout,
            alive=alive,
            ready=all_ready,
            phase=phase,
        )
        print(f"  lockgate: converged in {phase.converge_s:.1f}s", flush=True)
        _idle(
            phase,
            [s.process.pid for s in serves],
            api,
            options,
            client_counts=lambda: _sum_counts(serves, Serve.api_requests),
            registry_log=world.registry.process.log,
            own_registry_counts=lambda: _sum_counts(serves, Serve.registry_requests),
            pass_counts=lambda: _sum_counts(serves, Serve.passes),
            alive=alive,
        )
        print(f"  lockgate: idle {phase.idle_s:.0f}s, cpu {phase.cpu_percent:.2f}%", flush=True)
        if options.replicas == 1 and options.hooks:
            _hooks(world, serves[0], api, options, token, phase)
        phase.peak_rss_kib = [memory_kib(s.process.pid, "VmHWM") for s in serves]
    finally:
        watch.stop()
        for serve in serves:
            serve.process.stop(timeout=30)
    return phase


def _hooks(world: World, serve: Serve, api: ApiServer, options: Options, token: str, phase: Phase) -> None:
    sync = sync_name(0)
    for attempt in range(options.hooks):
        revision = 2 + attempt
        push_artifacts(world, [0], options.objects, revision=revision)
        before = serve.pass_seconds(sync)
        started = time.monotonic()
        resp = requests.post(
            f"http://{serve.webhook}/hook/{sync}",
            headers={"Authorization": f"Bearer {token}"},
            json={"bench": revision},
            timeout=10,
        )
        if resp.status_code >= 300:
            phase.notes.append(f"POST /hook/{sync}: {resp.status_code} {resp.text[:200]}")
            return
        try:
            _wait_changed(api, TARGET["lockgate"], 0, options.objects, revision, HOOK_TIMEOUT)
        except TimeoutError as exc:
            phase.notes.append(f"hook {attempt + 1}: {exc}")
            phase.hook_s.append(HOOK_TIMEOUT)
            return
        phase.hook_s.append(round(time.monotonic() - started, 3))
        time.sleep(1.0)  # the pass's own end (inventory write) before reading its duration
        after = serve.pass_seconds(sync)
        if after[1] > before[1]:
            phase.hook_apply_s.append(round((after[0] - before[0]) / (after[1] - before[1]), 3))


# ---- results -----------------------------------------------------------------------


def replica_results(ours: Phase) -> list[BenchResult]:
    """The lockgate-only case (several replicas): against the issue's absolute goals."""
    size = f"{ours.syncs} syncs x {ours.objects} objects over {ours.replicas} replicas"
    rss = [round(k / 1024, 1) for k in ours.peak_rss_kib]
    calls = sum(ours.client_requests.values())
    return [
        BenchResult(
            "serve",
            f"{size}: converge from cold",
            ours.converge_s,
            "(no peer)",
            ours.converge_s,
            extra={"objects_s": ours.objects_s, "ready_s": ours.ready_s},
        ),
        BenchResult(
            "serve",
            f"{size}: peak RSS of the largest replica",
            max(rss),
            "goal",
            200.0,
            goal="< 200 MB per replica",
            unit="MB",
            extra={"per_replica_mb": rss, "idle_rss_mb": [round(k / 1024, 1) for k in ours.idle_rss_kib]},
        ),
        BenchResult(
            "serve",
            f"{size}: idle registry requests, all replicas",
            ours.per_minute(sum(ours.registry_requests.values())),
            "one check per sync per interval",
            float(ours.syncs),
            goal="about one registry check per sync per interval",
            unit="/min",
            extra={"idle_s": ours.idle_s, "by_agent": ours.registry_requests, "passes": ours.passes},
        ),
        BenchResult(
            "serve",
            f"{size}: idle API requests, all replicas",
            ours.per_minute(calls),
            "(no peer)",
            ours.per_minute(calls),
            goal="no API writes",
            unit="/min",
            extra={
                "writes_per_min": ours.per_minute(writes(ours.client_requests)),
                "by_verb": ours.client_requests,
                "cpu_percent_each": ours.cpu_percent_each,
                "apiserver_all_clients_per_min": ours.per_minute(ours.apiserver_requests),
            },
        ),
    ]


def results(phases: dict[str, Phase]) -> list[BenchResult]:
    ours, peer = phases.get("lockgate"), phases.get("flux")
    if ours is not None and ours.replicas > 1:
        return replica_results(ours)
    if ours is None or peer is None:
        return []
    size = f"{ours.syncs} syncs x {ours.objects} objects"
    common = {"idle_s": ours.idle_s}
    rows = [
        BenchResult(
            "serve",
            f"{size}: converge from cold",
            ours.converge_s,
            PEER,
            peer.converge_s,
            goal="<= 0.5x",
            extra={
                "ours_objects_s": ours.objects_s,
                "ours_ready_s": ours.ready_s,
                "peer_objects_s": peer.objects_s,
                "peer_ready_s": peer.ready_s,
            },
        ),
        BenchResult(
            "serve",
            f"{size}: idle CPU",
            ours.cpu_percent,
            PEER,
            peer.cpu_percent,
            goal="< 2% of a core",
            unit="% core",
            extra={**common, "peer_each": peer.cpu_percent_each},
        ),
        BenchResult(
            "serve",
            f"{size}: peak RSS",
            ours.peak_rss_mb,
            PEER,
            peer.peak_rss_mb,
            goal="< 150 MB, <= 0.3x",
            unit="MB",
            extra={
                "peer_each_mb": [round(k / 1024, 1) for k in peer.peak_rss_kib],
                "ours_idle_rss_mb": round(sum(ours.idle_rss_kib) / 1024, 1),
                "peer_idle_rss_mb": round(sum(peer.idle_rss_kib) / 1024, 1),
            },
        ),
        BenchResult(
            "serve",
            f"{size}: idle API requests",
            ours.per_minute(sum(ours.client_requests.values())),
            PEER,
            peer.per_minute(sum(peer.client_requests.values())),
            unit="/min",
            extra={
                **common,
                "ours_writes_per_min": ours.per_minute(writes(ours.client_requests)),
                "peer_writes_per_min": peer.per_minute(writes(peer.client_requests)),
                "ours_by_verb": ours.client_requests,
                "peer_by_method": peer.client_requests,
                "ours_registry_by_agent": ours.registry_requests,
                "peer_registry_by_agent": peer.registry_requests,
                "ours_registry_own_count": ours.own_registry_requests,
                "ours_passes": ours.passes,
                "peer_reconciles": peer.passes,
                "apiserver_all_clients_per_min_ours_window": ours.per_minute(ours.apiserver_requests),
                "apiserver_all_clients_per_min_peer_window": peer.per_minute(peer.apiserver_requests),
            },
        ),
    ]
    if ours.hook_s and peer.hook_s:
        # a timeout counts as its bound; the notes say so
        rows.append(
            BenchResult(
                "serve",
                f"{size}: webhook to applied (median of {len(ours.hook_s)})",
                statistics.median(ours.hook_s),
                PEER + ", requestedAt annotation",
                statistics.median(peer.hook_s),
                goal="< 1 s + apply",
                extra={
                    "ours": ours.hook_s,
                    "ours_pass_s": ours.hook_apply_s,
                    "peer": peer.hook_s,
                    "notes": ours.notes + peer.notes,
                },
            )
        )
    return rows


def write(phases: dict[str, Phase], rows: list[BenchResult], options: Options, name: str = "serve") -> None:
    RESULTS.mkdir(exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "options": options.__dict__}
    (RESULTS / f"{name}.json").write_text(
        json.dumps(
            {
                "meta": meta,
                "phases": {k: v.as_dict() for k, v in phases.items()},
                "results": [r.as_dict() for r in rows],
            },
            indent=2,
            default=list,
        )
        + "\n"
    )
    lines = [
        f"# serve benchmark: `lockgate serve` against {PEER}",
        "",
        f"Produced by `python -m bench.bench_serve` (or `make bench`) on {meta['date']}; options {options}.",
        "How it measures: the docstring of `bench/bench_serve.py`. Ratio = lockgate / Flux in the same",
        "run (lower is better); each tool ran alone, Flux first. Values are in the row's unit.",
        "",
    ]
    lines += markdown_table(rows)
    lines += [
        "",
        "## Phases",
        "",
        "```json",
        json.dumps({k: v.as_dict() for k, v in phases.items()}, indent=2),
        "```",
    ]
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")


def measure(world: World, options: Options) -> dict[str, Phase]:
    push_artifacts(world, range(options.syncs), options.objects)
    phases: dict[str, Phase] = {}
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-serve-") as tmp:
        workdir = Path(tmp)
        for tool, runner in (("flux", run_flux), ("lockgate", run_lockgate)):
            if tool not in options.tools:
                continue
            try:
                phases[tool] = runner(world, options, workdir)
            except Exception as exc:  # one tool failing still leaves the other's numbers
                print(f"  {tool}: failed: {exc}", flush=True)
                phases[tool] = Phase(tool, options.syncs, options.objects, notes=[f"failed: {exc}"])
        if os.environ.get("LOCKGATE_BENCH_KEEP"):
            keep = Path(os.environ["LOCKGATE_BENCH_KEEP"])
            keep.mkdir(parents=True, exist_ok=True)
            for log in workdir.rglob("*.log"):
                (keep / log.name).write_bytes(log.read_bytes())
    return phases


def run(world: World) -> list[BenchResult]:
    options = Options()
    phases = measure(world, options)
    rows = results(phases)
    write(phases, rows, options)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_serve")
    parser.add_argument("--syncs", type=int, default=100)
    parser.add_argument("--objects", type=int, default=50)
    parser.add_argument("--idle", type=float, default=300.0, help="idle window, seconds")
    parser.add_argument("--settle", type=float, default=30.0)
    parser.add_argument("--quick", action="store_true", help="idle 60 s, settle 10 s")
    parser.add_argument("--only", choices=["flux", "lockgate"])
    parser.add_argument("--replicas", type=int, default=1, help="lockgate replicas (lockgate only when > 1)")
    parser.add_argument("--hooks", type=int, default=5)
    parser.add_argument("--name", default="", help="results file name (default serve, serve-replicas)")
    args = parser.parse_args(argv)
    tools: tuple[str, ...] = (args.only,) if args.only else ("flux", "lockgate")
    if args.replicas > 1:
        tools = ("lockgate",)
    options = Options(
        syncs=args.syncs,
        objects=args.objects,
        idle=60.0 if args.quick else args.idle,
        settle=10.0 if args.quick else args.settle,
        tools=tools,
        replicas=args.replicas,
        hooks=args.hooks,
    )
    world = World.start()
    try:
        phases = measure(world, options)
    finally:
        world.stop()
    rows = results(phases)
    write(phases, rows, options, name=args.name or ("serve" if args.replicas == 1 else "serve-replicas"))
    for phase in phases.values():
        print(json.dumps(phase.as_dict(), default=list))
    for row in rows:
        print(
            f"{row.scenario}: ours {row.ours_seconds} {row.unit}, "
            f"flux {row.peer_seconds} {row.unit}, ratio {row.ratio:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
