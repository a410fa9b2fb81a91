"""Reproducibility: two checkouts of one commit, different umask and file times, same digests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from action.artifacts import push as push_mod
from lockgate import registry as lg_registry
from lockgate.registry.oci import ImageManifest
from tests.integration.artifacts_support import client, write_tree
from tests.world.registry import Registry

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e",
    "GIT_AUTHOR_DATE": "@1700000000 +0000",
    "GIT_COMMITTER_DATE": "@1700000000 +0000",
    "PATH": "/usr/bin:/bin",
}


def _sh(script: str, cwd: Path) -> None:
    subprocess.run(["sh", "-c", script], cwd=cwd, check=True, capture_output=True, env=GIT_ENV)


def test_two_checkouts_give_identical_digests(
    registry: Registry, unique: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    origin = write_tree(tmp_path / "origin", unique)
    (origin / "run.sh").write_text("#!/bin/sh\n")
    (origin / "run.sh").chmod(0o755)
    _sh("git init -q -b main && git add . && git commit -q -m init", origin)
    _sh(f"umask 022 && git clone -q {origin} a", tmp_path)
    _sh(f"umask 077 && git clone -q {origin} b", tmp_path)
    for index, checkout in enumerate((tmp_path / "a", tmp_path / "b")):
        for path in checkout.rglob("*"):
            os.utime(path, (1_000_000 * (index + 1), 1_000_000 * (index + 1)), follow_symlinks=False)
    assert (tmp_path / "b" / "ns.yaml").stat().st_mode & 0o777 == 0o600

    digests = []
    for name in ("a", "b"):
        ref = lg_registry.parse(registry.oci(f"{unique}-{name}", ":main"))
        result = push_mod.push(str(tmp_path / name), ref, client(registry, ref))
        digests.append(result.digest)
        annotations = ImageManifest.from_bytes(
            client(registry, ref).get_manifest(ref.repository, result.digest).content, where=str(ref)
        ).annotations
        assert annotations["org.opencontainers.image.created"] == "2023-11-14T22:13:20Z"
        assert annotations["org.opencontainers.image.revision"].startswith("main@sha1:")
    assert digests[0] == digests[1]
