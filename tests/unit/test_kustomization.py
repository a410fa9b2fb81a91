"""What a kustomization would read: remote references refused where they must be, local paths
kept inside the artifact, every kustomization parsed within the bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate import kustomization
from lockgate.parselimits import LimitExceeded

BOMBS = Path(__file__).resolve().parents[1] / "data" / "bombs"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


REMOTE = {
    "https file": ("resources:\n- https://example.com/app.yaml\n", "resources[0]"),
    "http file": ("resources:\n- cm.yaml\n- http://127.0.0.1:8080/cm.yaml\n", "resources[1]"),
    "git over https": ("resources:\n- https://github.com/org/repo//deploy?ref=v1\n", "resources[0]"),
    "scp-like git": ("components:\n- git@github.com:org/repo.git//c\n", "components[0]"),
    "go-getter": ("bases:\n- git::https://example.com/repo.git\n", "bases[0]"),
    "host without scheme": ("resources:\n- github.com/org/repo/deploy?ref=main\n", "resources[0]"),
    "patch file": ("patches:\n- path: https://example.com/p.yaml\n", "patches[0].path"),
    "crd": ("crds:\n- https://example.com/crd.yaml\n", "crds[0]"),
    "openapi": ("openapi:\n  path: https://example.com/schema.json\n", "openapi.path"),
    "generator file": (
        "configMapGenerator:\n- name: c\n  files:\n  - key=https://example.com/f\n",
        "configMapGenerator[0].files[0]",
    ),
    "file url": ("resources:\n- file:///etc/passwd\n", "resources[0]"),
}


@pytest.mark.parametrize(("text", "field"), REMOTE.values(), ids=list(REMOTE))
def test_remote_references_are_refused_naming_file_field_and_url(
    tmp_path: Path, text: str, field: str
) -> None:
    root = _tree(tmp_path, {"app/kustomization.yaml": text, "app/cm.yaml": "a: 1\n"})
    with pytest.raises(kustomization.RemoteReference) as caught:
        kustomization.check(root / "app", root=root, allow_remote=False)
    assert caught.value.file == "app/kustomization.yaml"
    assert caught.value.field == field
    assert str(caught.value).startswith(
        f"app/kustomization.yaml: {field}: {caught.value.reference} is a remote"
    )
    assert "allowRemoteBases: true" in str(caught.value)
    # allowed, kustomize fetches them itself
    kustomization.check(root / "app", root=root, allow_remote=True)


def test_a_remote_reference_in_a_local_base_is_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "overlays/prod/kustomization.yaml": "resources:\n- ../../base\n- ns.yaml\n",
            "overlays/prod/ns.yaml": "a: 1\n",
            "base/Kustomization": "resources:\n- https://example.com/x.yaml\n",
        },
    )
    with pytest.raises(kustomization.RemoteReference, match=r"^base/Kustomization: resources\[0\]"):
        kustomization.check(root / "overlays/prod", root=root, allow_remote=False)


@pytest.mark.parametrize("reference", ["../../outside", "/etc", "../../outside/cm.yaml"])
def test_a_path_leaving_the_artifact_is_refused(tmp_path: Path, reference: str) -> None:
    root = _tree(tmp_path / "artifact", {"app/kustomization.yaml": f"resources:\n- {reference}\n"})
    (tmp_path / "outside").mkdir()
    with pytest.raises(kustomization.RemoteReference, match="leaves the artifact"):
        kustomization.check(root / "app", root=root, allow_remote=True)
    # CI builds a working tree: paths may go anywhere there
    kustomization.check(root / "app", root=None, allow_remote=True)


def test_local_files_inline_patches_and_cycles_pass(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "a/kustomization.yaml": (
                "resources: [../b, cm.yaml]\n"
                "patches:\n- patch: |-\n    - op: add\n      path: /x\n      value: https://example.com\n"
                "patchesStrategicMerge:\n- |-\n  apiVersion: v1\n  kind: ConfigMap\n"
                "configMapGenerator:\n- name: g\n  files: [k=data.txt]\n  envs: [env.txt]\n"
            ),
            "a/cm.yaml": "a: 1\n",
            "b/kustomization.yaml": "resources: [../a]\n",  # a cycle: kustomize's error to give
        },
    )
    kustomization.check(root / "a", root=root, allow_remote=False)


def test_a_bomb_in_a_kustomization_is_refused_before_kustomize_runs(tmp_path: Path) -> None:
    bomb = (BOMBS / "aliases.yaml").read_text().replace("data:", "commonAnnotations:")
    root = _tree(tmp_path, {"base/kustomization.yaml": bomb, "kustomization.yaml": "resources: [base]\n"})
    with pytest.raises(LimitExceeded, match=r"^base/kustomization\.yaml:2: document 1: aliases would expand"):
        kustomization.check(root, root=root, allow_remote=True)
