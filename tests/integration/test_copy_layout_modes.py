"""A layout written by ``lockgate copy … oci-layout://DIR`` is readable by another user (issue 36, item 2).

The air-gap flow of docs/registries.md has an operator copy an artifact into a directory that
the non-root runner (another user) then reads. So the layout's files get the process umask as
oras writes them (0644 under umask 022; 0600 under 077), which is checked against the real
oras CLI copying the same artifact under the same umask; and the layout is then read as
``nobody`` (``setpriv``): oras pulls it, and every blob read back hashes to its name. (Under
umask 077 oras still makes its blobs 0444, inside 0700 directories; here the umask is kept.)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.signing_support import push_artifact
from tests.world.binaries import binary
from tests.world.registry import Registry

pytestmark = pytest.mark.world

LOCKGATE = [sys.executable, "-m", "lockgate"]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory another user can enter (pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="lockgate-layout-modes-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _under(mask: int, argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=300, preexec_fn=lambda: os.umask(mask)
    )


def _modes(root: Path) -> dict[str, str]:
    """Every entry of the layout (relative path -> ``-rw-r--r--``), temporary files excluded."""
    return {
        str(p.relative_to(root)): stat.filemode(p.stat().st_mode)
        for p in sorted(root.rglob("*"))
        if not p.name.startswith(".")
    }


@pytest.mark.parametrize(
    ("mask", "blob_mode", "index_mode"),
    [(0o022, "-r--r--r--", "-rw-r--r--"), (0o077, "-r--------", "-rw-------")],
)
def test_a_copied_layout_has_the_umask_modes_oras_gives_it(
    mask: int, blob_mode: str, index_mode: str, registry: Registry, unique: str, shared: Path
) -> None:
    push_artifact(registry, unique, b"layer bytes", tag="1.0.0")
    ours, theirs = shared / "ours", shared / "theirs"
    copied = _under(mask, [*LOCKGATE, "copy", registry.oci(unique, ":1.0.0"), f"oci-layout://{ours}"])
    assert copied.returncode == 0, copied.stderr
    peer = _under(
        mask,
        [
            str(binary("oras")),
            "copy",
            "--from-plain-http",
            "--to-oci-layout",
            f"{registry.host}/{unique}:1.0.0",
            f"{theirs}:1.0.0",
        ],
    )
    assert peer.returncode == 0, peer.stderr
    modes = _modes(ours)
    assert {m for name, m in modes.items() if name.startswith("blobs/sha256/")} == {blob_mode}, modes
    assert (modes["index.json"], modes["oci-layout"]) == (index_mode, index_mode), modes
    # under the usual umask, the same modes as oras's layout, entry for entry where both have it;
    # under 077 oras still makes blobs 0444 (in 0700 directories), where the umask is kept here
    oras = _modes(theirs)
    common = oras.keys() & modes.keys()
    mine, peers = {name: modes[name] for name in common}, {name: oras[name] for name in common}
    if mask == 0o022:
        assert mine == peers
    else:
        assert {n: m for n, m in mine.items() if "sha256/" not in n} == {
            n: m for n, m in peers.items() if "sha256/" not in n
        }


def test_another_user_reads_a_layout_an_operator_copied(
    registry: Registry, unique: str, shared: Path
) -> None:
    push_artifact(registry, unique, b"layer bytes for the runner", tag="1.0.0")
    layout = shared / "layout"
    copied = _under(0o022, [*LOCKGATE, "copy", registry.oci(unique, ":1.0.0"), f"oci-layout://{layout}"])
    assert copied.returncode == 0, copied.stderr
    # the runner's side: another user, no groups, with its own home and output directory
    home, out = shared / "home", shared / "out"
    for directory in (home, out):
        directory.mkdir()
        os.chown(directory, 65534, 65534)
    tool = shared / "oras"
    shutil.copy(binary("oras"), tool)
    tool.chmod(0o755)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    pulled = subprocess.run(
        [*NOBODY, str(tool), "pull", "--oci-layout", f"{layout}:1.0.0", "-o", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=out,
    )
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    # every blob, read by that user, hashes to its name
    for blob in (layout / "blobs" / "sha256").iterdir():
        read = subprocess.run([*NOBODY, "cat", str(blob)], capture_output=True, env=env, timeout=60)
        assert read.returncode == 0, read.stderr
        assert hashlib.sha256(read.stdout).hexdigest() == blob.name
    for name in ("index.json", "oci-layout"):
        read = subprocess.run([*NOBODY, "cat", str(layout / name)], capture_output=True, env=env, timeout=60)
        assert read.returncode == 0, (name, read.stderr)
