"""Partial work is reported as partial: `push --each` checks every directory before the first
push (one broken app: nothing pushed, every broken one named), and a push that fails after
others went out exits 10 with each directory's outcome."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from action.artifacts import push as push_mod
from lockgate import registry as lg_registry
from lockgate.errors import ExitCode
from lockgate.signing import keys
from tests.integration.artifacts_support import client, lockgate
from tests.world.registry import Registry

PASSWORD = "each-partial"


@pytest.fixture(autouse=True)
def _plain_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    for name in ("GITHUB_ACTIONS", "SOURCE_DATE_EPOCH"):
        monkeypatch.delenv(name, raising=False)


def _apps(root: Path, unique: str, broken: tuple[str, ...] = ()) -> Path:
    for app in ("a", "b", "c", "d"):
        (root / "apps" / app).mkdir(parents=True)
        text = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {app}-{unique}\n"
        if app in broken:
            text += "data: {unclosed: [\n"
        (root / "apps" / app / "cm.yaml").write_text(text)
    return root


def test_one_broken_app_stops_the_run_before_anything_is_pushed(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    root = _apps(tmp_path, unique, broken=("b", "d"))
    pair = keys.generate_key_pair(PASSWORD.encode())
    (tmp_path / "cosign.key").write_bytes(pair.private_pem)
    target = registry.oci(f"{unique}-{{name}}", ":v1")
    run = lockgate(
        "push",
        "--each",
        "apps/*",
        target,
        "--sign",
        "key",
        "--key",
        str(tmp_path / "cosign.key"),
        cwd=root,
        env={"LOCKGATE_PASSWORD": PASSWORD},
    )
    assert run.code == ExitCode.RENDER, run.err
    assert "2 of 4 directories do not build, so nothing was pushed" in run.err, run.err
    assert "apps/b: " in run.err and "apps/d: " in run.err and "cm.yaml:" in run.err, run.err
    for app in "abcd":
        ref = lg_registry.parse(registry.oci(f"{unique}-{app}", ":v1"))
        assert client(registry, ref).head_manifest(ref.repository, "v1") is None, app


def test_a_push_failing_midway_is_partial_with_every_outcome(
    registry: Registry, unique: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third directory's registry is a closed port (a real connection refused)."""
    monkeypatch.chdir(_apps(tmp_path, unique))

    def client_for(ref: lg_registry.Reference) -> lg_registry.RegistryClient:
        if ref.repository.endswith("-c"):
            return lg_registry.RegistryClient.for_reference(lg_registry.parse("oci://127.0.0.1:9/x:v1"))
        return client(registry, ref)

    with pytest.raises(push_mod.PartialPush) as caught:
        push_mod.push_each("apps/*", registry.oci(f"{unique}-{{name}}", ":v1"), client_for)
    partial = caught.value
    assert partial.exit_code == ExitCode.PARTIAL
    assert [r.path for r in partial.results] == ["apps/a", "apps/b"]
    assert partial.failed == "apps/c" and partial.left == ["apps/d"]
    rows = push_mod.partial_json(partial)
    assert [(row["path"], row["status"]) for row in rows] == [
        ("apps/a", "pushed"),
        ("apps/b", "pushed"),
        ("apps/c", "failed"),
        ("apps/d", "notAttempted"),
    ]
    assert "127.0.0.1:9" in json.dumps(rows[2]) and os.path.basename(partial.failed) == "c"
