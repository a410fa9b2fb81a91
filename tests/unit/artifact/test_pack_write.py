"""The hand-assembled tar stream: byte for byte what tarfile writes, read once, checked as packed."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from lockgate.artifact import gz, pack

HEADER_CASES = {
    "plain file": ("deploy.yaml", 0o644, 17, False),
    "empty file": ("empty.yaml", 0o644, 0, False),
    "executable": ("bin/run.sh", 0o755, 9, False),
    "directory": ("apps/web", 0o755, 0, True),
    "name of exactly 100": ("n" * 100, 0o644, 1, False),
    "directory of 99 plus slash": ("d" * 99, 0o755, 0, True),
    "name past 100 (pax)": ("n" * 101, 0o644, 1, False),
    "directory past 100 with slash (pax)": ("d" * 100, 0o755, 0, True),
    "non-ascii name (pax)": ("ünï/cødé.yaml", 0o644, 3, False),
    "largest ustar size": ("big", 0o644, 8**11 - 1, False),
    "size past ustar (pax)": ("huge", 0o644, 8**11, False),
}


def _tarfile_header(name: str, mode: int, size: int, is_dir: bool) -> bytes:
    info = tarfile.TarInfo(name)
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = mode
    if is_dir:
        info.type = tarfile.DIRTYPE
    else:
        info.size = size
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


@pytest.mark.parametrize("case", HEADER_CASES.values(), ids=HEADER_CASES.keys())
def test_headers_are_the_ones_tarfile_writes(case: tuple[str, int, int, bool]) -> None:
    name, mode, size, is_dir = case
    entry = pack.Entry(name, Path("/unused"), is_dir, mode)
    assert pack.tar_header(entry, size) == _tarfile_header(name, mode, size, is_dir)


def _reference_digest(entries: list[pack.Entry]) -> str:
    """The layer as tarfile.addfile wrote it before the tar stream was assembled by hand, compressed
    in one piece by lockgate's gzip (its output does not depend on how the tar is handed to it)."""
    plain = io.BytesIO()
    with tarfile.open(fileobj=plain, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8") as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.name)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = entry.mode
            if entry.is_dir:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
                continue
            data = entry.source.read_bytes()
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    raw = io.BytesIO()
    writer = gz.GzipWriter(raw.write)
    writer.write(plain.getvalue())
    writer.close()
    assert gzip.decompress(raw.getvalue()) == plain.getvalue()
    return "sha256:" + hashlib.sha256(raw.getvalue()).hexdigest()


def _tree(root: Path) -> Path:
    (root / "apps" / "ünï").mkdir(parents=True)
    (root / "apps" / "ünï" / "x.yaml").write_text("a: 1\n")
    (root / ("l" * 120)).mkdir()
    (root / ("l" * 120) / "deep.yaml").write_text("b: 2\n" * 300)
    (root / "empty.yaml").write_text("")
    (root / "blob.bin").write_bytes(bytes(range(256)) * 4099)
    run = root / "run.sh"
    run.write_text("#!/bin/sh\n")
    run.chmod(0o755)
    return root


@pytest.mark.parametrize("inline_limit", [pack.INLINE_LIMIT, 100], ids=["read whole", "streamed"])
def test_layer_bytes_match_tarfile(tmp_path: Path, inline_limit: int) -> None:
    root = _tree(tmp_path / "src")
    entries = pack.collect(root)
    layer = pack.pack(root, tmp_path / "out.tgz", entries=entries, inline_limit=inline_limit)
    assert layer.digest == _reference_digest(entries)
    assert layer.size == (tmp_path / "out.tgz").stat().st_size


def test_check_sees_each_file_once_with_the_packed_bytes(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    seen: dict[str, bytes | None] = {}

    def check(entry: pack.Entry, data: bytes | None) -> None:
        assert entry.name not in seen
        seen[entry.name] = data

    pack.pack(root, tmp_path / "out.tgz", check=check)
    files = [e for e in pack.collect(root) if not e.is_dir]
    assert sorted(seen) == sorted(e.name for e in files)
    assert all(seen[e.name] == e.source.read_bytes() for e in files)


def test_a_failing_check_leaves_no_file(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")

    def refuse(entry: pack.Entry, data: bytes | None) -> None:
        if entry.name == "empty.yaml":
            raise ValueError("no")

    with pytest.raises(ValueError):
        pack.pack(root, tmp_path / "out.tgz", check=refuse)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_collect_records_stamps_for_files(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    for entry in pack.collect(root):
        if entry.is_dir:
            assert entry.stamp == ()
        else:
            st = entry.source.stat()
            assert entry.stamp == (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
