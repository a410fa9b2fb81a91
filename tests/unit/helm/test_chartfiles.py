"""A chart's files with its subcharts, directories and packaged archives alike."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from lockgate.errors import RenderError
from lockgate.helm import chartfiles


def _tgz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_directory_and_archive_subcharts_are_read_and_named(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "Chart.yaml").write_text("name: app\n")
    (tmp_path / "templates" / "cm.yaml").write_text("a: 1\n")
    (tmp_path / "crds").mkdir()
    (tmp_path / "crds" / "w.yaml").write_text("kind: CustomResourceDefinition\n")
    sub = tmp_path / "charts" / "cache"
    (sub / "templates").mkdir(parents=True)
    (sub / "Chart.yaml").write_text("name: cache\n")
    (sub / "templates" / "x.yaml").write_text("b: 2\n")
    inner = _tgz({"inner/Chart.yaml": b"name: inner\n", "inner/templates/i.yaml": b"i: 1\n"})
    (tmp_path / "charts" / "db-1.0.0.tgz").write_bytes(
        _tgz(
            {
                "db/Chart.yaml": b"name: db\n",
                "db/templates/_h.tpl": b'{{ define "x" }}{{ end }}',
                "db/README.md": b"not read",
                "db/charts/inner-0.1.0.tgz": inner,
            }
        )
    )
    found = {(f.shown, f.chart) for f in chartfiles.files(tmp_path)}
    assert found == {
        ("templates/cm.yaml", ""),
        ("crds/w.yaml", ""),
        ("charts/cache/templates/x.yaml", "charts/cache"),
        ("charts/db-1.0.0.tgz:db/templates/_h.tpl", "charts/db-1.0.0.tgz:db"),
        (
            "charts/db-1.0.0.tgz:db/charts/inner-0.1.0.tgz:inner/templates/i.yaml",
            "charts/db-1.0.0.tgz:db/charts/inner-0.1.0.tgz:inner",
        ),
    }


def test_a_file_over_helm_s_bound_is_refused(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "big.yaml").write_bytes(b"a" * (chartfiles.MAX_FILE_BYTES + 1))
    with pytest.raises(RenderError, match=r"big.yaml: 5,242,881 bytes is over the 5,242,880"):
        chartfiles.files(tmp_path)


def test_a_broken_archive_is_named(tmp_path: Path) -> None:
    (tmp_path / "charts").mkdir()
    (tmp_path / "charts" / "db.tgz").write_bytes(b"not gzip")
    with pytest.raises(RenderError, match=r"charts/db.tgz: not a readable chart archive"):
        chartfiles.files(tmp_path)
