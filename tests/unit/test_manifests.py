"""Loading Kubernetes objects: what counts as an object, and errors that name file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate import manifests
from lockgate.errors import RenderError


def _write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_loads_multi_document_files_in_order(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "b.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: app\n",
    )
    _write(
        tmp_path,
        "a.yml",
        "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: app\n---\n\n---\n"
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n",
    )
    _write(
        tmp_path, "kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
    )
    _write(tmp_path, ".hidden/x.yaml", "not: loaded\n")
    objs = manifests.load([tmp_path], relative_to=tmp_path)
    assert [(str(o.key), o.origin) for o in objs] == [
        ("Namespace/app", "a.yml:2"),
        ("ConfigMap/c", "a.yml:9"),
        ("Deployment.apps/app/web", "b.yaml:1"),
    ]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n", r"x\.yaml:5:1: invalid YAML"),
        ("kind: ConfigMap\nmetadata: {name: a}\n", r"x\.yaml:1: the document has no apiVersion"),
        ("apiVersion: v1\nmetadata: {name: a}\n", r"x\.yaml:1: the document has no kind"),
        (
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
            r"x\.yaml:2: ConfigMap has no metadata\.name",
        ),
        ("- a\n- b\n", r"x\.yaml:1: expected a Kubernetes object"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\n"
            "metadata: {name: a}\n",
            r"x\.yaml:5: duplicate object ConfigMap/a \(first defined at x\.yaml:1\)",
        ),
    ],
    ids=["invalid-yaml", "no-apiversion", "no-kind", "no-name", "not-a-mapping", "duplicate"],
)
def test_errors_name_file_and_line(tmp_path: Path, text: str, says: str) -> None:
    _write(tmp_path, "x.yaml", text)
    with pytest.raises(RenderError, match=says):
        manifests.load([tmp_path], relative_to=tmp_path)


def test_duplicates_across_files(tmp_path: Path) -> None:
    doc = "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\n"
    _write(tmp_path, "a.yaml", doc)
    _write(tmp_path, "b.yaml", doc)
    with pytest.raises(
        RenderError, match=r"b\.yaml:1: duplicate object Secret/n/s \(first defined at a\.yaml:1\)"
    ):
        manifests.load([tmp_path], relative_to=tmp_path)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(RenderError, match="no such file or directory"):
        manifests.load([tmp_path / "nope"])
