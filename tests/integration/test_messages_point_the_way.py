"""Messages that point the right way (against the world's registry): each names what is
wrong and suggests a step the command really has."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.artifacts_support import lockgate, write_tree
from tests.world.binaries import binary
from tests.world.registry import Registry


@pytest.fixture(autouse=True)
def _isolated_docker_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))


def test_reconcile_of_a_non_flux_artifact_says_how_to_publish_one(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("not manifests\n")
    pushed = subprocess.run(
        [str(binary("oras")), "push", "--plain-http", f"{registry.host}/{unique}:v1", "notes.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert pushed.returncode == 0, pushed.stderr
    run = lockgate(
        "reconcile", registry.oci(unique, ":v1"), "--name", "n", "--insecure-skip-verify", "--dry-run"
    )
    assert run.code == 7, run.err
    assert "not a Flux artifact" in run.err and "lockgate push" in run.err, run.err
    assert "--media-type" not in run.err  # reconcile has no such flag


def test_reconcile_of_a_raw_helm_chart_hints_at_render(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    made = subprocess.run(
        [str(binary("helm")), "create", "chart"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert made.returncode == 0, made.stderr
    push = lockgate("push", str(tmp_path / "chart"), registry.oci(unique, ":v1"))
    assert push.code == 0, push.err
    run = lockgate(
        "reconcile", registry.oci(unique, ":v1"), "--name", "c", "--insecure-skip-verify", "--dry-run"
    )
    assert run.code == 8, run.err
    assert "Helm chart" in run.err and "--render" in run.err, run.err


def test_sign_of_a_tag_names_the_digest_to_sign(registry: Registry, unique: str, tmp_path: Path) -> None:
    push = lockgate(
        "push", str(write_tree(tmp_path / "s", unique)), registry.oci(unique, ":v1"), "-o", "json"
    )
    assert push.code == 0, push.err
    digest = push.out.split('"digest": "')[1].split('"')[0]
    run = lockgate("sign", registry.oci(unique, ":v1"), "--key", "unused.key")
    assert run.code == 2, run.err
    assert f"lockgate sign oci://{registry.host}/{unique}@{digest}" in run.err, run.err


def test_a_yaml_tab_is_called_a_tab(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: a\n")
    run = lockgate("build", str(tmp_path / "app"))
    assert run.code == 8, run.err
    assert "cm.yaml:4:1" in run.err and "a tab character" in run.err, run.err


def _oras(*args: str, cwd: Path) -> None:
    done = subprocess.run([str(binary("oras")), *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_inspect_shows_any_oci_artifact_and_index(registry: Registry, unique: str, tmp_path: Path) -> None:
    """Exit classes: an OCI artifact that is not Flux's is shown (manifest, layers), not "not found"."""
    (tmp_path / "notes.txt").write_text("not manifests\n")
    _oras("push", "--plain-http", f"{registry.host}/{unique}:plain", "notes.txt", cwd=tmp_path)
    run = lockgate("inspect", registry.oci(unique, ":plain"), "-o", "json")
    assert run.code == 0, run.err
    shown = json.loads(run.out)
    assert shown["fluxArtifact"] is False and "not a Flux artifact" in shown["note"]
    assert [layer["mediaType"] for layer in shown["layers"]] == ["application/vnd.oci.image.layer.v1.tar"]
    manifest = shown["digest"]
    size = len(
        subprocess.run(
            [
                str(binary("oras")),
                "manifest",
                "fetch",
                "--plain-http",
                f"{registry.host}/{unique}@{manifest}",
            ],
            capture_output=True,
            check=True,
        ).stdout
    )
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest,
                "size": size,
                "platform": {"os": "linux", "architecture": "amd64"},
            }
        ],
    }
    (tmp_path / "index.json").write_text(json.dumps(index))
    _oras(
        "manifest",
        "push",
        "--plain-http",
        "--media-type",
        "application/vnd.oci.image.index.v1+json",
        f"{registry.host}/{unique}:index",
        "index.json",
        cwd=tmp_path,
    )
    text = lockgate("inspect", registry.oci(unique, ":index"))
    assert text.code == 0, text.err
    assert f"manifest application/vnd.oci.image.manifest.v1+json {manifest} linux/amd64" in text.out
    assert "inspect one of its manifests by digest" in text.out


def test_pull_over_a_limit_is_not_a_verification_failure(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    push = lockgate("push", str(write_tree(tmp_path / "s", unique)), registry.oci(unique, ":v1"))
    assert push.code == 0, push.err
    run = lockgate("pull", registry.oci(unique, ":v1"), "-O", str(tmp_path / "out"), "--max-files", "1")
    assert run.code == 8, run.err
    assert "(limit)" in run.err and not (tmp_path / "out").exists()
    ok = lockgate("pull", registry.oci(unique, ":v1"), "-O", str(tmp_path / "new" / "out"))
    assert ok.code == 0, ok.err
    assert (tmp_path / "new" / "out").stat().st_mode & 0o777 == 0o755


def test_an_unreachable_loopback_registry_is_not_sent_to_insecure(tmp_path: Path) -> None:
    """A loopback registry is tried over https, then plain http, already: the hint for one that
    does not answer says so instead of suggesting --insecure (issue 36, Low). A closed port."""
    from tests.world.process import free_port

    port = free_port()
    for argv in (["inspect", f"oci://127.0.0.1:{port}/app:v1"], ["pull", f"oci://localhost:{port}/app:v1"]):
        run = lockgate(*argv, "-O", str(tmp_path / "out")) if argv[0] == "pull" else lockgate(*argv)
        assert run.code == 9, run.err
        assert "https and plain http were both tried" in run.err, run.err
        assert "--insecure" not in run.err, run.err
