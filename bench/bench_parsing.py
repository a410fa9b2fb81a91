"""What the parsing and extraction bounds cost: ``push`` of 10,000 files and a 5,000-object no-op pass.

The bounds (``lockgate.parselimits``, the extraction's entry count, ``push``'s name and ratio
checks) are checked where the work already happens, so their cost is measured where it is
paid, with the bounds and without, in this process and in the same run (CPU seconds of this
process, which a busy machine disturbs far less than wall time), and set against the whole
command's wall time measured as a child process (``ratio`` = the bounds' seconds / the command's):

- push: the per-file test for what the syntax check alone cannot bound (``needs_loading``),
  the name check per entry, and the ratio probe (its appends replayed, and its peak);
  libyaml's own depth limit, set once, costs nothing measurable.
- no-op pass: loading the pulled artifact with the bounds against ``Limits.unbounded()``.
  Both runs keep fastyaml's one comparison per mapping or sequence (under 1% of the loop).

Goal: under 3% of either command (issue 21). ``python -m bench.bench_parsing`` starts its own world.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.bench_artifacts import make_tree
from bench.bench_reconcile import objects
from bench.common import BenchResult, push_objects, run_measured
from lockgate.artifact.cache import SETTLE_SECONDS
from tests.world.world import World

REPEAT = 5
GOAL = "< 0.03x"


def _median(action: Callable[[], object], repeat: int = REPEAT) -> float:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        action()
        times.append(time.process_time() - started)
    return statistics.median(times)


def _paired(
    with_bounds: Callable[[], object], without: Callable[[], object], pairs: int = 11
) -> tuple[float, float, float]:
    """(median with, median without, median of the paired differences): run alternately, so a
    change in the machine's load hits both sides of a pair alike."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(pairs):
        for action, into in ((with_bounds, a), (without, b)):
            started = time.process_time()
            action()
            into.append(time.process_time() - started)
    return (
        statistics.median(a),
        statistics.median(b),
        statistics.median(x - y for x, y in zip(a, b, strict=True)),
    )


def push_cost(world: World, workdir: Path) -> BenchResult:
    from action.artifacts import source
    from lockgate.artifact import pack
    from lockgate.artifact.limits import Limits

    tree = make_tree(workdir / "tree", 10_000, 50 << 20)
    time.sleep(SETTLE_SECONDS + 0.5)
    target = world.registry.oci(f"bench/parsing-{os.getpid()}", ":v1")
    argv = [sys.executable, "-m", "lockgate", "push", str(tree), target]
    argv += ["--source", "https://example.com/repo", "--revision", "main@sha1:" + "0" * 40]
    env = {"LOCKGATE_CACHE": "off"}  # pack and check every time: the work the bounds add to
    run_measured(argv, env=env)  # the first push uploads; the measured ones pack, check and ask
    whole = statistics.median(run_measured(argv, env=env).seconds for _ in range(3))

    entries = pack.collect(tree)
    files = [e for e in entries if not e.is_dir]
    data = [e.source.read_bytes() for e in files]
    loading = _median(lambda: [source.needs_loading(d) for d in data])

    def check_names() -> None:
        for entry in entries:
            pack.check_name(entry.name, entry.source)

    names = _median(check_names)
    probe = pack.RatioProbe()
    with open(os.devnull, "wb") as sink:
        pack.write(entries, sink, probe=probe)
    # what the probe adds to packing: an append per file and per block, and the peak at the end
    # (packing with and without it differ by less than packing's own noise)
    spans, marks = list(probe.spans), list(probe.marks)

    def record() -> None:
        replay = pack.RatioProbe()
        for span in spans:
            replay.spans.append(span)
        for mark in marks:
            replay.marks.append(mark)

    probing = _median(record) + _median(lambda: probe.peak(Limits().ratio_floor))
    cost = loading + names + probing
    return BenchResult(
        "parsing bounds",
        "push of 10,000 files / 50 MB: the bounds' share",
        cost,
        "the whole push (lockgate push, unchanged, cache off)",
        whole,
        goal=GOAL,
        extra={
            "needs_loading_ms": round(loading * 1000, 1),
            "name_checks_ms": round(names * 1000, 1),
            "ratio_probe_ms": round(probing * 1000, 1),
        },
    )


def noop_cost(world: World, workdir: Path) -> BenchResult:
    from lockgate import manifests, registry
    from lockgate.artifact import pull
    from lockgate.parselimits import DEFAULT, Limits

    assert world.cluster is not None
    ns = "bench-parsing"
    world.cluster.kubectl("create", "namespace", ns, check=False)
    url = push_objects(world, "bench/parsing-noop", "v1", objects(5000, ns, revision=1))
    argv = [sys.executable, "-m", "lockgate", "reconcile", url, "--name", "bench-parsing", "-n", ns]
    argv += ["--insecure-skip-verify", "-o", "json", f"--kubeconfig={world.cluster.kubeconfig}"]
    run_measured(argv)  # the first apply
    runs = [run_measured(argv) for _ in range(3)]
    assert all(json.loads(r.stdout)["counts"].get("unchanged") == 5000 for r in runs), runs[0].stdout
    whole = statistics.median(r.seconds for r in runs)

    ref = registry.parse(url)
    pull.pull(registry.RegistryClient.for_reference(ref), ref, workdir / "artifact")
    root = workdir / "artifact"
    bounded, unbounded, difference = _paired(
        lambda: manifests.load([root], relative_to=root, limits=DEFAULT),
        lambda: manifests.load([root], relative_to=root, limits=Limits.unbounded()),
    )
    cost = max(difference, 0.0)
    return BenchResult(
        "parsing bounds",
        "no-op pass of 5,000 objects: the bounds' share",
        cost,
        "the whole no-op pass (lockgate reconcile)",
        whole,
        goal=GOAL,
        extra={
            "load_bounded_s": round(bounded, 3),
            "load_unbounded_s": round(unbounded, 3),
            "paired_difference_ms": round(difference * 1000, 1),
        },
    )


def run(world: World) -> list[BenchResult]:
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-parsing-") as tmp:
        return [push_cost(world, Path(tmp)), noop_cost(world, Path(tmp))]


if __name__ == "__main__":
    started = World.start(full=False)
    try:
        for result in run(started):
            print(json.dumps(result.as_dict()))
    finally:
        started.stop()
