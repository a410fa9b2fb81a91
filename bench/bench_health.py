"""CEL health (``healthCheckExprs``) for 5,000 objects against a 5,000-object no-op pass.

The issue's budget: judging 5,000 custom resources with three expressions each (Flux's
order: ``inProgress``, ``failed``, ``current``, all three evaluated because only the last is
true) must cost under 10% of a no-op pass over 5,000 objects, so the wait's look every half
second stays small next to the pass it ends. Ours: one look of the wait (``health.compute_all``)
over 5,000 Certificate-like objects (status with two conditions, as cert-manager writes them),
median of three, as the runner judges them: in its CEL sandbox (``runner.sandbox``, worker
processes with time and memory limits; the worker started before the clock, as in a running
``serve``), and, for the price of the sandbox, the same look in this process (as before it).
The peer: ``lockgate reconcile`` of 5,000 objects
that are already applied (``bench_reconcile``'s no-op scenario, ConfigMaps, Services and
Deployments), as a child process, after an unmeasured first apply, median of three. Also shown: the same sweep
with kstatus's rules alone (no expressions), for scale; and CPU seconds of each (the sandbox's
counting both processes, the pass's its child process), whose ratio a loaded machine does not
distort as it does wall-clock time.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

from bench.bench_reconcile import objects
from bench.common import BenchResult, best_of, push_objects, run_measured
from runner.plan import health
from runner.plan.health_exprs import IN_PROCESS, HealthExprSpec, compile_all
from runner.plan.status import HealthStatus
from runner.sandbox import pool
from tests.world.world import World

OBJECTS = 5000
ROUNDS = 3
EXPRS = HealthExprSpec(
    api_version="cert-manager.io/v1",
    kind="Certificate",
    in_progress="has(status.observedGeneration) && metadata.generation != status.observedGeneration",
    failed="status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')",
    current="status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')",
)


def certificate(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": f"web-{i}", "namespace": "bench", "generation": 1, "uid": f"uid-{i}"},
        "spec": {"secretName": f"web-{i}", "dnsNames": [f"web-{i}.example"], "issuerRef": {"name": "le"}},
        "status": {
            "observedGeneration": 1,
            "notAfter": "2030-01-01T00:00:00Z",
            "conditions": [
                {"type": "Issuing", "status": "False", "reason": "", "observedGeneration": 1},
                {"type": "Ready", "status": "True", "reason": "Ready", "observedGeneration": 1},
            ],
        },
    }


def run(world: World) -> list[BenchResult]:
    assert world.cluster is not None
    workers = pool.Pool()
    sandboxed = compile_all([EXPRS], engine=workers)
    in_process = compile_all([EXPRS], engine=IN_PROCESS)
    certs: list[dict[str, Any] | None] = [certificate(i) for i in range(OBJECTS)]
    now = time.time()
    started = time.perf_counter()
    judged = health.compute_all(certs[:1], now=now, custom=sandboxed)  # starts the worker
    worker_start = time.perf_counter() - started
    assert judged[0].status is HealthStatus.CURRENT, judged

    def with_cel() -> None:
        said = health.compute_all(certs, now=now, custom=sandboxed)
        assert said[-1].status is HealthStatus.CURRENT, said[-1]

    def with_cel_in_process() -> None:
        health.compute_all(certs, now=now, custom=in_process)

    def kstatus_only() -> None:
        health.compute_all(certs, now=now)

    cel_seconds = best_of(ROUNDS, with_cel)
    in_process_seconds = best_of(ROUNDS, with_cel_in_process)
    plain_seconds = best_of(ROUNDS, kstatus_only)
    # CPU, which the machine's load does not inflate: both processes for the sandbox
    started_cpu, started_worker = time.process_time(), workers.worker_cpu_seconds()
    with_cel()
    sandbox_cpu = time.process_time() - started_cpu + workers.worker_cpu_seconds() - started_worker
    started_cpu = time.process_time()
    with_cel_in_process()
    in_process_cpu = time.process_time() - started_cpu
    workers.close()

    cluster = world.cluster
    ns = "bench-health"
    cluster.kubectl("create", "namespace", ns, check=False)
    docs = objects(OBJECTS, ns, revision=1)
    url = push_objects(world, "bench/health", "noop", docs)
    argv = [
        sys.executable,
        "-m",
        "lockgate",
        "reconcile",
        url,
        "--name",
        "bench-health",
        "-n",
        ns,
        "--insecure-skip-verify",
        "-o",
        "json",
        f"--kubeconfig={cluster.kubeconfig}",
    ]
    first = run_measured(argv)  # the first apply, not measured
    assert json.loads(first.stdout)["ok"], first.stderr
    noops = [run_measured(argv) for _ in range(ROUNDS)]
    for noop in noops:
        report = json.loads(noop.stdout)
        # nothing applied: at most the parent's record of the pass is written
        assert report["ok"] and report["requests"].get("patch", 0) <= 1, report["requests"]
    noop_seconds = statistics.median(n.seconds for n in noops)
    noop_cpu = statistics.median(n.cpu_seconds for n in noops)
    return [
        BenchResult(
            "health",
            f"CEL health, {OBJECTS} objects x 3 expressions, vs a {OBJECTS}-object no-op pass",
            cel_seconds,
            "lockgate reconcile, no-op pass",
            noop_seconds,
            goal="< 0.10x",
            extra={
                "evaluations_per_second": round(OBJECTS * 3 / cel_seconds),
                "kstatus_rules_only_seconds": round(plain_seconds, 4),
                "sandbox_worker_start_seconds": round(worker_start, 4),
                "sandbox_cpu_seconds": round(sandbox_cpu, 4),
                "in_process_cpu_seconds": round(in_process_cpu, 4),
                "noop_pass_cpu_seconds": round(noop_cpu, 4),
                "cpu_ratio": round(sandbox_cpu / noop_cpu, 3) if noop_cpu else None,
            },
        ),
        BenchResult(
            "health",
            f"CEL health in this process (no limits, as before the sandbox), {OBJECTS} objects x 3",
            in_process_seconds,
            "lockgate reconcile, no-op pass",
            noop_seconds,
            goal="< 0.10x",
            extra={
                "sandbox_over_in_process": round(cel_seconds / in_process_seconds, 3),
                "cpu_ratio": round(in_process_cpu / noop_cpu, 3) if noop_cpu else None,
            },
        ),
    ]


if __name__ == "__main__":
    started = World.start(full=False)
    try:
        for result in run(started):
            print(json.dumps(result.as_dict()))
            print(f"ratio {result.ratio:.3f} (goal {result.goal})")
    finally:
        started.stop()
