"""``lockgate import --from-files``: which documents of a fleet repository are read, and how."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lockgate.errors import UsageError
from runner.pipeline import fluxread
from tests.unit.runner.plan.fluximport.support import FLEET, kustomization, ocirepository


def test_the_fleet_s_flux_objects_and_the_controller_are_read() -> None:
    found = fluxread.from_files([FLEET])
    kinds = sorted({o.kind for o in found})
    assert kinds == [
        "Alert", "Deployment", "GitRepository", "HelmRelease", "HelmRepository", "ImagePolicy",
        "ImageRepository", "ImageUpdateAutomation", "Kustomization", "OCIRepository", "Provider", "Receiver",
    ]  # fmt: skip
    assert [o.name for o in found if o.kind == "Deployment"] == ["kustomize-controller"]


def test_a_namespace_selects_its_objects_and_keeps_the_controller() -> None:
    found = fluxread.from_files([FLEET], namespace="team-b")
    assert {(o.kind, o.namespace) for o in found} == {
        ("OCIRepository", "team-b"),
        ("Kustomization", "team-b"),
        ("Deployment", "flux-system"),
    }


def test_kubectl_lists_are_opened_and_other_files_skipped(tmp_path: Path) -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": [ocirepository(), kustomization()]}
    (tmp_path / "export.yaml").write_text(yaml.safe_dump(listed))
    (tmp_path / "app.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    (tmp_path / "notes.txt").write_text(yaml.safe_dump(ocirepository(name="not-yaml")))
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.yaml").write_text(yaml.safe_dump(ocirepository(name="in-git")))
    (tmp_path / "link.yaml").symlink_to(tmp_path / "export.yaml")
    found = fluxread.from_files([tmp_path])
    assert sorted((o.kind, o.name) for o in found) == [("Kustomization", "app"), ("OCIRepository", "app")]


def test_the_same_object_twice_is_refused_naming_both_places(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(ocirepository()))
    (tmp_path / "b.yaml").write_text("# a copy\n---\n" + yaml.safe_dump(ocirepository()))
    with pytest.raises(UsageError) as caught:
        fluxread.from_files([tmp_path])
    said = f"{tmp_path / 'b.yaml'}:3: OCIRepository flux-system/app is also at {tmp_path / 'a.yaml'}:1"
    assert said in str(caught.value)


def test_invalid_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("apiVersion: source.toolkit.fluxcd.io/v1\nkind: [\n")
    with pytest.raises(UsageError, match=r"bad\.yaml:3:1: invalid YAML"):
        fluxread.from_files([tmp_path])


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such directory"):
        fluxread.from_files([tmp_path / "nope"])
