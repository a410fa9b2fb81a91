"""Artifact benchmarks: build+push, unchanged re-push and pull+extract against flux and oras.

Two trees: 200 files / 1 MB and a 10,000-file / 50 MB monorepo-like tree. Every tool runs
as a child process against the same registry in the same run; peak RSS is read per child
with ``os.wait4``. ``run(world)`` plugs into ``bench/run.py``; ``measure(host, workdir)``
returns plain rows; ``python -m bench.bench_artifacts`` starts its own registry.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import BenchResult, markdown_table, run_measured
from lockgate.artifact.cache import SETTLE_SECONDS
from tests.world.binaries import binary

SIZES = {"200 files / 1 MB": (200, 1 << 20), "10,000 files / 50 MB": (10_000, 50 << 20)}
RESULTS = Path(__file__).resolve().parent / "results"
_WORDS = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "labels",
    "spec",
    "replicas",
    "template",
    "containers",
    "image",
    "ports",
]


def make_tree(root: Path, files: int, total: int, seed: int = 7) -> Path:
    """YAML-like files spread over apps/<n>/ directories, deterministic for a seed."""
    rng = random.Random(seed)
    per_file = total // files
    for i in range(files):
        directory = root / "apps" / f"app{i % 50:02d}" / f"part{i % 7}"
        directory.mkdir(parents=True, exist_ok=True)
        lines: list[str] = []
        size = 0
        while size < per_file:
            line = f"{rng.choice(_WORDS)}: {rng.choice(_WORDS)}-{rng.getrandbits(40):x}\n"
            lines.append(line)
            size += len(line)
        (directory / f"obj{i:05d}.yaml").write_text("".join(lines))
    return root


def timed(argv: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """Seconds and peak RSS (KiB) of one child process, which must succeed."""
    measured = run_measured(argv, env=env)
    return measured.seconds, measured.rss_kib


def collect(registry_host: str, workdir: Path) -> list[BenchResult]:
    lockgate = [sys.executable, "-m", "lockgate"]
    flux, oras = str(binary("flux")), str(binary("oras"))
    rows: list[BenchResult] = []
    for index, (label, (files, total)) in enumerate(SIZES.items()):
        tree = make_tree(workdir / f"tree{index}", files, total)
        # a working tree at rest: the build cache does not trust files changed in the last seconds
        time.sleep(SETTLE_SECONDS + 0.5)
        repo = f"bench/size{index}-{os.getpid()}"
        meta = ["--source", "https://example.com/repo", "--revision", "main@sha1:" + "0" * 40]
        cached = {"LOCKGATE_CACHE": str(workdir / "cache")}
        ours = timed(
            [*lockgate, "push", str(tree), f"oci://{registry_host}/{repo}/lockgate:v1", *meta], cached
        )
        peer_flux = timed(
            [
                flux,
                "push",
                "artifact",
                f"oci://{registry_host}/{repo}/flux:v1",
                "--path",
                str(tree),
                *meta,
                "--insecure-registry",
            ]
        )
        peer_oras = _oras_push(oras, registry_host, repo, tree)
        again = timed(
            [*lockgate, "push", str(tree), f"oci://{registry_host}/{repo}/lockgate:v1", *meta], cached
        )
        again_uncached = timed(
            [*lockgate, "push", str(tree), f"oci://{registry_host}/{repo}/lockgate:v1", *meta],
            {"LOCKGATE_CACHE": "off"},
        )
        flux_again = timed(
            [
                flux,
                "push",
                "artifact",
                f"oci://{registry_host}/{repo}/flux:v1",
                "--path",
                str(tree),
                *meta,
                "--insecure-registry",
            ]
        )
        head = timed([*lockgate, "list", f"oci://{registry_host}/{repo}/lockgate"])
        out_ours, out_flux = workdir / f"pull-ours{index}", workdir / f"pull-flux{index}"
        pull_ours = timed(
            [*lockgate, "pull", f"oci://{registry_host}/{repo}/lockgate:v1", "-O", str(out_ours)]
        )
        out_flux.mkdir()
        pull_flux = timed(
            [
                flux,
                "pull",
                "artifact",
                f"oci://{registry_host}/{repo}/flux:v1",
                "--output",
                str(out_flux),
                "--insecure-registry",
            ]
        )
        rows += [
            _row("build+push", label, ours, "flux push artifact", peer_flux, "<= 1.0x flux"),
            _row("build+push", label, ours, "oras push", peer_oras, ""),
            _row(
                "unchanged re-push",
                label,
                again,
                "flux push artifact (re-push)",
                flux_again,
                "close to HEAD cost",
                {"lockgate_list_s": round(head[0], 3)},
            ),
            _row(
                "unchanged re-push, no build cache",
                label,
                again_uncached,
                "flux push artifact (re-push)",
                flux_again,
                "",
            ),
            _row("pull+extract", label, pull_ours, "flux pull artifact", pull_flux, ""),
        ]
        shutil.rmtree(tree)
    return rows


def _oras_push(oras: str, host: str, repo: str, tree: Path) -> tuple[float, int]:
    measured = run_measured([oras, "push", "--plain-http", f"{host}/{repo}/oras:v1", "apps"], cwd=tree)
    return measured.seconds, measured.rss_kib


def _row(
    bench: str,
    scenario: str,
    ours: tuple[float, int],
    peer: str,
    theirs: tuple[float, int],
    goal: str,
    extra: dict[str, object] | None = None,
) -> BenchResult:
    notes: dict[str, object] = {
        "ours_rss_mib": round(ours[1] / 1024, 1),
        "peer_rss_mib": round(theirs[1] / 1024, 1),
        **(extra or {}),
    }
    return BenchResult(
        f"artifacts {bench}", scenario, round(ours[0], 3), peer, round(theirs[0], 3), goal, notes
    )


def run(world: Any) -> list[BenchResult]:
    """The bench/run.py hook."""
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as tmp:
        return collect(world.registry.host, Path(tmp))


def measure(registry_host: str, workdir: Path) -> list[dict[str, object]]:
    return [r.as_dict() for r in collect(registry_host, workdir)]


def write(results: list[BenchResult]) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "artifacts.json").write_text(json.dumps([r.as_dict() for r in results], indent=2) + "\n")
    lines = [
        "# artifact benchmarks",
        "",
        "Ratio = lockgate / peer in the same run (lower is better).",
        "",
    ]
    lines += markdown_table(results)
    (RESULTS / "artifacts.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    from tests.world.registry import start_registry

    with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as tmp:
        reg = start_registry(Path(tmp), name="bench-registry")
        try:
            rows = collect(reg.host, Path(tmp))
        finally:
            reg.stop()
    write(rows)
    for r in rows:
        print(
            f"{r.benchmark:28} {r.scenario:22} ours {r.ours_seconds:>7}s  {r.peer:30} "
            f"{r.peer_seconds:>7}s  ratio {r.ratio:.2f}  {r.extra}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
