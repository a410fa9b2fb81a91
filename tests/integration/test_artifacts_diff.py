"""lockgate diff: local manifests against the pushed artifact, object by object, exit codes, JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.artifacts_support import creds_flag, lockgate, write_tree
from tests.world.registry import Registry


@pytest.fixture(autouse=True)
def _isolated_docker_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))


@pytest.mark.parametrize("which", ["registry", "auth_registry"])
def test_equal_then_changed(which: str, unique: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    reg: Registry = request.getfixturevalue(which)
    tree = write_tree(tmp_path / "src", unique)
    ref = reg.oci(unique, ":v1")
    assert lockgate("push", str(tree), ref, *creds_flag(reg)).code == 0
    same = lockgate("diff", str(tree), ref, *creds_flag(reg))
    assert same.code == 0, same.err
    assert "no differences (3 objects unchanged)" in same.out

    web = tree / "apps" / "web.yaml"
    web.write_text(web.read_text().replace("replicas: 1", "replicas: 3").replace("c2VjcmV0", "bmV3c2VjcmV0"))
    (tree / "ns.yaml").unlink()
    (tree / "cm.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: {unique}\n"
    )
    changed = lockgate("diff", str(tree), ref, *creds_flag(reg))
    assert changed.code == 1, changed.err
    assert f"+ ConfigMap/{unique}/extra (created)" in changed.out
    assert f"- Namespace/{unique} (deleted)" in changed.out
    assert f"~ Deployment.apps/{unique}/web (configured)\n    spec.replicas: 1 -> 3" in changed.out
    assert 'data.password: "*** (before)" -> "*** (after)"' in changed.out
    assert "c2VjcmV0" not in changed.out and "bmV3c2VjcmV0" not in changed.out

    as_json = lockgate("diff", str(tree), ref, "--output", "json", *creds_flag(reg))
    assert as_json.code == 1
    value = json.loads(as_json.out)
    counts = value["counts"]
    assert (value["equal"], counts["created"], counts["deleted"], counts["configured"]) == (False, 1, 1, 2)
    assert "c2VjcmV0" not in as_json.out and "bmV3c2VjcmV0" not in as_json.out


@pytest.mark.parametrize(
    ("files", "code", "says"),
    [
        ({"bad.yaml": "apiVersion: v1\nkind: [\n"}, 8, r"bad.yaml:3:1: invalid YAML"),
        (
            {
                "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
                "b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
            },
            8,
            "b.yaml:1: duplicate object ConfigMap/x (first defined at a.yaml:1)",
        ),
        ({"n.yaml": "apiVersion: v1\nkind: ConfigMap\n"}, 8, "n.yaml:1: ConfigMap has no metadata.name"),
    ],
    ids=["invalid-yaml", "duplicate", "no-name"],
)
def test_bad_local_manifests(
    registry: Registry, unique: str, tmp_path: Path, files: dict[str, str], code: int, says: str
) -> None:
    ref = registry.oci(unique, ":v1")
    assert lockgate("push", str(write_tree(tmp_path / "src", unique)), ref).code == 0
    local = tmp_path / "local"
    local.mkdir()
    for name, text in files.items():
        (local / name).write_text(text)
    run = lockgate("diff", str(local), ref)
    assert run.code == code and says in run.err, run.err
