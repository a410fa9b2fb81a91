"""Every path argument of every command: missing, unreadable and unwritable paths end in
a one-line error with exit 2, never a traceback, and nothing is written or contacted.

The registry address is a closed port on purpose: a command that reached the network
before checking its paths would exit 9 (registry), not 2. Unreadable paths are tried as
an unprivileged user (``setpriv`` to nobody when the suite runs as root, since root reads
anything), in a subprocess, so the check is the real process's output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockgate.cli import main

REGISTRY = "oci://127.0.0.1:9/app"
DIGEST = "sha256:" + "a" * 64
MISSING = "/nonexistent-lockgate/x"
UNWRITABLE_DIR = "/proc"  # nothing can be created there, not even by root


@pytest.fixture(scope="module")
def tree() -> Iterator[Path]:
    """A world-traversable directory (nobody must reach it) with one readable app,
    one unreadable directory and one unreadable file."""
    root = Path(tempfile.mkdtemp(prefix="lockgate-paths-", dir="/tmp"))
    root.chmod(0o755)
    app = root / "app"
    app.mkdir()
    (app / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    locked = root / "locked"
    locked.mkdir()
    (locked / "cm.yaml").write_text((app / "cm.yaml").read_text())
    locked.chmod(0o000)
    secret = root / "unreadable.yaml"
    secret.write_text("kind: Sync\n")
    secret.chmod(0o000)
    (root / "ro").mkdir()
    (root / "ro").chmod(0o555)
    yield root
    locked.chmod(0o755)
    shutil.rmtree(root)


def _in_process(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    # an uncaught exception (the traceback case) fails the test right here
    code = main(argv)
    return code, capsys.readouterr().err


MISSING_CASES = [
    ["build", MISSING],
    ["push", MISSING, f"{REGISTRY}:v1"],
    ["diff", MISSING, f"{REGISTRY}:v1"],
    ["push", "{app}", f"{REGISTRY}:v1", "--sign", "key", "--key", MISSING],
    ["push", "{app}", f"{REGISTRY}:v1", "--render", "--values", MISSING],
    ["sign", f"{REGISTRY}@{DIGEST}", "--key", MISSING],
    ["verify", f"{REGISTRY}@{DIGEST}", "--key", MISSING],
    ["images", "scan", "--path", MISSING],
    ["images", "update", "--path", MISSING],
    ["images", "scan", "--path", "{app}", "--secrets-dir", MISSING],
    ["reconcile", "--config", MISSING],
    ["reconcile", f"{REGISTRY}:v1", "--name", "a", "--verify-key", MISSING],
    ["serve", "--config", MISSING],
    ["rollback", "a", "--config", MISSING],
]

UNWRITABLE_CASES = [
    ["build", "{app}", "-O", f"{UNWRITABLE_DIR}/out.tgz"],
    ["build", "{app}", "-O", f"{MISSING}/out.tgz"],
    ["build", "{app}", "-O", "{app}"],
    ["pull", f"{REGISTRY}@{DIGEST}", "-O", f"{UNWRITABLE_DIR}/out"],
    ["pull", f"{REGISTRY}@{DIGEST}", "-O", "{app}"],
    ["pull", f"{REGISTRY}@{DIGEST}", "-O", "{app}/cm.yaml"],
    ["keygen", "--output-key-prefix", f"{UNWRITABLE_DIR}/k"],
    ["keygen", "--output-key-prefix", f"{MISSING}/k"],
]


def _fill(argv: list[str], tree: Path) -> list[str]:
    return [a.replace("{app}", str(tree / "app")) for a in argv]


@pytest.mark.parametrize("argv", MISSING_CASES + UNWRITABLE_CASES, ids=" ".join)
def test_bad_path_is_a_usage_error(
    argv: list[str], tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCKGATE_PASSWORD", "not-a-real-password")
    argv = _fill(argv, tree)
    code, err = _in_process(argv, capsys)
    assert code == 2, err
    assert "Traceback" not in err
    named = [a for a in argv if a.startswith(("/", MISSING))]
    assert any(Path(a).name in err for a in named), err
    assert len([line for line in err.splitlines() if line.strip()]) <= 3, err
    assert not list(Path(UNWRITABLE_DIR).glob(".lockgate-probe-*"))


def _as_nobody(argv: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    env = {**os.environ, "HOME": str(home), "LOCKGATE_PASSWORD": "not-a-real-password"}
    env.pop("DOCKER_CONFIG", None)
    cmd = [*prefix, sys.executable, "-m", "lockgate", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=False)


UNREADABLE_CASES = [
    ["build", "{locked}"],
    ["build", "{app}", "-O", "{ro}/out.tgz"],
    ["push", "{locked}", f"{REGISTRY}:v1"],
    ["diff", "{locked}", f"{REGISTRY}:v1"],
    ["sign", f"{REGISTRY}@{DIGEST}", "--key", "{unreadable}"],
    ["verify", f"{REGISTRY}@{DIGEST}", "--key", "{unreadable}"],
    ["images", "scan", "--path", "{locked}"],
    ["reconcile", "--config", "{unreadable}"],
    ["serve", "--config", "{unreadable}"],
    ["pull", f"{REGISTRY}@{DIGEST}", "-O", "{ro}/out"],
    ["keygen", "--output-key-prefix", "{ro}/k"],
]


@pytest.mark.parametrize("argv", UNREADABLE_CASES, ids=" ".join)
def test_unreadable_or_unwritable_for_the_user_is_a_usage_error(argv: list[str], tree: Path) -> None:
    if shutil.which("setpriv") is None and os.geteuid() == 0:
        pytest.fail("setpriv (util-linux) is needed to run a command as an unprivileged user")
    filled = [
        a.replace("{locked}", str(tree / "locked"))
        .replace("{unreadable}", str(tree / "unreadable.yaml"))
        .replace("{ro}", str(tree / "ro"))
        .replace("{app}", str(tree / "app"))
        for a in argv
    ]
    done = _as_nobody(filled, tree / "ro")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert str(tree) in done.stderr or "locked" in done.stderr or "unreadable" in done.stderr, done.stderr
    assert not (tree / "ro" / "out.tgz").exists()
