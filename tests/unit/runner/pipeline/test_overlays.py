"""The overlay written into the artifact's temporary copy: the kustomization kustomize will read,
edited where it is or generated for plain manifests; components checked against the artifact."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lockgate.bounded import LimitExceeded
from lockgate.errors import RenderError
from runner.pipeline import overlays
from runner.plan.overlay import Overlay

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_plain_manifests_get_a_kustomization_listing_them_as_flux_generates_it(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "app/b.yaml": CM,
            "app/a.yml": CM,
            "app/sub/c.yaml": CM,
            "app/built/kustomization.yaml": "resources: [d.yaml]\n",
            "app/built/d.yaml": CM,
            "app/README.md": "# not a manifest\n",
            "app/.hidden/e.yaml": CM,
            "app/.f.yaml": CM,
        },
    )
    overlays.write(tmp_path / "app", tmp_path, Overlay(name_prefix="x-"))
    written = yaml.safe_load((tmp_path / "app" / "kustomization.yaml").read_text())
    assert written == {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["./a.yml", "./b.yaml", "./built", "./sub/c.yaml"],
        "namePrefix": "x-",
    }


def test_a_manifest_over_the_parsing_bounds_is_refused_before_kustomize_reads_it(tmp_path: Path) -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(20)
    )
    _tree(tmp_path, {"bomb.yaml": bomb})
    with pytest.raises(LimitExceeded, match=r"^bomb\.yaml"):
        overlays.write(tmp_path, tmp_path, Overlay(name_prefix="x-"))


def test_an_existing_kustomization_is_edited_in_place_whatever_its_name(tmp_path: Path) -> None:
    _tree(tmp_path, {"app/Kustomization": "resources: [a.yaml]\nnamePrefix: own-\n", "app/a.yaml": CM})
    overlays.write(tmp_path / "app", tmp_path, Overlay(name_suffix="-eu"))
    assert not (tmp_path / "app" / "kustomization.yaml").exists()
    assert yaml.safe_load((tmp_path / "app" / "Kustomization").read_text()) == {
        "resources": ["a.yaml"],
        "namePrefix": "own-",
        "nameSuffix": "-eu",
    }


def test_components_must_be_directories_inside_the_artifact(tmp_path: Path) -> None:
    _tree(tmp_path, {"app/kustomization.yaml": "resources: []\n", "components/tls/kustomization.yaml": ""})
    app = tmp_path / "app"
    with pytest.raises(RenderError, match=r"^spec.components\[1\]: ../.. leaves the artifact"):
        overlays.write(app, tmp_path, Overlay(components=("../components/tls", "../..")))
    with pytest.raises(
        RenderError, match=r"^spec.components\[0\]: ../absent: the artifact has no such directory"
    ):
        overlays.write(app, tmp_path, Overlay(components=("../absent",)))
    overlays.write(
        app, tmp_path, Overlay(components=("../absent", "../components/tls"), ignore_missing_components=True)
    )
    assert yaml.safe_load((app / "kustomization.yaml").read_text())["components"] == ["../components/tls"]
