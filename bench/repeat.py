"""``python -m bench.repeat N NAME...``: run benchmarks N times against a registry-only world
and write the median ratio of every row with its spread to ``bench/results/<--out>.md``.

For the rows that need no cluster (artifacts, start-up): each run measures lockgate and its
peer side by side, as ``bench/run.py`` does; the spread is over the N runs.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import statistics
import time
from collections import defaultdict

from bench.common import BenchResult
from bench.run import RESULTS, discover
from tests.world.world import World


def summarise(runs: list[list[BenchResult]]) -> list[str]:
    rows: dict[tuple[str, str, str], list[BenchResult]] = defaultdict(list)
    for results in runs:
        for r in results:
            rows[(r.benchmark, r.scenario, r.peer)].append(r)
    lines = [
        "| benchmark | scenario | lockgate (median) | peer | peer's (median) | ratio (median) "
        "| ratio spread | goal | notes (first run) |",
        "|---|---|---:|---|---:|---:|---|---|---|",
    ]
    for (bench, scenario, peer), found in rows.items():
        ratios = sorted(r.ratio for r in found)
        unit = found[0].unit
        ours = statistics.median(r.ours_seconds for r in found)
        theirs = statistics.median(r.peer_seconds for r in found)
        lines.append(
            f"| {bench} | {scenario} | {ours:.3f} {unit} | {peer} | {theirs:.3f} {unit} "
            f"| {statistics.median(ratios):.2f} | {ratios[0]:.2f}-{ratios[-1]:.2f} (n={len(ratios)}) "
            f"| {found[0].goal} | {', '.join(f'{k}={v}' for k, v in found[0].extra.items())} |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.repeat")
    parser.add_argument("times", type=int)
    parser.add_argument("only", nargs="+")
    parser.add_argument("--out", required=True, help="results file name, without .md")
    args = parser.parse_args()
    names = discover(args.only)
    world = World.start(cluster=False)
    runs: list[list[BenchResult]] = []
    try:
        for n in range(args.times):
            results: list[BenchResult] = []
            for name in names:
                print(f"bench: run {n + 1}/{args.times} {name}", flush=True)
                results += importlib.import_module(f"bench.{name}").run(world)
            for r in results:
                print(
                    f"  {r.benchmark} | {r.scenario}: {r.ours_seconds} vs {r.peer} {r.peer_seconds}"
                    f" = {r.ratio:.2f}"
                )
            runs.append(results)
    finally:
        world.stop()
    head = [
        f"# {args.out}",
        "",
        f"`python -m bench.repeat {args.times} {' '.join(args.only)}`, "
        f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')} "
        f"on {platform.machine()} {platform.system()} (Python {platform.python_version()}), a registry-only "
        "world. Each run measures lockgate and the peer side by side; the median and the spread are over "
        "the runs. Ratio = lockgate / peer, below 1.0 lockgate is faster.",
        "",
    ]
    (RESULTS / f"{args.out}.md").write_text("\n".join(head + summarise(runs)) + "\n")
    (RESULTS / f"{args.out}.json").write_text(
        json.dumps([[r.as_dict() for r in results] for results in runs], indent=2) + "\n"
    )
    print(f"bench: wrote {RESULTS / args.out}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
