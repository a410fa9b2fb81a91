"""What a ``lockgate`` command imports, read from ``python -X importtime`` (stable under load)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)")

#: the stacks that ``--help`` and ``--version`` must not load
HEAVY = ("requests", "urllib3", "httpx", "yaml", "cryptography", "nacl", "sigstore", "isal", "git", "re2")


def imported(
    *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, int]]:
    """Run ``python -X importtime -m lockgate ARGS``; the result and {module: self microseconds}."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "lockgate", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    modules = {m[3]: int(m[1]) for m in map(_LINE.match, done.stderr.splitlines()) if m}
    return done, modules


def loaded(modules: Mapping[str, int], *packages: str) -> list[str]:
    """The modules of ``packages`` (top-level names) that were imported."""
    return sorted(name for name in modules if name.split(".")[0] in packages)
