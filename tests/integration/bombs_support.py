"""Helpers for the bad-input tests: the bombs, and the CLI as a child whose memory is watched.

A bomb that gets through would take the machine down with the test, so every child here runs
under an address-space cap and a deadline: a regression fails the test (killed, or out of
memory) instead of exhausting a machine shared with other work.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.world import binaries

BOMBS = Path(__file__).resolve().parents[1] / "data" / "bombs"
LOCKGATE = [sys.executable, "-m", "lockgate"]
#: the cap of every child: far above what lockgate needs, far below what a bomb would take
MEMORY_CAP = 3 << 30
#: a refusal leaves the peak of a plain CLI run (about 100 MiB with the registry client loaded)
FLAT_MIB = 250


def bomb(name: str) -> str:
    """A fixture of ``tests/data/bombs``: ``aliases.yaml`` (1 KB, 10^9 strings expanded),
    ``self-list.yaml`` (a List holding itself), ``deep.yaml`` (500 nested sequences)."""
    return (BOMBS / name).read_text()


def json_bomb(depth: int = 100_000) -> bytes:
    """A JSON document nested ``depth`` arrays deep (two bytes a level)."""
    return b"[" * depth + b"]" * depth


@dataclass(frozen=True)
class Measured:
    code: int
    out: str
    err: str
    seconds: float
    #: the child's peak resident set, from ``wait4``
    peak_mib: float


def cap_memory() -> None:
    """``preexec_fn`` of a child: the address-space cap."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def lockgate(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> Measured:
    """``lockgate ARGS`` as a capped child; killed (by its pid) past ``timeout``."""
    full_env = {**os.environ, "LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize")), **(env or {})}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(
            [*LOCKGATE, *args],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=full_env,
            preexec_fn=cap_memory,
        )
        timer = threading.Timer(timeout, os.kill, (proc.pid, signal.SIGKILL))
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        return Measured(
            proc.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
            seconds,
            usage.ru_maxrss / 1024,
        )


def peak_mib(pid: int) -> float:
    """The peak resident set of a running process (``VmHWM``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for pid {pid}")
