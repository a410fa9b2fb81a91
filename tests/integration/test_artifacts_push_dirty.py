"""A push from a checkout with uncommitted changes under the path (issue 36, item 6).

The revision annotation names a commit; content that commit does not hold must not go out
under it silently. ``push`` warns on stderr, lists the changes in its JSON (the Action's Job
Summary and annotation read them) and records ``dev.lockgate.vcs.modified: "true"`` on the
artifact; ``--strict`` (and ``--refuse-dirty``, what the Action passes unless ``allow-dirty``)
refuses it with nothing pushed. Changes elsewhere in the repository do not count, nor ignored
files, nor a revision given with ``--revision`` (the caller's word).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from lockgate import registry as registry_mod
from tests.integration.artifacts_support import lockgate
from tests.world.registry import Registry

pytestmark = pytest.mark.world

MODIFIED = "dev.lockgate.vcs.modified"


@pytest.fixture(autouse=True)
def _plain_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    monkeypatch.setenv("LOCKGATE_CACHE", "off")
    for name in ("GITHUB_ACTIONS", "SOURCE_DATE_EPOCH", "GITHUB_SHA"):
        monkeypatch.delenv(name, raising=False)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _repo(root: Path) -> str:
    (root / "deploy").mkdir(parents=True)
    (root / "deploy" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    (root / "other.txt").write_text("elsewhere\n")
    (root / ".gitignore").write_text("*.log\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "one")
    return _git(root, "rev-parse", "HEAD")


def _annotations(url: str) -> dict[str, str]:
    ref = registry_mod.parse(url)
    client = registry_mod.RegistryClient.for_reference(ref)
    doc = json.loads(client.get_manifest(ref.repository, ref.tag or "").content)
    found: dict[str, str] = doc.get("annotations") or {}
    return found


def test_a_dirty_path_is_warned_about_annotated_and_refused_under_strict(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    sha = _repo(repo)
    deploy = str(repo / "deploy")

    # clean: no warning, no annotation; a change elsewhere or an ignored file does not count
    (repo / "other.txt").write_text("changed elsewhere\n")
    (repo / "deploy" / "debug.log").write_text("ignored\n")
    clean = lockgate("push", deploy, registry.oci(unique, ":clean"), "--output", "json")
    assert clean.code == 0, clean.err
    assert "uncommitted" not in clean.err and "uncommitted" not in json.loads(clean.out)
    assert MODIFIED not in _annotations(registry.oci(unique, ":clean"))

    # modified and untracked files under the path
    (repo / "deploy" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
    (repo / "deploy" / "new.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    strict = lockgate("push", deploy, registry.oci(unique, ":strict"), "--strict")
    assert strict.code == 2, strict.err
    assert f"error: {deploy}: the checkout has uncommitted changes there" in strict.err, strict.err
    assert "deploy/cm.yaml" in strict.err and "deploy/new.yaml" in strict.err
    assert f"not the content of main@sha1:{sha}" in strict.err
    refused = lockgate("push", deploy, registry.oci(unique, ":refused"), "--refuse-dirty")
    assert refused.code == 2, refused.err
    client = registry_mod.RegistryClient.for_reference(registry_mod.parse(registry.oci(unique, ":strict")))
    assert client.head_manifest(unique, "strict") is None and client.head_manifest(unique, "refused") is None

    warned = lockgate("push", deploy, registry.oci(unique, ":dirty"), "--output", "json")
    assert warned.code == 0, warned.err
    assert f"warning: {deploy}: the checkout has uncommitted changes there (" in warned.err, warned.err
    assert f'annotated {MODIFIED}: "true"' in warned.err
    result = json.loads(warned.out)
    assert result["revision"] == f"main@sha1:{sha}"
    assert sorted(result["uncommitted"]) == [" M deploy/cm.yaml", "?? deploy/new.yaml"]
    annotations = _annotations(registry.oci(unique, ":dirty"))
    assert annotations[MODIFIED] == "true"
    assert annotations["org.opencontainers.image.revision"] == f"main@sha1:{sha}"

    # a revision given by the caller is the caller's word: nothing to warn about
    given = lockgate("push", deploy, registry.oci(unique, ":given"), "--revision", "main@sha1:" + "0" * 40)
    assert given.code == 0 and "uncommitted" not in given.err, given.err
    assert MODIFIED not in _annotations(registry.oci(unique, ":given"))
    assert os.environ.get("GITHUB_ACTIONS") is None
