"""``make bench``: start the world once, run every ``bench/bench_*.py``, write the results.

Each benchmark module exposes ``run(world) -> list[BenchResult]``. Results go to
``bench/results/latest.md`` (a table) and ``bench/results/latest.json``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from pathlib import Path

from bench.common import BenchResult, markdown_table
from tests.world.world import World

RESULTS = Path(__file__).resolve().parent / "results"


def discover(only: list[str]) -> list[str]:
    names = sorted(p.stem for p in Path(__file__).parent.glob("bench_*.py"))
    return [n for n in names if not only or any(o in n for o in only)]


def to_markdown(results: list[BenchResult], meta: dict[str, object]) -> str:
    lines = [
        "# lockgate benchmarks",
        "",
        f"Run {meta['date']} on {meta['machine']} (Python {meta['python']}). "
        "Ratio = lockgate / peer, measured in the same run; below 1.0 lockgate is faster.",
        "",
    ]
    lines += markdown_table(results)
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run")
    parser.add_argument("only", nargs="*", help="run only benchmarks whose name contains one of these")
    args = parser.parse_args()
    names = discover(args.only)
    world = World.start()
    results: list[BenchResult] = []
    try:
        for name in names:
            print(f"bench: {name}", flush=True)
            module = importlib.import_module(f"bench.{name}")
            for result in module.run(world):
                print(
                    f"  {result.scenario}: ours {result.ours_seconds:.3f} {result.unit}, {result.peer} "
                    f"{result.peer_seconds:.3f} {result.unit}, ratio {result.ratio:.2f}",
                    flush=True,
                )
                results.append(result)
    finally:
        world.stop()
    meta: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": f"{platform.machine()} {platform.system()}",
        "python": platform.python_version(),
        "benchmarks": names,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.md").write_text(to_markdown(results, meta))
    (RESULTS / "latest.json").write_text(
        json.dumps({"meta": meta, "results": [r.as_dict() for r in results]}, indent=2) + "\n"
    )
    print(f"bench: wrote {RESULTS / 'latest.md'} and latest.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
