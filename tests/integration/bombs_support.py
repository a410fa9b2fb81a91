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


#: Linux charges a forked child the resident set of the image it was forked from until it
#: exec's, and ``ru_maxrss`` keeps that high-water mark: a child forked straight from pytest
#: (hundreds of MiB into a long session) would report pytest's size, not lockgate's. So the
#: CLI starts from this tiny launcher, which caps the address space, exec's lockgate in a
#: child of its own and writes only that child's peak (KiB) to the file it is given.
_LAUNCHER = (
    "import os, resource, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]), int(sys.argv[2])))\n"
    "    os.execvp(sys.argv[3], sys.argv[3:])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def lockgate(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> Measured:
    """``lockgate ARGS`` as a capped child (through ``_LAUNCHER``); killed past ``timeout``."""
    full_env = {**os.environ, "LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize")), **(env or {})}
    with tempfile.TemporaryDirectory() as tmp:
        peak_file = Path(tmp) / "peak"
        with open(Path(tmp) / "out", "w+b") as out, open(Path(tmp) / "err", "w+b") as err:
            started = time.monotonic()
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    "-c",
                    _LAUNCHER,
                    str(peak_file),
                    str(MEMORY_CAP),
                    *LOCKGATE,
                    *args,
                ],
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env=full_env,
                start_new_session=True,
            )
            # the whole session (launcher and lockgate) goes, by its group
            timer = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL))
            timer.start()
            try:
                proc.wait()
            finally:
                timer.cancel()
            seconds = time.monotonic() - started
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
        peak_kib = int(peak_file.read_text()) if peak_file.exists() else 0
    return Measured(proc.returncode, stdout, stderr, seconds, peak_kib / 1024)


def peak_mib(pid: int) -> float:
    """The peak resident set of a running process (``VmHWM``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for pid {pid}")
