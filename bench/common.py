"""Shared pieces of the benchmarks: a result row, a timer, peak RSS of a child command.

Machines here are noisy: every benchmark measures lockgate and a peer in the same run and
reports the ratio; absolute seconds are printed for context only.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from tests.world.world import World


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
    #: what ``ours_seconds`` and ``peer_seconds`` hold when not seconds ("% core", "MB", "/min")
    unit: str = "s"

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


#: Linux charges a process the high-water RSS of the image it exec'd from, so a child forked
#: straight from a (large) benchmark process would report at least the benchmark's own RSS.
#: Commands therefore start from this tiny launcher, which reports only its child's peak.
_LAUNCHER = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execvp(sys.argv[2], sys.argv[2:])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "open(sys.argv[1], 'w').write(f'{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}')\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


@dataclass(frozen=True)
class Measured:
    seconds: float
    rss_kib: int
    stdout: str
    stderr: str
    #: the child's CPU (user and system), which the machine's load does not inflate as it does ``seconds``
    cpu_seconds: float = 0.0


def run_measured(
    argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Measured:
    """Run a command to completion through the launcher; raise with its stderr if it fails."""
    with tempfile.TemporaryDirectory() as tmp:
        rss_file = Path(tmp) / "rss"
        with open(Path(tmp) / "out", "w+b") as out, open(Path(tmp) / "err", "w+b") as err:
            launcher = [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(rss_file)]
            start = time.perf_counter()
            proc = subprocess.run(
                [*launcher, *argv], stdout=out, stderr=err, env={**os.environ, **(env or {})}, cwd=cwd
            )
            elapsed = time.perf_counter() - start
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(), err.read().decode()
        rss, cpu = rss_file.read_text().split() if rss_file.exists() else ("0", "0")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {stderr[-2000:]}")
    return Measured(elapsed, int(rss), stdout, stderr, float(cpu))


def run_command(argv: Sequence[str], *, env: dict[str, str] | None = None) -> tuple[float, int]:
    """Run a command to completion; return (seconds, peak RSS in KiB of that command)."""
    measured = run_measured(argv, env=env)
    return measured.seconds, measured.rss_kib


def markdown_table(results: Sequence[BenchResult]) -> list[str]:
    """The rows of one results table, shared by ``make bench`` and standalone benchmark runs.

    Values are seconds unless the row names another unit.
    """
    lines = [
        "| benchmark | scenario | lockgate | peer | peer's | ratio | goal | notes |",
        "|---|---|---:|---|---:|---:|---|---|",
    ]
    for r in results:
        notes = ", ".join(f"{k}={v}" for k, v in r.extra.items())
        lines.append(
            f"| {r.benchmark} | {r.scenario} | {r.ours_seconds:.3f} {r.unit} | {r.peer} "
            f"| {r.peer_seconds:.3f} {r.unit} | {r.ratio:.2f} | {r.goal} | {notes} |"
        )
    return lines


def push_objects(world: World, repo: str, tag: str, docs: Sequence[dict[str, Any]]) -> str:
    """Pack ``docs`` as one ``objects.yaml`` the way lockgate packs, push it as ``repo:tag``;
    return the ``oci://`` URL pinned by digest."""
    from lockgate import registry
    from lockgate.artifact import manifest, pack

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "src"
        root.mkdir()
        (root / "objects.yaml").write_text(yaml.safe_dump_all(docs))
        layer = pack.pack(root, Path(tmp) / "layer.tgz")
        built = manifest.build(layer.digest, layer.size, {})
        ref = registry.parse(world.registry.oci(repo, f":{tag}"))
        client = registry.RegistryClient.for_reference(ref)
        client.upload_blob(
            repo, built.config_blob, digest=built.manifest.config.digest, size=len(built.config_blob)
        )
        with open(layer.path, "rb") as stream:
            client.upload_blob(repo, stream, digest=layer.digest, size=layer.size)
        digest = client.put_manifest(repo, tag, built.content, built.manifest.media_type)
    return world.registry.oci(repo, f"@{digest}")
