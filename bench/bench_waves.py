"""Waves cost no extra pass: a first apply of 1,000 objects in three waves against the same
objects in one.

The objects of ``bench_reconcile`` (ConfigMaps, headless Services, Deployments of zero
replicas, in equal parts); the waved set puts every third object in wave 0, 1 and 2, so each
wave holds all three kinds. Each run is a first apply (``lockgate reconcile`` as a child
process) into a namespace of its own, the two sets alternating, ``ROUNDS`` times; the
median is reported. With ``--wait`` both end healthy (the waved set is also waited on
between waves); without it, only the waved set waits (between waves), which is what
ordering costs. The full profile runs, so the Deployments become Available.
"""

from __future__ import annotations

import json
import statistics
import sys
from typing import Any

from bench.bench_reconcile import objects
from bench.common import BenchResult, push_objects, run_measured
from tests.world.world import World

SIZE = 1000
WAVES = 3
ROUNDS = 3


def waved(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for index, doc in enumerate(docs):
        doc["metadata"]["annotations"]["lockgate.dev/wave"] = str(index % WAVES)
    return docs


def _first_apply(world: World, url: str, name: str, wait: bool) -> tuple[float, dict[str, Any]]:
    assert world.cluster is not None
    argv = [sys.executable, "-m", "lockgate", "reconcile", url, "--name", name, "-n", f"{name}-r"]
    argv += ["--insecure-skip-verify", "-o", "json", f"--kubeconfig={world.cluster.kubeconfig}"]
    if wait:
        argv += ["--wait", "--timeout", "5m"]
    measured = run_measured(argv)
    return measured.seconds, json.loads(measured.stdout)


def run(world: World, size: int = SIZE) -> list[BenchResult]:
    assert world.cluster is not None
    cluster = world.cluster
    results: list[BenchResult] = []
    # unmeasured: the first requests after the world starts are slow, for whichever goes first
    cluster.kubectl("create", "namespace", "bench-waves-warm", check=False)
    warm = push_objects(world, "bench/waves", "warm", waved(objects(60, "bench-waves-warm", revision=1)))
    _first_apply(world, warm, "bench-waves-warm", wait=True)
    for wait in (True, False):
        times: dict[bool, list[float]] = {True: [], False: []}
        requests: dict[bool, int] = {}
        waited: dict[bool, int] = {}
        for round_ in range(ROUNDS):
            for with_waves in (True, False):
                ns = f"bench-waves-{int(wait)}{int(with_waves)}{round_}"
                cluster.kubectl("create", "namespace", ns, check=False)
                docs = objects(size, ns, revision=1)
                url = push_objects(world, "bench/waves", ns, waved(docs) if with_waves else docs)
                seconds, report = _first_apply(world, url, ns, wait)
                assert report["counts"]["created"] == size, report["counts"]
                times[with_waves].append(seconds)
                requests[with_waves] = sum(report["requests"].values())
                # objects found healthy: every one with --wait; without it, the waves before the last
                waited[with_waves] = sum(1 for h in report["health"].values() if h["status"] == "Current")
        flag = "--wait" if wait else "no --wait"
        results.append(
            BenchResult(
                "waves",
                f"{size} objects, first apply, {flag}: {WAVES} waves",
                statistics.median(times[True]),
                "the same objects in one wave",
                statistics.median(times[False]),
                goal="<= 1.0x" if wait else "",
                extra={
                    "ours_requests": requests[True],
                    "peer_requests": requests[False],
                    "ours_healthy": waited[True],
                    "peer_healthy": waited[False],
                    "runs": {"waves": times[True], "one wave": times[False]},
                },
            )
        )
    return results


if __name__ == "__main__":
    started = World.start(full=True)
    try:
        for result in run(started, int(sys.argv[1]) if len(sys.argv) > 1 else SIZE):
            print(json.dumps(result.as_dict()))
    finally:
        started.stop()
