"""Shared pieces of the benchmarks: a result row, a timer, peak RSS of a child command.

Machines here are noisy: every benchmark measures lockgate and a peer in the same run and
reports the ratio; absolute seconds are printed for context only.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field


@dataclass
class BenchResult:
    """One scenario: lockgate's time against a peer's, and the ratio ours/peer (lower is better)."""

    benchmark: str
    scenario: str
    ours_seconds: float
    peer: str
    peer_seconds: float
    goal: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.ours_seconds / self.peer_seconds if self.peer_seconds else float("inf")

    def as_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["ratio"] = round(self.ratio, 3)
        return data


def best_of(repeats: int, action: Callable[[], object]) -> float:
    """Median wall time of ``repeats`` runs of ``action``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_command(argv: Sequence[str], *, env: dict[str, str] | None = None) -> tuple[float, int]:
    """Run a command to completion; return (seconds, peak RSS in KiB of that child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    subprocess.run(list(argv), check=True, capture_output=True, env=full_env)
    elapsed = time.perf_counter() - start
    # ru_maxrss of children is the max over all waited-for children, so this is only exact
    # when the command is the largest child so far; benchmarks run the peers in a fresh order.
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, max(after, before)
