"""Choosing a tag by semver range, as Flux's OCIRepository does; rendering refuses to leave the artifact."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate import semver
from lockgate.errors import RenderError, UsageError
from runner.pipeline import source

TAGS = ["latest", "1.0.0", "v1.2.0", "1.10.0", "2.0.0-rc.1", "1.3", "sha256-abc.sig"]


@pytest.mark.parametrize(
    ("range_", "chosen"),
    [(">=1.0.0 <2.0.0", "1.10.0"), ("~1.2", "v1.2.0"), ("*", "1.10.0"), (">=2.0.0-0", "2.0.0-rc.1")],
)
def test_highest_in_range(range_: str, chosen: str) -> None:
    assert semver.highest_in_range(semver.Constraints.parse(range_), TAGS) == chosen


def test_no_matching_tag_elects_nothing() -> None:
    assert semver.highest_in_range(semver.Constraints.parse(">=3.0.0"), TAGS) is None


def test_path_must_stay_inside_the_artifact(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    with pytest.raises(UsageError, match="leaves the artifact"):
        source.render_objects(tmp_path / "a", "../")
    with pytest.raises(RenderError, match="no such directory"):
        source.render_objects(tmp_path / "a", "missing")


def test_kustomization_without_kustomize_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("LOCKGATE_KUSTOMIZE", raising=False)
    with pytest.raises(
        RenderError,
        match="needs kustomize, which is not on PATH: install kustomize or set LOCKGATE_KUSTOMIZE",
    ):
        source.render_objects(tmp_path, None)
