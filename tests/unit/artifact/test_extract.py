"""Safe extraction: what is refused, what the error names, and that nothing is left behind."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest

from lockgate.artifact import extract
from lockgate.errors import ExitCode, UsageError, VerificationError


def _member(
    name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"x", link: str = ""
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data


def _layer(*members: tuple[tarfile.TarInfo, bytes]) -> io.BytesIO:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return io.BytesIO(gzip.compress(raw.getvalue()))


def test_extracts_files_and_dirs_with_normal_modes(tmp_path: Path) -> None:
    exe, _ = _member("bin/run.sh", data=b"#!/bin/sh\n")
    exe.mode = 0o4777
    layer = _layer(
        _member(".", tarfile.DIRTYPE),
        _member("bin", tarfile.DIRTYPE),
        (exe, b"#!/bin/sh\n"),
        _member("a.yaml", data=b"kind: X\n"),
    )
    done = extract.extract(layer, tmp_path / "out")
    assert (done.files, done.total_bytes) == (2, 18)
    assert (tmp_path / "out" / "a.yaml").read_text() == "kind: X\n"
    assert (tmp_path / "out" / "bin" / "run.sh").stat().st_mode & 0o7777 == 0o755
    assert (tmp_path / "out" / "a.yaml").stat().st_mode & 0o7777 == 0o644
    # the directory itself, as `flux pull` makes it (not mkdtemp's 0700)
    assert (tmp_path / "out").stat().st_mode & 0o7777 == 0o755


@pytest.mark.parametrize(
    ("member", "says"),
    [
        (_member("/etc/passwd"), "absolute path"),
        (_member("../escape.yaml"), r"contains '\.\.'"),
        (_member("a/../../escape.yaml"), r"contains '\.\.'"),
        (_member("link", tarfile.SYMTYPE, link="/etc/passwd"), "symbolic link"),
        (_member("hard", tarfile.LNKTYPE, link="a.yaml"), "hard link"),
        (_member("dev", tarfile.CHRTYPE), "device file"),
        (_member("blk", tarfile.BLKTYPE), "device file"),
        (_member("pipe", tarfile.FIFOTYPE), "fifo"),
        (_member("a.yaml"), "appears twice"),
    ],
    ids=[
        "absolute",
        "dotdot",
        "dotdot-nested",
        "symlink",
        "hardlink",
        "chardev",
        "blockdev",
        "fifo",
        "duplicate",
    ],
)
def test_refuses_and_leaves_nothing(tmp_path: Path, member: tuple[tarfile.TarInfo, bytes], says: str) -> None:
    layer = _layer(_member("a.yaml"), _member("dir", tarfile.DIRTYPE), member)
    with pytest.raises(extract.UnsafeArtifactError, match=says) as caught:
        extract.extract(layer, tmp_path / "out")
    assert caught.value.entry == member[0].name
    assert member[0].name in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_limits_on_count_size_and_ratio(tmp_path: Path) -> None:
    many = _layer(*(_member(f"f{i}.yaml") for i in range(5)))
    with pytest.raises(extract.LimitExceeded, match=r"f3\.yaml.*more than 3 entries") as caught:
        extract.extract(many, tmp_path / "a", extract.Limits(max_files=3))
    # a limit is not a verification failure (exit 4): the artifact could not be read within it
    assert caught.value.exit_code == ExitCode.RENDER
    big = _layer(_member("big.yaml", data=b"y" * 5000))
    with pytest.raises(extract.LimitExceeded, match=r"big\.yaml.*exceeds 4000 bytes"):
        extract.extract(big, tmp_path / "b", extract.Limits(max_total_bytes=4000))
    bomb = _layer(_member("bomb.yaml", data=b"\0" * (4 << 20)))
    with pytest.raises(extract.LimitExceeded, match=r"bomb\.yaml.*compression ratio above 50:1"):
        extract.extract(bomb, tmp_path / "c", extract.Limits(max_ratio=50, ratio_floor=1 << 20))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "members",
    [
        pytest.param([_member(f"d{i}", tarfile.DIRTYPE) for i in range(5)], id="listed-directories"),
        # one file whose path makes four directories nobody listed
        pytest.param([_member("a/b/c/d/f.yaml")], id="implied-directories"),
    ],
)
def test_directories_count_as_entries(tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> None:
    with pytest.raises(extract.LimitExceeded, match=r"more than 3 entries, files and directories \(limit\)"):
        extract.extract(_layer(*members), tmp_path / "out", extract.Limits(max_files=3))
    assert list(tmp_path.iterdir()) == []
    done = extract.extract(_layer(*members), tmp_path / "ok", extract.Limits(max_files=5))
    assert done.files == sum(1 for info, _ in members if info.isreg())


def test_corrupt_layer_is_a_verification_error(tmp_path: Path) -> None:
    with pytest.raises(VerificationError, match="not a valid tar\\+gzip"):
        extract.extract(io.BytesIO(b"\x1f\x8bnot really gzip"), tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_refuses_a_non_empty_target(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep").write_text("mine")
    with pytest.raises(UsageError, match="not an empty directory"):
        extract.extract(_layer(_member("a.yaml")), tmp_path / "out")
    assert (tmp_path / "out" / "keep").read_text() == "mine"


class _Watched(io.BytesIO):
    """Records the largest single read, to check how far ahead of the ratio check reading runs."""

    largest = 0

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        n = super().readinto(buffer)
        self.largest = max(self.largest, n)
        return n

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.largest = max(self.largest, len(data))
        return data


def test_the_compressed_side_is_read_a_record_at_a_time(tmp_path: Path) -> None:
    # the ratio limit compares with the compressed bytes read so far: reading far ahead would loosen it
    raw = _layer(_member("a.yaml", data=bytes(range(256)) * 4096)).getvalue()
    watched = _Watched(raw)
    extract.extract(watched, tmp_path / "out")
    assert 0 < watched.largest <= tarfile.RECORDSIZE


UMASKS = {"usual 022": 0o022, "strict 077": 0o077, "none 000": 0o000, "odd 027": 0o027}


@pytest.mark.parametrize("umask", UMASKS.values(), ids=UMASKS.keys())
def test_modes_are_flux_pulls_less_the_umask(tmp_path: Path, umask: int) -> None:
    """0755 for directories (listed or implicit) and executables, 0644 for other files, less the
    umask, as `flux pull` creates them; the output directory itself too (not mkdtemp's 0700)."""
    exe, _ = _member("apps/bin/run.sh", data=b"#!/bin/sh\n")
    exe.mode = 0o755
    layer = _layer(
        _member("apps/a.yaml", data=b"kind: X\n"),  # apps/ made implicitly, before its entry
        _member("apps", tarfile.DIRTYPE),
        _member("explicit", tarfile.DIRTYPE),
        (exe, b"#!/bin/sh\n"),
    )
    old = os.umask(umask)
    try:
        extract.extract(layer, tmp_path / "out")
    finally:
        os.umask(old)
    out = tmp_path / "out"
    modes = {p.relative_to(out).as_posix(): p.stat().st_mode & 0o7777 for p in out.rglob("*")}
    assert modes == {
        "apps": 0o755 & ~umask,
        "apps/a.yaml": 0o644 & ~umask,
        "apps/bin": 0o755 & ~umask,  # a parent without an entry of its own
        "apps/bin/run.sh": 0o755 & ~umask,
        "explicit": 0o755 & ~umask,
    }
    assert out.stat().st_mode & 0o7777 == 0o755 & ~umask


def test_a_file_then_a_path_through_it_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    """The second needs a directory where the first is a file."""
    layer = _layer(_member("a"), _member("a/b"))
    with pytest.raises(VerificationError, match="nothing was written"):
        extract.extract(layer, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_a_member_cut_short_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info, data = _member("n" * 120 + ".yaml", data=b"kind: X\n" * 500)  # a PAX header first
        tar.addfile(info, io.BytesIO(data))
    cut = raw.getvalue()[: 3 * tarfile.BLOCKSIZE + 1000]  # inside the member's data
    with pytest.raises(VerificationError, match="nothing was written"):
        extract.extract(io.BytesIO(gzip.compress(cut)), tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_a_long_name_member_is_read_exactly(tmp_path: Path) -> None:
    name = "d/" + "n" * 120 + ".yaml"
    layer = _layer(_member(name, data=b"a: 1\n" * 300), _member("after.yaml", data=b"b: 2\n"))
    extract.extract(layer, tmp_path / "out")
    assert (tmp_path / "out" / name).read_bytes() == b"a: 1\n" * 300
    assert (tmp_path / "out" / "after.yaml").read_bytes() == b"b: 2\n"
