"""The pack's check shared with a forked helper: every file once, same layer, same first error."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from lockgate.artifact import pack, sharedcheck
from lockgate.errors import UsageError


def _tree(root: Path, files: int = 60) -> list[pack.Entry]:
    for i in range(files):
        directory = root / f"d{i % 4}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"f{i:03d}.yaml").write_text(f"name: f{i}\n" * (200 + i))
    return pack.collect(root)


class Logged:
    """A check that appends ``pid name`` to a file (O_APPEND: safe from both processes)."""

    def __init__(self, log: Path, bad: tuple[str, ...] = ()) -> None:
        self.log, self.bad = log, bad

    def __call__(self, entry: pack.Entry, data: bytes | None) -> None:
        if data is None:
            data = entry.source.read_bytes()
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{os.getpid()} {entry.name}\n".encode())
        finally:
            os.close(fd)
        if entry.name in self.bad:
            raise UsageError(f"{entry.name}: rejected ({len(data)} bytes)")

    def seen(self) -> list[tuple[int, str]]:
        return [(int(p), n) for p, n in (line.split(" ", 1) for line in self.log.read_text().splitlines())]


def _write(entries: list[pack.Entry], check: pack.Check, *, force: bool) -> str:
    with sharedcheck.shared(check, entries, force=force) as checking:
        digest, _ = pack.write(entries, io.BytesIO(), check=checking)
    return digest


def test_every_file_is_checked_exactly_once_by_one_of_the_two(tmp_path: Path) -> None:
    entries = _tree(tmp_path / "tree")
    check = Logged(tmp_path / "log")
    _write(entries, check, force=True)
    seen = check.seen()
    files = sorted(e.name for e in entries if not e.is_dir)
    assert sorted(name for _, name in seen) == files
    assert len({pid for pid, _ in seen}) in (1, 2)
    # the parent checks a prefix in archive order and the helper the rest: they meet once
    parent = [name for pid, name in seen if pid == os.getpid()]
    assert parent == files[: len(parent)]


def test_the_layer_does_not_depend_on_the_helper(tmp_path: Path) -> None:
    entries = _tree(tmp_path / "tree")
    shared = _write(entries, Logged(tmp_path / "a"), force=True)
    alone = _write(entries, Logged(tmp_path / "b"), force=False)
    assert shared == alone


BAD = {
    "first file": ("d0/f000.yaml",),
    "last file": ("d3/f059.yaml",),
    "two bad: the first in archive order wins": ("d1/f001.yaml", "d3/f055.yaml"),
}


@pytest.mark.parametrize("bad", BAD.values(), ids=BAD.keys())
def test_a_rejected_file_fails_as_without_the_helper(tmp_path: Path, bad: tuple[str, ...]) -> None:
    entries = _tree(tmp_path / "tree")
    with pytest.raises(UsageError) as alone:
        _write(entries, Logged(tmp_path / "a", bad), force=False)
    helpers: list[sharedcheck.SharedCheck] = []
    with (
        pytest.raises(UsageError) as shared,
        sharedcheck.shared(Logged(tmp_path / "b", bad), entries, force=True) as checking,
    ):
        assert isinstance(checking, sharedcheck.SharedCheck)
        helpers.append(checking)
        pack.write(entries, io.BytesIO(), check=checking)
    assert shared.value.message == alone.value.message
    [helper] = helpers
    assert helper.forked > 0  # a real helper process ran
    with pytest.raises(ChildProcessError):
        os.waitpid(helper.forked, os.WNOHANG)  # and was reaped


def test_small_trees_and_no_check_use_no_helper(tmp_path: Path) -> None:
    entries = _tree(tmp_path / "tree", files=3)
    check = Logged(tmp_path / "log")
    with sharedcheck.shared(check, entries) as checking:
        assert checking is check
    with sharedcheck.shared(None, entries, force=True) as nothing:
        assert nothing is None


class Dying(Logged):
    """Kills the helper on the first file it checks."""

    def __init__(self, log: Path) -> None:
        super().__init__(log)
        self.parent = os.getpid()

    def __call__(self, entry: pack.Entry, data: bytes | None) -> None:
        if os.getpid() != self.parent:
            os.kill(os.getpid(), 9)
        super().__call__(entry, data)


def test_a_helper_that_dies_leaves_nothing_unchecked(tmp_path: Path) -> None:
    entries = _tree(tmp_path / "tree")
    check = Dying(tmp_path / "log")
    _write(entries, check, force=True)
    assert sorted(name for _, name in check.seen()) == sorted(e.name for e in entries if not e.is_dir)
