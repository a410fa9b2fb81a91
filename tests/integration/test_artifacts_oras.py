"""Interop with the oras CLI: it reads our manifests and blobs by digest; we pull its directory pushes."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from tests.integration.artifacts_support import lockgate, write_tree
from tests.world.binaries import binary
from tests.world.registry import Registry


def oras(*args: str, cwd: Path | None = None) -> bytes:
    proc = subprocess.run([str(binary("oras")), *args], capture_output=True, cwd=cwd, timeout=300)
    assert proc.returncode == 0, f"oras {' '.join(args)} failed:\n{proc.stdout!r}\n{proc.stderr!r}"
    return proc.stdout


def test_oras_fetches_our_manifest_and_layer(registry: Registry, unique: str, tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ref = registry.oci(unique, ":v1")
    pushed = lockgate("push", str(tree), ref, "--output", "json")
    assert pushed.code == 0, pushed.err
    digest = json.loads(pushed.out)["digest"]
    raw = oras("manifest", "fetch", "--plain-http", f"{registry.host}/{unique}:v1")
    assert "sha256:" + hashlib.sha256(raw).hexdigest() == digest
    layer = json.loads(raw)["layers"][0]
    blob = oras(
        "blob", "fetch", "--plain-http", "--output", "-", f"{registry.host}/{unique}@{layer['digest']}"
    )
    assert "sha256:" + hashlib.sha256(blob).hexdigest() == layer["digest"]


def test_we_pull_a_directory_oras_pushed(registry: Registry, unique: str, tmp_path: Path) -> None:
    write_tree(tmp_path / "work" / "manifests", unique)
    oras("push", "--plain-http", f"{registry.host}/{unique}:v1", "manifests", cwd=tmp_path / "work")
    run = lockgate("pull", registry.oci(unique, ":v1"), "-O", str(tmp_path / "out"))
    assert run.code == 0, run.err
    assert (tmp_path / "out" / "manifests" / "ns.yaml").read_text() == (
        tmp_path / "work" / "manifests" / "ns.yaml"
    ).read_text()
