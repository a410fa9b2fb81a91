"""Interop with the flux CLI (built from the Go module proxy): each reads what the other pushed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lockgate import registry as lg_registry
from tests.integration.artifacts_support import client, lockgate, write_tree
from tests.world.binaries import binary
from tests.world.registry import Registry

SOURCE = "https://github.com/example/fleet"
REVISION = "main@sha1:" + "c" * 40


@pytest.fixture(autouse=True)
def _isolated_docker_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))


def flux(*args: str) -> str:
    """Run the flux CLI; the world's registry speaks plain http, hence --insecure-registry."""
    argv = [str(binary("flux")), *args, "--insecure-registry", "--timeout", "60s"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"flux {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_flux_pulls_our_artifact(registry: Registry, unique: str, tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ref = registry.oci(unique, ":v1")
    pushed = lockgate("push", str(tree), ref, "--source", SOURCE, "--revision", REVISION)
    assert pushed.code == 0, pushed.err
    out = tmp_path / "flux-out"
    out.mkdir()
    log = flux("pull", "artifact", ref, "--output", str(out))
    assert _files(out) == _files(tree)
    assert REVISION in log and SOURCE in log


def test_we_pull_and_diff_what_flux_pushed(registry: Registry, unique: str, tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ref = registry.oci(unique, ":v1")
    flux("push", "artifact", ref, "--path", str(tree), "--source", SOURCE, "--revision", REVISION)
    pulled = lockgate("pull", ref, "-O", str(tmp_path / "out"), "--output", "json")
    assert pulled.code == 0, pulled.err
    assert _files(tmp_path / "out") == _files(tree)
    assert json.loads(pulled.out)["annotations"]["org.opencontainers.image.revision"] == REVISION
    same = lockgate("diff", str(tree), ref)
    assert same.code == 0, same.out + same.err
    (tree / "ns.yaml").write_text((tree / "ns.yaml").read_text() + "  labels:\n    team: web\n")
    changed = lockgate("diff", str(tree), ref)
    assert changed.code == 1
    assert 'metadata.labels.team: <absent> -> "web"' in changed.out


def test_manifest_structure_matches_flux_field_by_field(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ours_ref, theirs_ref = registry.oci(f"{unique}-ours", ":v1"), registry.oci(f"{unique}-flux", ":v1")
    assert lockgate("push", str(tree), ours_ref, "--source", SOURCE, "--revision", REVISION).code == 0
    flux("push", "artifact", theirs_ref, "--path", str(tree), "--source", SOURCE, "--revision", REVISION)

    def fetch(text: str) -> tuple[dict[str, object], str]:
        ref = lg_registry.parse(text)
        got = client(registry, ref).get_manifest(ref.repository, "v1")
        return json.loads(got.content), got.media_type

    ours, ours_type = fetch(ours_ref)
    theirs, theirs_type = fetch(theirs_ref)
    assert ours_type == theirs_type
    assert list(ours) == list(theirs), "top-level fields and their order"
    for name in ("schemaVersion", "mediaType"):
        assert ours[name] == theirs[name], name
    assert "artifactType" not in theirs and "subject" not in theirs
    oc, tc = ours["config"], theirs["config"]
    assert isinstance(oc, dict) and isinstance(tc, dict)
    assert list(oc) == list(tc) and oc["mediaType"] == tc["mediaType"]
    ol, tl = ours["layers"], theirs["layers"]
    assert isinstance(ol, list) and isinstance(tl, list) and len(ol) == len(tl) == 1
    assert list(ol[0]) == list(tl[0]) and ol[0]["mediaType"] == tl[0]["mediaType"]
    oa, ta = ours["annotations"], theirs["annotations"]
    assert isinstance(oa, dict) and isinstance(ta, dict)
    assert set(oa) == set(ta)
    for key in ("org.opencontainers.image.source", "org.opencontainers.image.revision"):
        assert oa[key] == ta[key], key
