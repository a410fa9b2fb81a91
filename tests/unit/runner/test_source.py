"""Choosing a tag by semver range, as Flux's OCIRepository does; rendering refuses to leave the artifact."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.errors import RenderError, ResolveError, UsageError
from runner import source

TAGS = ["latest", "1.0.0", "v1.2.0", "1.10.0", "2.0.0-rc.1", "1.3", "sha256-abc.sig"]


@pytest.mark.parametrize(
    ("range_", "chosen"),
    [(">=1.0.0 <2.0.0", "1.10.0"), ("~1.2", "v1.2.0"), ("*", "1.10.0"), (">=2.0.0-0", "2.0.0-rc.1")],
)
def test_latest_in_range(range_: str, chosen: str) -> None:
    assert source.latest_in_range(range_, TAGS, where="oci://r/x") == chosen


def test_no_matching_tag_is_a_resolve_error() -> None:
    with pytest.raises(ResolveError, match=r"no tag matches the semver range '>=3\.0\.0'"):
        source.latest_in_range(">=3.0.0", TAGS, where="oci://r/x")


def test_path_must_stay_inside_the_artifact(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    with pytest.raises(UsageError, match="leaves the artifact"):
        source.render(tmp_path / "a", "../")
    with pytest.raises(RenderError, match="no such directory"):
        source.render(tmp_path / "a", "missing")


def test_kustomization_without_kustomize_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("LOCKGATE_KUSTOMIZE", raising=False)
    with pytest.raises(
        RenderError, match="needs kustomize: install kustomize on PATH or set LOCKGATE_KUSTOMIZE"
    ):
        source.render(tmp_path, None)
