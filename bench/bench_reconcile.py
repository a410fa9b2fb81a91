"""Reconcile passes against ``kubectl apply --server-side --prune --applyset`` on the same objects.

For 1,000 and 5,000 objects (ConfigMaps, Services and Deployments in equal parts, one
namespace per tool): first apply, no-op pass, 10% changed, 10% pruned. Both run as child
processes so their peak RSS is measured the same way (``os.wait4`` of that child). API
request counts: ours from the pass's own JSON report, kubectl's from its ``-v=6`` request log
(logging on in both kubectl runs, so its cost is included; it is small next to the requests).
Deployments have zero replicas and Services are headless (the world's service range is
small), so controllers and IP allocation stay out of the measurement.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from bench.common import BenchResult, push_objects, run_measured
from tests.world import binaries
from tests.world.world import World

SIZES = (1000, 5000)
_REQUEST_LINE = re.compile(r'verb="(GET|PATCH|POST|PUT|DELETE)"|\b(GET|PATCH|POST|PUT|DELETE) https://')


def objects(n: int, ns: str, *, revision: int, changed: int = 0, dropped: int = 0) -> list[dict[str, Any]]:
    """``n`` objects; every ``changed``-th has a new annotation, every ``dropped``-th is left out."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        if dropped and i % dropped == 0:
            continue
        annotations = {"bench/rev": str(revision if changed and i % changed == 0 else 1)}
        meta = {"name": f"o{i}", "namespace": ns, "annotations": annotations}
        kind = i % 3
        if kind == 0:
            out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"i": str(i)}})
        elif kind == 1:
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": meta,
                    "spec": {
                        "clusterIP": "None",
                        "selector": {"app": f"o{i}"},
                        "ports": [{"port": 80, "targetPort": 8080}],
                    },
                }
            )
        else:
            out.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": meta,
                    "spec": {
                        "replicas": 0,
                        "selector": {"matchLabels": {"app": f"o{i}"}},
                        "template": {
                            "metadata": {"labels": {"app": f"o{i}"}},
                            "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
                        },
                    },
                }
            )
    return out


#: Forks and execs the command from a small interpreter and reports the child's peak RSS.
def _run(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, int, str, str]:
    """Run to completion; (seconds, peak RSS in KiB of the command, stdout, stderr)."""
    measured = run_measured(argv, env=env)
    return measured.seconds, measured.rss_kib, measured.stdout, measured.stderr


def _warm_up(world: World, kubectl: str) -> None:
    """Both tools apply a small set first, unmeasured: the first requests of each kind after the
    world starts (controllers syncing, the API server building its apply machinery) are slow,
    and whichever tool went first would pay for them."""
    assert world.cluster is not None
    cluster = world.cluster
    for ns in ("bench-warm-lg", "bench-warm-kc"):
        cluster.kubectl("create", "namespace", ns, check=False)
    url = push_objects(world, "bench/warm", "w", objects(60, "bench-warm-lg", revision=1))
    flags = ["--name", "bench-warm", "-n", "bench-warm-lg", "--insecure-skip-verify"]
    _run([sys.executable, "-m", "lockgate", "reconcile", url, *flags, f"--kubeconfig={cluster.kubeconfig}"])
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as manifest:
        manifest.write(yaml.safe_dump_all(objects(60, "bench-warm-kc", revision=1)))
        manifest.flush()
        _run([kubectl, f"--kubeconfig={cluster.kubeconfig}", "apply", "--server-side", "-f", manifest.name])


def run(world: World, sizes: tuple[int, ...] = SIZES) -> list[BenchResult]:
    assert world.cluster is not None
    cluster = world.cluster
    kubectl = str(binaries.binary("kubectl"))
    _warm_up(world, kubectl)
    results: list[BenchResult] = []
    for n in sizes:
        ours_ns, peer_ns = f"bench-lg-{n}", f"bench-kc-{n}"
        for ns in (ours_ns, peer_ns):
            cluster.kubectl("create", "namespace", ns, check=False)
        scenarios = [
            ("first apply", objects(n, "{ns}", revision=1), "<= 1.0x"),
            ("no-op", objects(n, "{ns}", revision=1), "<= 0.2x"),
            ("10% changed", objects(n, "{ns}", revision=2, changed=10), ""),
            ("10% pruned", objects(n, "{ns}", revision=2, changed=10, dropped=10), ""),
        ]
        with tempfile.TemporaryDirectory() as tmp:
            for index, (scenario, template, goal) in enumerate(scenarios):
                text = yaml.safe_dump_all(template)
                mine = yaml.safe_load_all(text.replace("{ns}", ours_ns))
                url = push_objects(world, f"bench/reconcile-{n}", f"s{index}", list(mine))
                ours_s, ours_rss, out, _ = _run(
                    [
                        sys.executable,
                        "-m",
                        "lockgate",
                        "reconcile",
                        url,
                        "--name",
                        f"bench-{n}",
                        "-n",
                        ours_ns,
                        "--insecure-skip-verify",
                        "--prune",
                        "--allow-mass-prune",
                        "-o",
                        "json",
                        f"--kubeconfig={cluster.kubeconfig}",
                    ]
                )
                report = json.loads(out)
                manifest_file = Path(tmp) / f"s{index}.yaml"
                manifest_file.write_text(text.replace("{ns}", peer_ns))
                peer_s, peer_rss, _, log = _run(
                    [
                        kubectl,
                        f"--kubeconfig={cluster.kubeconfig}",
                        "apply",
                        "--server-side",
                        "--prune",
                        f"--applyset=secret/kc-{n}",
                        "-n",
                        peer_ns,
                        "-f",
                        str(manifest_file),
                        "-v=6",
                    ],
                    env={"KUBECTL_APPLYSET": "true"},
                )
                results.append(
                    BenchResult(
                        "reconcile",
                        f"{n} objects: {scenario}",
                        ours_s,
                        "kubectl apply --server-side --prune --applyset",
                        peer_s,
                        goal=goal,
                        extra={
                            "ours_requests": sum(report["requests"].values()),
                            "ours_writes": report["requests"].get("patch", 0)
                            + report["requests"].get("delete", 0),
                            "peer_requests": len(_REQUEST_LINE.findall(log)),
                            "ours_rss_mb": round(ours_rss / 1024, 1),
                            "peer_rss_mb": round(peer_rss / 1024, 1),
                            "counts": report["counts"],
                        },
                    )
                )
    return results


if __name__ == "__main__":
    only = tuple(int(a) for a in sys.argv[1:]) or SIZES
    started = World.start(full=False)
    try:
        for result in run(started, only):
            print(json.dumps(result.as_dict()))
    finally:
        started.stop()
