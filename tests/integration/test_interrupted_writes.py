"""``push`` and ``copy`` stopped by Ctrl-C (SIGINT) or SIGTERM say what was and was not written
(issue 36, item 3).

Each command runs as a child process against the world's registry with an artifact large
enough (a 48 MiB layer of random bytes) that it is still writing when the signal comes: the
signal is sent once the first write shows at the destination (an upload session in the
registry's storage for ``push``, the first blob file of the layout for ``copy``). The command
must exit 12 (the README's "abandoned"), print one ``error:`` line naming the signal, what it
wrote and what it did not (the tag), and the tag must indeed not exist, so nothing names an
incomplete artifact; running the command again completes it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lockgate.registry.client import RegistryClient
from lockgate.registry.reference import parse
from tests.integration.signing_support import client_for, push_artifact
from tests.world.registry import Registry

pytestmark = pytest.mark.world

LOCKGATE = [sys.executable, "-m", "lockgate"]
BIG = 48 << 20


def _start(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCKGATE_", "COSIGN_"))}
    env["LOCKGATE_CACHE"] = "off"
    return subprocess.Popen(
        [*LOCKGATE, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def _signal_when(
    proc: subprocess.Popen[str], started: Callable[[], bool], stop: signal.Signals
) -> tuple[str, str]:
    deadline = time.monotonic() + 120
    while not started():
        if proc.poll() is not None or time.monotonic() > deadline:
            out, err = proc.communicate()
            raise AssertionError(f"never saw the first write (exit {proc.returncode}):\n{out}\n{err}")
        time.sleep(0.005)
    proc.send_signal(stop)
    return proc.communicate(timeout=120)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_an_interrupted_push_says_what_it_wrote_and_leaves_the_tag_alone(
    stop: signal.Signals, registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = tmp_path / "deploy"
    tree.mkdir()
    (tree / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\n")
    (tree / "payload.txt").write_bytes(os.urandom(BIG))
    assert registry.data is not None
    uploads = registry.data / "docker" / "registry" / "v2" / "repositories" / unique / "_uploads"
    target = registry.oci(unique, ":v1")
    proc = _start("push", str(tree), target, cwd=tmp_path)
    out, err = _signal_when(proc, lambda: uploads.is_dir() and any(uploads.iterdir()), stop)
    assert proc.returncode == 12, out + err
    assert "Traceback" not in err, err
    assert f"error: {tree}: interrupted by {stop.name}: written to {registry.host}/{unique}: " in err, err
    assert "not written: tag v1 (the tag still names what it named before" in err, err
    assert "run the same push again" in err, err
    client = client_for(registry, unique)
    assert client.head_manifest(unique, "v1") is None

    again = subprocess.run(
        [*LOCKGATE, "push", str(tree), target], capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr
    assert client.head_manifest(unique, "v1") is not None


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_an_interrupted_copy_says_what_it_wrote_and_leaves_the_tag_unwritten(
    stop: signal.Signals, registry: Registry, unique: str, tmp_path: Path
) -> None:
    source = push_artifact(registry, unique, os.urandom(BIG), tag="1.0.0")
    layout = tmp_path / "mirror"
    blobs = layout / "blobs" / "sha256"
    proc = _start("copy", registry.oci(unique, ":1.0.0"), f"oci-layout://{layout}", cwd=tmp_path)
    # the config blob (2 bytes) is written first; the 48 MiB layer is then on its way
    out, err = _signal_when(
        proc, lambda: blobs.is_dir() and any(not p.name.startswith(".") for p in blobs.iterdir()), stop
    )
    assert proc.returncode == 12, out + err
    assert "Traceback" not in err, err
    assert f"error: interrupted by {stop.name}: written to oci-layout://{layout}: " in err, err
    assert "not written: 1.0.0 (a tag is written last" in err, err
    assert "run the same copy again to complete it" in err, err
    store = RegistryClient.for_reference(parse(f"oci-layout://{layout}"))
    assert store.head_manifest("", "1.0.0") is None
    # no half-written blob is left where a reader looks
    assert [p.name for p in blobs.iterdir() if p.name.startswith(".")] == []

    again = subprocess.run(
        [*LOCKGATE, "copy", registry.oci(unique, ":1.0.0"), f"oci-layout://{layout}"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert store.head_manifest("", "1.0.0") == source.rsplit("@", 1)[1]
