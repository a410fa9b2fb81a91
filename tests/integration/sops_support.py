"""The real sops and age for the decryption tests: keys from Debian's ``age-keygen``, files
encrypted by the pinned sops CLI (tests/world/pins.py), decrypted by lockgate.

Only the public recipient reaches sops; the identity stays in memory (``age-keygen`` prints
it). sops runs in a scratch directory of the test with a clean environment, so no
``.sops.yaml`` or ``SOPS_*`` variable of the machine changes what it writes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.world import binaries


@dataclass(frozen=True)
class AgeKey:
    identity: str  # the whole age-keygen output (comments and AGE-SECRET-KEY-1...)
    recipient: str


def age_key() -> AgeKey:
    program = shutil.which("age-keygen")
    if program is None:
        pytest.fail("age-keygen is not on PATH: install Debian's age (make system-packages)")
    proc = subprocess.run([program], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"age-keygen failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    recipient = next(
        line.split(":", 1)[1].strip() for line in proc.stdout.splitlines() if line.startswith("# public key:")
    )
    return AgeKey(identity=proc.stdout, recipient=recipient)


def encrypt(
    workdir: Path, name: str, text: str, key: AgeKey, *args: str, input_type: str | None = None
) -> str:
    """``sops --encrypt --age RECIPIENT ARGS NAME`` on ``text`` (written as ``workdir/NAME``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / name
    path.write_text(text)
    types = ["--input-type", input_type, "--output-type", input_type] if input_type else []
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir)}
    proc = subprocess.run(
        [str(binaries.binary("sops")), "--encrypt", "--age", key.recipient, *types, *args, name],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    path.unlink()
    if proc.returncode != 0:
        pytest.fail(f"sops --encrypt {name} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return proc.stdout
