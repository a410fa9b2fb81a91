"""Fleet scale (issue 24 item 5): N runners attest, M downstream syncs wait for a quorum of all N.

One registry, the world's (Distribution 2.8: no referrers API, so every lookup of the
attestations of a digest goes through the tag-schema fallback index). For N = 10, 50, 100
and 200 with ``serve``'s ``RegistryCache`` on every client (ours), and for N = 10 and 50 also
with no cache (the peer: the path before the cache, what a client without one still does;
beyond 50 its checks outlast the interval here, so larger N are compared with ours at N=10).

* **Runners**: N threads, each with its own key, clusterName (``fleet-<i>``) and registry
  client, as each cluster's runner has. Every ``INTERVAL`` each makes the cheap check of a
  sync on ``semver: ">=1.0.0"`` (``source.current_digest``: a tag list and a HEAD); when a
  new version appears it waits a random "health wait" in ``[0, SPREAD]`` and attests it
  healthy with ``attest.attest_with_key`` (what a runner's pass writes; no cluster is
  needed for that: the attestation is what reaches the registry).
* **Downstream syncs**: M threads, each with its own client, each a sync on the same range
  requiring a healthy attestation from every one of the N clusters, checked every
  ``INTERVAL`` on serve's cheap-check path (``source.current_digest``, which evaluates the
  policy). The quorum is N ``verify.attestations[]`` entries sharing one key-set policy (the
  N runners' public keys, as a Secret of ``*.pub`` entries): the referrers of a digest are
  read once per check for all entries (``requirements.check_requirements``), so it costs the
  registry what one quorum entry (``clusters``/``minClusters``) costs. ``QUORUM_FIELDS``
  switches to that one entry when ``AttestationSpec`` has the fields.

Each round: push 1.0.0 and let every runner attest it; start the downstream syncs and let
them settle on 1.0.0; then **steady state**: ``STEADY`` seconds in which nothing changes,
all registry requests counted (``client.counts``); then **release**: push 1.1.0, the runners
see it, wait and attest; the **latency** is from the last runner's attestation (its last
write of the fallback index, which makes it visible) to each downstream check that decides
1.1.0 may apply (the pass that would follow is out of scope: it costs the same at every N,
and its own attestation check reuses the cache).
**The referrers API** (``--api-sizes``, default N = 10, 50, 100): the same rounds, cache on,
against the world's registry with the OCI referrers API (go-containerregistry's, behind the
front of ``tests/world/referrers_registry.py``: ``API_PAGE_SIZE`` referrers a page, an ETag per
page). Attestations are then referrers only (no fallback index is written) and each downstream
check reads every page of the list with ``If-None-Match``; the peer is the tag fallback round
(Distribution, cache on) at the same N in the same run. The front's own counts say how many
referrers requests were answered ``304 Not Modified`` in the steady window.

Requests per check and per attestation are exact counts; requests per second and the
latency depend on this machine (2 shared cores; the benchmark's Python threads and the
registry compete for them), which is why ours is reported as a ratio to the peer measured
in the same run, and the growth from N=10 to N=200 for both.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import random
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec

from bench.common import BenchResult, markdown_table
from lockgate import registry
from lockgate.errors import LockgateError
from lockgate.registry.cache import RegistryCache
from lockgate.signing import attest, layout
from lockgate.signing.policy import KeyPolicy, KeySetPolicy
from runner.pipeline import source
from tests.world.referrers_registry import ReferrersRegistry, start_referrers_registry
from tests.world.registry import Registry
from tests.world.world import World

SIZES = (10, 50, 100, 200)
#: the sizes measured again against the registry with the referrers API
API_SIZES = (10, 50, 100)
#: referrers a page of that registry's list (its front pages it; real registries vary)
API_PAGE_SIZE = 25
#: the sizes the peer (no cache) is also measured at: beyond 50 runners each of its checks
#: reads and verifies every attestation again and outlasts the interval on a 2-core machine,
#: so larger rounds compare ours with ours at the smallest size (the growth) instead
PEER_SIZES = (10, 50)
SYNCS = 10
INTERVAL = 5.0
STEADY = 3 * INTERVAL
#: a runner's health wait after it sees a release: [0, SPREAD] seconds
SPREAD = 2.0
#: how long a release may take to reach every downstream sync before the round fails
DEADLINE = 600.0
RESULTS = Path(__file__).resolve().parent / "results"
RANGE = ">=1.0.0"
#: the quorum fields of ``verify.attestations[]`` (issue 24 item 1), once ``AttestationSpec`` has them
QUORUM_FIELDS = {"clusters", "min_clusters"} <= {f.name for f in dataclasses.fields(source.AttestationSpec)}


def _push(client: registry.RegistryClient, repo: str, version: str) -> str:
    """A one-layer Flux-shaped artifact tagged ``version``; returns its digest."""
    layer = f"version: {version}\n".encode()
    blobs = [
        (b"{}", "application/vnd.cncf.flux.config.v1+json"),
        (layer, "application/vnd.cncf.flux.content.v1.tar+gzip"),
    ]
    for data, _ in blobs:
        client.upload_blob(repo, data, digest=layout.sha256_digest(data), size=len(data))
    manifest = {
        "schemaVersion": 2,
        "mediaType": layout.OCI_MANIFEST,
        "config": layout.descriptor(blobs[0][1], blobs[0][0]),
        "layers": [layout.descriptor(blobs[1][1], blobs[1][0])],
    }
    return client.put_manifest(repo, version, json.dumps(manifest).encode(), layout.OCI_MANIFEST)


def quorum(clusters: list[str], policy: KeySetPolicy) -> tuple[source.AttestationSpec, ...]:
    """Every one of ``clusters`` healthy, signed by one of ``policy``'s keys."""
    if QUORUM_FIELDS:
        fields: dict[str, Any] = {"clusters": ("fleet-*",), "min_clusters": len(clusters)}
        return (source.AttestationSpec(cluster=None, policy=policy, **fields),)
    return tuple(source.AttestationSpec(cluster=name, policy=policy) for name in clusters)


@dataclass
class Round:
    """What one (N, cache on or off) round measured."""

    runners: int
    syncs: int
    cached: bool
    #: against the registry with the referrers API (else Distribution: the tag fallback)
    api: bool = False
    steady_seconds: float = 0.0
    steady_runner_requests: int = 0
    steady_sync_requests: int = 0
    steady_sync_checks: int = 0
    steady_runner_checks: int = 0
    steady_check_seconds: list[float] = field(default_factory=list)
    #: requests each attestation of the release cost its runner
    attest_requests: list[int] = field(default_factory=list)
    #: per downstream sync: from the last attestation to the check that chose the release
    latency: list[float] = field(default_factory=list)
    #: checks that failed and were retried on the next interval (runners' and syncs')
    retried_checks: int = 0
    #: the referrers API's front, steady window: referrers requests, and those answered 304
    steady_referrers_requests: int = 0
    steady_referrers_304: int = 0

    @property
    def requests_per_second(self) -> float:
        return (self.steady_runner_requests + self.steady_sync_requests) / self.steady_seconds

    @property
    def sync_requests_per_second(self) -> float:
        return self.steady_sync_requests / self.steady_seconds

    @property
    def requests_per_check(self) -> float:
        return self.steady_sync_requests / max(self.steady_sync_checks, 1)

    @property
    def runner_requests_per_check(self) -> float:
        return self.steady_runner_requests / max(self.steady_runner_checks, 1)


class Poller(threading.Thread):
    """Calls ``check`` every ``INTERVAL`` from a random phase until stopped; keeps the answers."""

    def __init__(self, check: Callable[[], str], stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.check, self.stop = check, stop
        self.answers: list[tuple[float, str, float]] = []  # (when answered, digest, seconds)
        self.error: BaseException | None = None
        #: checks that failed as a runner's pass fails and is retried on the next interval
        self.failed: list[str] = []

    def run(self) -> None:
        due = time.monotonic() + random.uniform(0, INTERVAL)
        while not self.stop.wait(max(0.0, due - time.monotonic())):
            started = time.monotonic()
            try:
                answer = self.check()
            except LockgateError as exc:
                # e.g. Distribution lists a tag a moment before its link is written: the
                # runner's pass fails and the next interval tries again; so does this check
                self.failed.append(exc.message)
                due = max(due + INTERVAL, time.monotonic())
                continue
            except BaseException as exc:  # the round reports it
                self.error = exc
                return
            self.answers.append((time.monotonic(), answer, time.monotonic() - started))
            due = max(due + INTERVAL, time.monotonic())


class FleetRunner(Poller):
    """One cluster's runner: its cheap check, and an attestation for each new version."""

    def __init__(
        self, number: int, url: str, cached: bool, stop: threading.Event, *, api: bool = False
    ) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.cluster = f"fleet-{number}"
        self.client = registry.RegistryClient.for_reference(
            registry.parse(url), cache=RegistryCache() if cached else None
        )
        self.spec = source.SourceSpec(url=url, semver=RANGE, insecure_skip_verify=True)
        self.url = url
        #: digest -> (when its entry was last written to the fallback index, requests it cost)
        self.attested: dict[str, tuple[float, int]] = {}
        self.listed_at = 0.0
        put = self.client.put_manifest

        def put_and_note(repo: str, ref: str, content: bytes, media_type: str) -> str:
            written = put(repo, ref, content, media_type)
            # listed from now on: in the fallback index, or (the API) as soon as the referrer is stored
            if ref.startswith("sha256-") or (api and ref.startswith("sha256:")):
                self.listed_at = time.monotonic()
            return written

        self.client.put_manifest = put_and_note  # type: ignore[method-assign]
        super().__init__(self._check, stop)

    def _check(self) -> str:
        digest = source.current_digest(self.spec, self.client)
        if digest not in self.attested:
            time.sleep(random.uniform(0, SPREAD))  # the pass applies and waits for health
            before = sum(self.client.counts.values())
            predicate = attest.health_predicate(
                cluster=self.cluster,
                sync="app",
                revision=digest,
                healthy=True,
                at=dt.datetime.now(dt.UTC),
                objects={"total": 1, "current": 1},
            )
            attest.attest_with_key(
                f"{self.url}@{digest}",
                self.key,
                predicate_type=attest.HEALTHY,
                predicate=predicate,
                client=self.client,
            )
            self.attested[digest] = (self.listed_at, sum(self.client.counts.values()) - before)
        return digest


def _total(clients: list[registry.RegistryClient]) -> int:
    return sum(sum(c.counts.values()) for c in clients)


def _wait(what: str, done: Callable[[], bool], pollers: Sequence[Poller], deadline: float = DEADLINE) -> None:
    limit = time.monotonic() + deadline
    while not done():
        for poller in pollers:
            if poller.error is not None:
                raise RuntimeError(f"{what}: a check failed: {poller.error}") from poller.error
        if time.monotonic() > limit:
            raise RuntimeError(f"{what}: not done within {deadline:.0f}s")
        time.sleep(0.05)


def measure_round(target: Registry, runners: int, syncs: int, *, cached: bool) -> Round:
    api = isinstance(target, ReferrersRegistry)
    kind = "api" if api else "cached" if cached else "uncached"
    repo = f"bench/fleet/{kind}-{runners}-{int(time.time())}"
    url = target.oci(repo)
    pusher = registry.RegistryClient.for_reference(registry.parse(url))
    stop = threading.Event()
    fleet = [FleetRunner(n, url, cached, stop, api=api) for n in range(runners)]
    policy = KeySetPolicy(
        tuple(KeyPolicy(r.key.public_key(), source=f"runners[{r.cluster}.pub]") for r in fleet),
        source="Secret/runners",
    )
    wanted = quorum([r.cluster for r in fleet], policy)
    spec = source.SourceSpec(url=url, semver=RANGE, insecure_skip_verify=True, attestations=wanted)
    clients = [
        registry.RegistryClient.for_reference(registry.parse(url), cache=RegistryCache() if cached else None)
        for _ in range(syncs)
    ]
    downstream = [
        Poller(lambda client=client: source.current_digest(spec, client), stop)  # type: ignore[misc]
        for client in clients
    ]
    measured = Round(runners, syncs, cached, api)
    front = target.counts if isinstance(target, ReferrersRegistry) else lambda: {}
    try:
        v100 = _push(pusher, repo, "1.0.0")
        for runner in fleet:
            runner.start()
        _wait("1.0.0 attested by every runner", lambda: all(v100 in r.attested for r in fleet), fleet)
        for poller in downstream:
            poller.start()
        _wait(
            "1.0.0 chosen downstream",
            lambda: all(p.answers and p.answers[-1][1] == v100 for p in downstream),
            [*fleet, *downstream],
        )
        time.sleep(INTERVAL)  # every check after the first finds its referrers known
        runner_clients = [r.client for r in fleet]
        r0, s0 = _total(runner_clients), _total(clients)
        c0 = [len(p.answers) for p in downstream]
        k0 = [len(r.answers) for r in fleet]
        f0 = front()
        t0 = time.monotonic()
        time.sleep(STEADY)
        measured.steady_seconds = time.monotonic() - t0
        f1 = front()
        measured.steady_referrers_requests = f1.get("referrers", 0) - f0.get("referrers", 0)
        measured.steady_referrers_304 = f1.get("referrers 304", 0) - f0.get("referrers 304", 0)
        measured.steady_runner_requests = _total(runner_clients) - r0
        measured.steady_sync_requests = _total(clients) - s0
        measured.steady_sync_checks = sum(len(p.answers) - c for p, c in zip(downstream, c0, strict=True))
        measured.steady_runner_checks = sum(len(r.answers) - k for r, k in zip(fleet, k0, strict=True))
        measured.steady_check_seconds = [
            a[2] for p, c in zip(downstream, c0, strict=True) for a in p.answers[c:]
        ]

        v110 = _push(pusher, repo, "1.1.0")
        _wait(
            "1.1.0 chosen downstream",
            lambda: all(any(a[1] == v110 for a in p.answers) for p in downstream),
            [*fleet, *downstream],
        )
        _wait("1.1.0 attested by every runner", lambda: all(v110 in r.attested for r in fleet), fleet)
        last = max(r.attested[v110][0] for r in fleet)
        measured.attest_requests = [r.attested[v110][1] for r in fleet]
        measured.latency = [next(a[0] for a in p.answers if a[1] == v110) - last for p in downstream]
    finally:
        stop.set()
        for thread in (*fleet, *downstream):
            if thread.is_alive():
                thread.join(60)
        measured.retried_checks = sum(len(p.failed) for p in (*fleet, *downstream))
    return measured


def _growth(rounds: dict[tuple[int, bool], Round], value: Callable[[Round], float], cached: bool) -> str:
    sizes = sorted(n for n, c in rounds if c == cached)
    if not sizes:
        return "not measured"
    base = value(rounds[(sizes[0], cached)])
    return ", ".join(f"N={n}: {value(rounds[(n, cached)]) / base:.2f}x" for n in sizes) if base else "n/a"


def results(rounds: dict[tuple[int, bool], Round]) -> list[BenchResult]:
    rows: list[BenchResult] = []
    smallest = min(n for n, _ in rounds)
    for n in sorted({n for n, _ in rounds}):
        ours = rounds[(n, True)]
        if (n, False) in rounds:
            theirs, peer = rounds[(n, False)], "cache off (no RegistryCache), same run"
        else:
            theirs, peer = rounds[(smallest, True)], f"cache on at N={smallest}, same run (growth)"
        where = f"{n} runners, {ours.syncs} syncs (quorum of {n}), interval {INTERVAL:g}s"
        common: dict[str, object] = {
            "runner_requests_per_check": round(ours.runner_requests_per_check, 2),
            "attest_requests_median": statistics.median(ours.attest_requests),
            "attest_requests_max": max(ours.attest_requests),
            "peer_attest_requests_median": statistics.median(theirs.attest_requests),
            "retried_checks": ours.retried_checks,
            "peer_retried_checks": theirs.retried_checks,
        }
        rows.append(
            BenchResult(
                benchmark="fleet",
                scenario=f"{where}: registry requests/s of the whole fleet, steady state",
                ours_seconds=round(ours.requests_per_second, 1),
                peer=peer,
                peer_seconds=round(theirs.requests_per_second, 1),
                unit="req/s",
                goal="runners' own checks (2 each) + 3 per sync per interval",
                extra={
                    **common,
                    "sync_checks": ours.steady_sync_checks,
                    "peer_sync_checks": theirs.steady_sync_checks,
                    "check_s_median": round(statistics.median(ours.steady_check_seconds), 4),
                    "peer_check_s_median": round(statistics.median(theirs.steady_check_seconds), 4),
                },
            )
        )
        rows.append(
            BenchResult(
                benchmark="fleet",
                scenario=f"{where}: registry requests/s of the downstream syncs, steady state",
                ours_seconds=round(ours.sync_requests_per_second, 2),
                peer=peer,
                peer_seconds=round(theirs.sync_requests_per_second, 2),
                unit="req/s",
                goal="flat in N",
            )
        )
        rows.append(
            BenchResult(
                benchmark="fleet",
                scenario=f"{where}: requests per downstream check",
                ours_seconds=round(ours.requests_per_check, 2),
                peer=peer,
                peer_seconds=round(theirs.requests_per_check, 2),
                unit="req",
                goal="3: tag list, tag HEAD, index HEAD",
            )
        )
        rows.append(
            BenchResult(
                benchmark="fleet",
                scenario=f"{where}: last attestation to the check that may apply (max of {ours.syncs})",
                ours_seconds=round(max(ours.latency), 3),
                peer=peer,
                peer_seconds=round(max(theirs.latency), 3),
                goal=f"<= interval ({INTERVAL:g}s) + one check",
                extra={
                    "median_s": round(statistics.median(ours.latency), 3),
                    "peer_median_s": round(statistics.median(theirs.latency), 3),
                },
            )
        )
    return rows


def growth_lines(rounds: dict[tuple[int, bool], Round]) -> list[str]:
    lines = []
    measures: list[tuple[str, Callable[[Round], float]]] = [
        ("registry requests/s of the whole fleet, steady state", lambda r: r.requests_per_second),
        ("registry requests/s of the downstream syncs, steady state", lambda r: r.sync_requests_per_second),
        ("requests per downstream check", lambda r: r.requests_per_check),
        ("requests per attestation written (median)", lambda r: statistics.median(r.attest_requests)),
        ("last attestation to may-apply (max)", lambda r: max(r.latency)),
    ]
    for name, value in measures:
        lines.append(
            f"- {name}: cache on {_growth(rounds, value, True)}; cache off {_growth(rounds, value, False)}"
        )
    return lines


def collect(
    world: World, sizes: tuple[int, ...] = SIZES, syncs: int = SYNCS, peer_sizes: tuple[int, ...] = PEER_SIZES
) -> dict[tuple[int, bool], Round]:
    rounds: dict[tuple[int, bool], Round] = {}
    for n in sizes:
        for cached in (False, True) if n in peer_sizes else (True,):
            print(f"  fleet: {n} runners, {syncs} syncs, cache {'on' if cached else 'off'}", flush=True)
            rounds[(n, cached)] = measure_round(world.registry, n, syncs, cached=cached)
    return rounds


def collect_api(
    world: World,
    rounds: dict[tuple[int, bool], Round],
    sizes: tuple[int, ...] = API_SIZES,
    syncs: int = SYNCS,
) -> dict[int, Round]:
    """The rounds against the registry with the referrers API (cache on), and the tag fallback's
    at the same sizes when ``rounds`` lacks them."""
    api_rounds: dict[int, Round] = {}
    target = start_referrers_registry(world.directory, name="bench-referrers", page_size=API_PAGE_SIZE)
    try:
        for n in sizes:
            if (n, True) not in rounds:
                print(f"  fleet: {n} runners, {syncs} syncs, cache on (the tag fallback's peer)", flush=True)
                rounds[(n, True)] = measure_round(world.registry, n, syncs, cached=True)
            print(f"  fleet: {n} runners, {syncs} syncs, cache on, the referrers API", flush=True)
            api_rounds[n] = measure_round(target, n, syncs, cached=True)
    finally:
        target.stop()
    return api_rounds


def api_results(api_rounds: dict[int, Round], rounds: dict[tuple[int, bool], Round]) -> list[BenchResult]:
    rows: list[BenchResult] = []
    for n, ours in sorted(api_rounds.items()):
        theirs = rounds[(n, True)]
        pages = -(-n // API_PAGE_SIZE)
        where = f"{n} runners, {ours.syncs} syncs (quorum of {n}), referrers API ({API_PAGE_SIZE} a page)"
        rows.append(
            BenchResult(
                benchmark="fleet-api",
                scenario=f"{where}: requests per downstream check",
                ours_seconds=round(ours.requests_per_check, 2),
                peer="tag fallback (Distribution), cache on, same run",
                peer_seconds=round(theirs.requests_per_check, 2),
                unit="req",
                goal=f"2 + {pages} page(s): tag list, tag HEAD, each referrers page (304)",
                extra={
                    "referrers_requests": ours.steady_referrers_requests,
                    "referrers_304": ours.steady_referrers_304,
                    "sync_checks": ours.steady_sync_checks,
                    "peer_sync_checks": theirs.steady_sync_checks,
                    "check_s_median": round(statistics.median(ours.steady_check_seconds), 4),
                    "peer_check_s_median": round(statistics.median(theirs.steady_check_seconds), 4),
                },
            )
        )
        rows.append(
            BenchResult(
                benchmark="fleet-api",
                scenario=f"{where}: requests per attestation written (median)",
                ours_seconds=float(statistics.median(ours.attest_requests)),
                peer="tag fallback (Distribution), cache on, same run",
                peer_seconds=float(statistics.median(theirs.attest_requests)),
                unit="req",
                goal="no fallback index to rewrite",
                extra={"max": max(ours.attest_requests), "peer_max": max(theirs.attest_requests)},
            )
        )
        rows.append(
            BenchResult(
                benchmark="fleet-api",
                scenario=f"{where}: last attestation to the check that may apply (max of {ours.syncs})",
                ours_seconds=round(max(ours.latency), 3),
                peer="tag fallback (Distribution), cache on, same run",
                peer_seconds=round(max(theirs.latency), 3),
                goal=f"<= interval ({INTERVAL:g}s) + one check",
                extra={
                    "median_s": round(statistics.median(ours.latency), 3),
                    "retried_checks": ours.retried_checks,
                },
            )
        )
    return rows


def run(world: World) -> list[BenchResult]:
    rounds = collect(world)
    api_rounds = collect_api(world, rounds)
    for line in growth_lines(rounds):
        print(f"  growth from N={SIZES[0]}: {line[2:]}", flush=True)
    return results(rounds) + api_results(api_rounds, rounds)


def write(
    rounds: dict[tuple[int, bool], Round], rows: list[BenchResult], name: str, api_rows: list[BenchResult]
) -> None:
    sizes = sorted({n for n, _ in rounds})
    lines = [
        f"# fleet benchmark: {sizes[0]} to {sizes[-1]} runners attesting, downstream syncs with a quorum",
        "",
        "Produced by `python -m bench.bench_fleet` (or `make bench`) on "
        f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}; interval {INTERVAL:g}s, steady window {STEADY:g}s, "
        f"health wait [0, {SPREAD:g}]s, quorum as "
        f"{'one clusters/minClusters entry' if QUORUM_FIELDS else 'N verify.attestations[] entries'}.",
        "How it measures: the docstring of `bench/bench_fleet.py`. "
        "Ratio = cache on / the row's peer, same run.",
        "",
        *markdown_table(rows),
        "",
        f"## Growth from N={sizes[0]} to N={sizes[-1]}",
        "",
        *growth_lines(rounds),
        "",
        "## The referrers API against the tag fallback",
        "",
        "The same rounds (cache on) against go-containerregistry's registry with the referrers API, "
        f"{API_PAGE_SIZE} referrers a page, each page revalidated with If-None-Match; the peer is the "
        "tag fallback round above at the same N. `referrers_304` of `referrers_requests`: the "
        "pages answered 304 Not Modified in the steady window.",
        "",
        *(markdown_table(api_rows) if api_rows else ["(not measured: --api-sizes was empty)"]),
        "",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.md").write_text("\n".join(lines))
    (RESULTS / f"{name}.json").write_text(
        json.dumps(
            {
                "rounds": [dataclasses.asdict(r) for r in rounds.values()],
                "results": [r.as_dict() for r in rows],
            },
            indent=2,
        )
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    global INTERVAL, STEADY
    parser = argparse.ArgumentParser(prog="python -m bench.bench_fleet")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="runner counts, comma-separated")
    parser.add_argument("--syncs", type=int, default=SYNCS)
    parser.add_argument(
        "--peer-sizes", default=",".join(map(str, PEER_SIZES)), help="runner counts also measured uncached"
    )
    parser.add_argument(
        "--api-sizes",
        default=",".join(map(str, API_SIZES)),
        help="runner counts also measured on the referrers API",
    )
    parser.add_argument("--interval", type=float, default=INTERVAL)
    parser.add_argument("--name", default="fleet", help="results file name, without .md")
    args = parser.parse_args(argv)
    INTERVAL, STEADY = args.interval, 3 * args.interval
    sizes = tuple(int(n) for n in args.sizes.split(","))
    world = World.start(cluster=False)
    try:
        peer_sizes = tuple(int(n) for n in args.peer_sizes.split(",") if n)
        rounds = collect(world, sizes, args.syncs, peer_sizes)
        api_sizes = tuple(int(n) for n in args.api_sizes.split(",") if n)
        api_rounds = collect_api(world, rounds, api_sizes, args.syncs) if api_sizes else {}
    finally:
        world.stop()
    rows = results(rounds)
    api_rows = api_results(api_rounds, rounds)
    write(rounds, rows, args.name, api_rows)
    for row in rows + api_rows:
        print(
            f"{row.scenario}: ours {row.ours_seconds} {row.unit}, "
            f"peer {row.peer_seconds} {row.unit}, ratio {row.ratio:.2f}"
        )
    for line in growth_lines(rounds):
        print(line)
    print(f"bench: wrote {RESULTS / args.name}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
