"""Start-up per command: what ``lockgate`` imports before it works, against a bare interpreter.

Import cost is read with ``python -X importtime`` (the sum of every module's own time), which
counts only work this process did and so holds up on a loaded machine far better than a
wall clock; the wall time of the same child is in the notes. ``--help`` and ``--version``
are measured as they are; ``push`` (a 200-file tree) and ``verify --key`` run for real
against the world's registry. Each row is the median of ``REPEAT`` runs with the spread.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.common import BenchResult

REPEAT = 5
_LINE = re.compile(r"import time:\s+(\d+) \|")


def imports_ms(
    argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> tuple[float, float, int]:
    """(import ms, wall s, module count) of ``python -X importtime ARGV``, which must succeed."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr[-2000:]}")
    own = [int(m[1]) for m in map(_LINE.match, done.stderr.splitlines()) if m]
    return sum(own) / 1000, wall, len(own)


def _median(argv: Sequence[str], **kw: Any) -> tuple[float, float, float, float, int]:
    runs = [imports_ms(argv, **kw) for _ in range(REPEAT)]
    ms = [r[0] for r in runs]
    return statistics.median(ms), min(ms), max(ms), statistics.median(r[1] for r in runs), runs[0][2]


def collect(registry_host: str, workdir: Path) -> list[BenchResult]:
    from bench.bench_artifacts import make_tree

    bare = _median(["-c", "pass"])
    tree = make_tree(workdir / "tree", 200, 1 << 20)
    password = {"LOCKGATE_PASSWORD": "bench-password", "LOCKGATE_CACHE": "off"}
    lockgate = ["-m", "lockgate"]
    meta = ["--source", "https://example.com/r", "--revision", "main@sha1:" + "0" * 40, "--created", "0"]
    ref = f"oci://{registry_host}/bench/startup-{os.getpid()}:v1"
    subprocess.run(
        [sys.executable, *lockgate, "keygen", "--output-key-prefix", "k"],
        cwd=workdir,
        env={**os.environ, **password},
        check=True,
        capture_output=True,
    )
    pushed = subprocess.run(
        [sys.executable, *lockgate, "push", str(tree), ref, *meta, "-o", "json"],
        env={**os.environ, **password},
        check=True,
        capture_output=True,
        text=True,
    )
    import json

    digest = json.loads(pushed.stdout)["digest"]
    pinned = ref.rsplit(":", 1)[0] + "@" + digest
    subprocess.run(
        [sys.executable, *lockgate, "sign", pinned, "--key", "k.key"],
        cwd=workdir,
        env={**os.environ, **password},
        check=True,
        capture_output=True,
    )
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "--version": (["--version"], {}),
        "--help": (["--help"], {}),
        "push --help": (["push", "--help"], {}),
        "pull --help": (["pull", "--help"], {}),
        "verify --help": (["verify", "--help"], {}),
        "push (200 files / 1 MB, run)": (["push", str(tree), ref, *meta], password),
        "verify --key (run)": (["verify", pinned, "--key", "k.pub"], {}),
    }
    rows = []
    for label, (args, env) in commands.items():
        median, low, high, wall, modules = _median([*lockgate, *args], env=env, cwd=workdir)
        rows.append(
            BenchResult(
                "start-up imports",
                label,
                round(median, 1),
                "python -c pass",
                round(bare[0], 1),
                "--version within 40 ms of a bare interpreter" if label == "--version" else "reported",
                {
                    "spread_ms": f"{low:.1f}-{high:.1f}",
                    "over_bare_ms": round(median - bare[0], 1),
                    "modules": modules,
                    "wall_s": round(wall, 3),
                    "bare_wall_s": round(bare[3], 3),
                },
                unit="ms",
            )
        )
    return rows


def run(world: Any) -> list[BenchResult]:
    """The bench/run.py hook."""
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as tmp:
        return collect(world.registry.host, Path(tmp))
