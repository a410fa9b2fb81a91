"""Progress: a live line on a terminal's stderr, nothing at all elsewhere or with ``--quiet``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from lockgate import progress
from lockgate.artifact import extract, pack


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _tree(root: Path) -> Path:
    for i in range(30):
        (root / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        (root / f"d{i % 3}" / f"f{i}.yaml").write_text("a: 1\n" * 2000)
    return root


def test_packing_and_extracting_draw_on_a_terminal_and_erase_the_line(tmp_path: Path) -> None:
    terminal = Terminal()
    with progress.shown(stream=terminal, interval=0.0):  # every step drawn, so the last one is seen
        layer = pack.pack(_tree(tmp_path / "tree"), tmp_path / "layer.tgz")
        with open(layer.path, "rb") as stream:
            extract.extract(stream, tmp_path / "out")
    drawn = terminal.getvalue()
    assert "\r\x1b[Kpacking 0.3/0.3 MB (100%)" in drawn
    assert "\r\x1b[Kextracting 30 files" in drawn
    assert drawn.endswith("\r\x1b[K")  # erased: what the command prints next stands alone


SILENT = {
    "not a terminal": (io.StringIO, False),
    "terminal with --quiet": (Terminal, True),
}


@pytest.mark.parametrize(("stream", "quiet"), SILENT.values(), ids=SILENT.keys())
def test_nothing_is_written_when_not_a_terminal_or_quiet(
    tmp_path: Path, stream: type[io.StringIO], quiet: bool
) -> None:
    out = stream()
    with progress.shown(quiet=quiet, stream=out) as reporter:
        assert not reporter.enabled
        pack.pack(_tree(tmp_path / "tree"), tmp_path / "layer.tgz")
    assert out.getvalue() == ""


def test_outside_a_command_progress_is_silent() -> None:
    task = progress.current().task("anything", total=10)
    task.advance(10)
    task.finish()
    assert not progress.current().enabled and task.done == 10


RENDERED = {
    "bytes with a total": (("uploading", 12_300_000, 50_000_000, "B"), "uploading 12.3/50.0 MB (24%)"),
    "bytes without": (("downloading", 1_000_000, None, "B"), "downloading 1.0 MB"),
    "files": (("extracting", 1234, None, "files"), "extracting 1234 files"),
}


@pytest.mark.parametrize(("args", "line"), RENDERED.values(), ids=RENDERED.keys())
def test_the_line(args: tuple[str, int, int | None, str], line: str) -> None:
    assert progress.render(*args) == line


def test_a_rewound_upload_counts_again_from_where_it_rewound() -> None:
    task = progress.Progress().task("uploading", total=6)
    stream = progress.Reading(io.BytesIO(b"abcdef"), task)
    stream.read(4)
    assert task.done == 4
    stream.seek(0)
    assert task.done == 0 and stream.read() == b"abcdef" and task.done == 6
