"""Packing against the physical limit: ``lockgate build`` of the 10,000-file / 50 MB tree
against ``gzip -6`` and ``pigz -6`` compressing the very tar that build wrote.

The compressors only compress (a tar read from the page cache); ``lockgate build`` also walks
the tree, reads every file, frames the tar, validates the YAML (or not, with
``--no-validate``) and hashes. MB/s are of the tar's bytes; the ratio is of seconds.
Each row is the median of ``REPEAT`` runs in this run, with the spread.
"""

from __future__ import annotations

import gzip
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import BenchResult, run_measured

REPEAT = 3


def _median(argv: list[str]) -> tuple[float, float, float]:
    times = [run_measured(argv).seconds for _ in range(REPEAT)]
    return statistics.median(times), min(times), max(times)


def collect(workdir: Path) -> list[BenchResult]:
    from bench.bench_artifacts import make_tree

    tree = make_tree(workdir / "tree", 10_000, 50 << 20)
    layer = workdir / "layer.tgz"
    build = [sys.executable, "-m", "lockgate", "build", str(tree), "-O", str(layer)]
    run_measured(build)
    tar = workdir / "layer.tar"
    tar.write_bytes(gzip.decompress(layer.read_bytes()))
    mb = tar.stat().st_size / 1e6
    sh = ["/bin/sh", "-c"]
    peers = {
        "gzip -6": [*sh, f"gzip -6 -c {tar} > {workdir / 'g.gz'}"],
        "pigz -6 (2 threads)": [*sh, f"pigz -6 -p 2 -c {tar} > {workdir / 'p.gz'}"],
    }
    ours = {
        "lockgate build": build,
        "lockgate build --no-validate": [*build, "--no-validate"],
    }
    measured = {name: _median(argv) for name, argv in {**ours, **peers}.items() if shutil.which(argv[0])}
    rows = []
    for mine in ours:
        for peer in peers:
            if peer not in measured:
                raise RuntimeError(f"{peer.split()[0]} is not installed (Makefile system-packages)")
            m, p = measured[mine], measured[peer]
            rows.append(
                BenchResult(
                    "pack limit",
                    f"{mine}, 10,000 files / {mb:.0f} MB tar",
                    round(m[0], 3),
                    peer,
                    round(p[0], 3),
                    "",
                    {
                        "ours_mb_s": round(mb / m[0], 1),
                        "peer_mb_s": round(mb / p[0], 1),
                        "ours_spread_s": f"{m[1]:.2f}-{m[2]:.2f}",
                        "peer_spread_s": f"{p[1]:.2f}-{p[2]:.2f}",
                    },
                )
            )
    return rows


def run(world: Any) -> list[BenchResult]:
    """The bench/run.py hook (needs no world)."""
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as tmp:
        return collect(Path(tmp))
