"""Reproducible packing: the same tree gives the same bytes whatever the umask, times and modes."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest

from lockgate.artifact import extract, pack
from lockgate.artifact.limits import Limits
from lockgate.errors import UsageError


def _tree(root: Path, *, umask: int, mtime: int) -> Path:
    old = os.umask(umask)
    try:
        (root / "apps" / "web").mkdir(parents=True)
        (root / "apps" / "web" / "deploy.yaml").write_text("kind: Deployment\n")
        (root / "apps" / "web" / "run.sh").write_text("#!/bin/sh\n")
        (root / "apps" / "web" / "run.sh").chmod(0o777 & ~umask)
        (root / "ns.yaml").write_text("kind: Namespace\n")
        (root / "logo.png").write_bytes(b"\x89PNG")
        (root / ".git").mkdir()
        (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    finally:
        os.umask(old)
    for path in root.rglob("*"):
        os.utime(path, (mtime, mtime))
    return root


def _layer(root: Path, tmp: Path, options: pack.PackOptions | None = None) -> pack.Layer:
    return pack.pack(root, tmp / f"out-{os.urandom(4).hex()}.tgz", options)


def test_same_content_same_digest_across_umask_and_times(tmp_path: Path) -> None:
    a = _tree(tmp_path / "a", umask=0o022, mtime=1_000_000)
    b = _tree(tmp_path / "b", umask=0o077, mtime=1_700_000_000)
    first, second = _layer(a, tmp_path), _layer(b, tmp_path)
    assert first.digest == second.digest
    assert first.path.read_bytes() == second.path.read_bytes()


def test_content_change_changes_digest(tmp_path: Path) -> None:
    root = _tree(tmp_path / "a", umask=0o022, mtime=0)
    before = _layer(root, tmp_path).digest
    (root / "ns.yaml").write_text("kind: Namespace # changed\n")
    assert _layer(root, tmp_path).digest != before


def test_headers_are_normalised(tmp_path: Path) -> None:
    layer = _layer(_tree(tmp_path / "a", umask=0o077, mtime=123456), tmp_path)
    raw = layer.path.read_bytes()
    assert raw[4:8] == b"\x00\x00\x00\x00", "gzip header mtime must be 0"
    assert raw[3] & 0x08 == 0, "gzip header must carry no file name"
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(raw))) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == [
        "apps",
        "apps/web",
        "apps/web/deploy.yaml",
        "apps/web/run.sh",
        "ns.yaml",
    ]
    modes = {m.name: m.mode for m in members}
    assert modes == {
        "apps": 0o755,
        "apps/web": 0o755,
        "apps/web/deploy.yaml": 0o644,
        "apps/web/run.sh": 0o755,
        "ns.yaml": 0o644,
    }
    assert {(m.uid, m.gid, m.uname, m.gname, m.mtime) for m in members} == {(0, 0, "", "", 0)}


def test_single_file_is_packed_under_its_name(tmp_path: Path) -> None:
    (tmp_path / "all.yaml").write_text("kind: List\n")
    layer = _layer(tmp_path / "all.yaml", tmp_path)
    assert [e.name for e in layer.entries] == ["all.yaml"]


def test_sourceignore_and_ignore_paths(tmp_path: Path) -> None:
    root = _tree(tmp_path / "a", umask=0o022, mtime=0)
    (root / "apps" / ".sourceignore").write_text("*.sh\n")
    (root / "notes.md").write_text("x")
    names = [e.name for e in pack.collect(root, pack.PackOptions(ignore_paths=("*.md",)))]
    assert "apps/web/run.sh" not in names and "notes.md" not in names
    assert "apps/.sourceignore" in names and "apps/web/deploy.yaml" in names


def test_symlink_is_refused_with_its_path(tmp_path: Path) -> None:
    root = _tree(tmp_path / "a", umask=0o022, mtime=0)
    (root / "link.yaml").symlink_to("ns.yaml")
    with pytest.raises(
        UsageError, match=r"link\.yaml: is a symbolic link \(to ns\.yaml\).*--resolve-symlinks"
    ):
        pack.collect(root)


def test_resolve_symlinks_copies_targets_inside_the_tree(tmp_path: Path) -> None:
    root = _tree(tmp_path / "a", umask=0o022, mtime=0)
    (root / "link.yaml").symlink_to("ns.yaml")
    (root / "linkdir").symlink_to("apps")
    layer = _layer(root, tmp_path, pack.PackOptions(resolve_symlinks=True))
    names = [e.name for e in layer.entries]
    assert "link.yaml" in names and "linkdir/web/deploy.yaml" in names
    with tarfile.open(layer.path) as tar:
        assert tar.getmember("link.yaml").isreg()
        assert tar.extractfile("link.yaml").read() == b"kind: Namespace\n"  # type: ignore[union-attr]


def test_resolve_symlinks_refuses_targets_outside(tmp_path: Path) -> None:
    root = _tree(tmp_path / "a", umask=0o022, mtime=0)
    (tmp_path / "outside.yaml").write_text("x")
    (root / "escape.yaml").symlink_to(tmp_path / "outside.yaml")
    with pytest.raises(UsageError, match="outside the tree"):
        pack.collect(root, pack.PackOptions(resolve_symlinks=True))


def test_ignored_symlink_is_not_an_error(tmp_path: Path) -> None:
    root = _tree(tmp_path / "a", umask=0o022, mtime=0)
    (root / "link.png").symlink_to("/etc/passwd")
    assert "link.png" not in [e.name for e in pack.collect(root)]


def test_fifo_is_refused(tmp_path: Path) -> None:
    root = _tree(tmp_path / "a", umask=0o022, mtime=0)
    os.mkfifo(root / "pipe")
    with pytest.raises(UsageError, match="pipe: is a named pipe"):
        pack.collect(root)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file or directory"):
        pack.collect(tmp_path / "nope")


@pytest.mark.parametrize("name", ["back\\slash.yaml", "dir\\name"])
def test_a_name_every_extractor_refuses_is_refused(tmp_path: Path, name: str) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "ok.yaml").write_text("a: 1\n")
    target = root / name
    if name.endswith(".yaml"):
        target.write_text("a: 1\n")
    else:
        target.mkdir()
    with pytest.raises(UsageError, match=r"the name holds a backslash or a NUL, and every runner refuses"):
        pack.collect(root)
    # ignored (a backslash escapes in .gitignore syntax: match it by a wildcard), it is no concern
    ignored = pack.PackOptions(ignore_paths=(name.split("\\")[0] + "*",))
    assert [e.name for e in pack.collect(root, ignored)] == ["ok.yaml"]


def test_the_ratio_probe_sees_a_compressible_start_a_whole_layer_hides(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.yaml").write_bytes(b"\0" * (8 << 20))  # compresses about a thousandfold
    (root / "b.bin").write_bytes(os.urandom(8 << 20))  # does not compress at all
    layer = pack.pack(root, tmp_path / "plain.tgz")
    assert (16 << 20) / layer.size < 3  # the whole layer looks harmless
    limits = Limits(max_ratio=50, ratio_floor=1 << 20)
    with pytest.raises(
        pack.RatioTooHigh, match=r"compresses [\d,]+:1, over the 50:1 runners extract"
    ) as caught:
        pack.pack(root, tmp_path / "refused.tgz", limits=limits)
    assert "pass a higher --max-ratio here" in str(caught.value)
    assert not (tmp_path / "refused.tgz").exists()
    # and so does the extractor with the same limits
    with open(layer.path, "rb") as stream, pytest.raises(extract.LimitExceeded, match="compression ratio"):
        extract.extract(stream, tmp_path / "out", limits)
    relaxed = pack.pack(root, tmp_path / "relaxed.tgz", limits=Limits(max_ratio=5000, ratio_floor=1 << 20))
    assert relaxed.digest == layer.digest
