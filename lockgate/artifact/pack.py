"""Reproducible packing: a directory (or one file) to a tar+gzip layer with a stable digest.

``collect`` decides what goes in (ignore rules, symlink policy, sorted order) without
writing anything; ``write`` streams those entries through tar and gzip into a file while
hashing, so memory stays flat however large the tree. Every header is normalised: uid/gid
0, empty owner names, mtime 0, mode 0644 (0755 for directories and for files git would
record as executable), gzip header mtime 0 and no file name. Same content, same digest,
whatever the umask, the checkout time or the machine: the deflate is lockgate's own (``gz``,
ISA-L bundled in a pinned wheel), not the system's zlib.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import os
import stat
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from lockgate import progress
from lockgate.artifact import gz, ignore
from lockgate.artifact.limits import Limits
from lockgate.errors import UsageError

#: fixed so the layer digest does not depend on a library default (ISA-L's levels are 0-3)
GZIP_LEVEL = gz.LEVEL


@dataclass(frozen=True)
class Entry:
    """One tar member: ``name`` inside the artifact, ``source`` on disk (a symlink's target, if resolved)."""

    name: str
    source: Path
    is_dir: bool
    mode: int
    #: the source's (size, mtime_ns, ctime_ns, inode, device) when collected; keys the build cache
    stamp: tuple[int, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class PackOptions:
    ignore_paths: tuple[str, ...] = ()
    resolve_symlinks: bool = False
    use_sourceignore: bool = True


@dataclass(frozen=True)
class Layer:
    """A packed layer on disk, with its digest and size."""

    path: Path
    digest: str
    size: int
    entries: tuple[Entry, ...] = field(default=())


def _mode(st_mode: int, is_dir: bool) -> int:
    if is_dir or st_mode & stat.S_IXUSR:
        return 0o755
    return 0o644


def collect(root: Path, options: PackOptions | None = None) -> list[Entry]:
    """The entries of ``root`` in archive order; raises ``UsageError`` naming the offending path."""
    options = options or PackOptions()
    try:
        st = root.stat()
    except FileNotFoundError:
        raise UsageError(f"{root}: no such file or directory") from None
    except OSError as exc:
        raise UsageError(f"{root}: cannot read ({exc.strerror})") from None
    if stat.S_ISREG(st.st_mode):
        check_name(root.name, root)
        return [Entry(root.name, root, False, _mode(st.st_mode, False), _stamp(st))]
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{root}: not a directory or a regular file")
    matcher = ignore.Matcher.default(options.ignore_paths)
    entries: list[Entry] = []
    _walk(root, "", root.resolve(), matcher, options, entries, {str(root.resolve())})
    return entries


def _walk(
    directory: Path,
    rel: str,
    real_root: Path,
    matcher: ignore.Matcher,
    options: PackOptions,
    out: list[Entry],
    stack: set[str],
) -> None:
    if options.use_sourceignore:
        sourceignore = directory / ignore.SOURCEIGNORE
        if sourceignore.is_file():
            try:
                matcher.add(ignore.parse_lines(sourceignore.read_text().splitlines(), rel))
            except (OSError, UnicodeDecodeError) as exc:
                raise UsageError(f"{sourceignore}: cannot read ({exc})") from None
    try:
        with os.scandir(directory) as it:
            found = sorted(it, key=_name)
    except OSError as exc:
        raise UsageError(f"{directory}: cannot list directory ({exc.strerror})") from None
    for item in found:
        name = item.name
        path = directory / name
        arc = f"{rel}/{name}" if rel else name
        try:
            lst = item.stat(follow_symlinks=False)
        except OSError as exc:
            raise UsageError(f"{path}: cannot read ({exc.strerror})") from None
        if stat.S_ISLNK(lst.st_mode):
            target_is_dir = path.is_dir()
            if matcher.ignored(arc, target_is_dir):
                continue
            check_name(name, path)
            _symlink(path, arc, real_root, matcher, options, out, stack)
            continue
        is_dir = stat.S_ISDIR(lst.st_mode)
        if matcher.ignored(arc, is_dir):
            continue
        check_name(name, path)
        if is_dir:
            out.append(Entry(arc, path, True, 0o755))
            _walk(path, arc, real_root, matcher, options, out, stack)
        elif stat.S_ISREG(lst.st_mode):
            out.append(Entry(arc, path, False, _mode(lst.st_mode, False), _stamp(lst)))
        else:
            raise UsageError(
                f"{path}: is a {_kind(lst.st_mode)}; artifacts hold regular files and directories only "
                "(remove it or add it to .sourceignore / --ignore-paths)"
            )


def check_name(name: str, path: Path) -> None:
    """Refuse a name every extractor refuses (``lockgate.artifact.extract``): a backslash is a
    directory separator on Windows, and a NUL ends a name in C."""
    if "\\" in name or "\x00" in name:
        raise UsageError(
            f"{path}: the name holds a backslash or a NUL, and every runner refuses to extract such "
            "an entry (lockgate pull and reconcile, as Flux); rename it, or keep it out "
            "(.sourceignore / --ignore-paths)"
        )


def _name(item: os.DirEntry[str]) -> str:
    return item.name


def _stamp(st: os.stat_result) -> tuple[int, ...]:
    """What changes whenever a file's content may have: size, times, inode, device."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def _symlink(
    path: Path,
    arc: str,
    real_root: Path,
    matcher: ignore.Matcher,
    options: PackOptions,
    out: list[Entry],
    stack: set[str],
) -> None:
    target = os.readlink(path)
    if not options.resolve_symlinks:
        raise UsageError(
            f"{path}: is a symbolic link (to {target}); artifacts carry no links. Replace it with a file, "
            "ignore it (.sourceignore / --ignore-paths), or pass --resolve-symlinks to copy its target"
        )
    real = Path(os.path.realpath(path))
    if real != real_root and real_root not in real.parents:
        raise UsageError(
            f"{path}: links to {target}, outside the tree; --resolve-symlinks only follows links inside"
        )
    try:
        st = real.stat()
    except OSError:
        raise UsageError(f"{path}: links to {target}, which does not exist") from None
    if stat.S_ISDIR(st.st_mode):
        if str(real) in stack:
            raise UsageError(f"{path}: links to {target}, a directory containing the link (a cycle)")
        out.append(Entry(arc, real, True, 0o755))
        _walk(real, arc, real_root, matcher, options, out, stack | {str(real)})
    elif stat.S_ISREG(st.st_mode):
        out.append(Entry(arc, real, False, _mode(st.st_mode, False), _stamp(st)))
    else:
        raise UsageError(f"{path}: links to a {_kind(st.st_mode)}; only files and directories can be packed")


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "named pipe"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return name
    return "special file"


class _HashingWriter:
    """A write-only file object that hashes and counts what passes through to ``target``."""

    def __init__(self, target: IO[bytes]) -> None:
        self.target = target
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.sha.update(data)
        self.size += len(data)
        self.target.write(data)
        return len(data)

    def flush(self) -> None:
        self.target.flush()


#: called with each file entry and its content (None when too large to hold: read it yourself)
Check = Callable[[Entry, "bytes | None"], None]

#: files up to this size are read whole, once, and handed to the check; larger ones are streamed
INLINE_LIMIT = 16 << 20
_CHUNK = 1 << 20
_BLOCK = tarfile.BLOCKSIZE
_RECORD = tarfile.RECORDSIZE


def tar_header(entry: Entry, size: int) -> bytes:
    """The tar header block(s) for ``entry``: a plain ustar block when the name fits, else
    tarfile's PAX headers. The ustar block is the one tarfile writes for our normalised
    fields (mode, uid/gid 0, mtime 0, no owner names), built directly because tarfile's
    generic code was a quarter of the packing time for thousands of small files."""
    name = entry.name + "/" if entry.is_dir else entry.name
    if name.isascii() and len(name) <= 100 and size < _MAX_USTAR_SIZE:
        return ustar_header(name, entry.mode, 0 if entry.is_dir else size, entry.is_dir)
    info = tarfile.TarInfo(entry.name)
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = entry.mode
    if entry.is_dir:
        info.type = tarfile.DIRTYPE
    else:
        info.size = size
    # exactly what tarfile.addfile writes for a PAX-format archive opened with encoding utf-8
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


_MAX_USTAR_SIZE = 8**11
_USTAR_MIDDLE = b"0000000\x00" * 2  # uid, gid
_USTAR_TAIL = b"\x00" * 100 + tarfile.POSIX_MAGIC + b"\x00" * (32 + 32 + 8 + 8 + 155 + 12)


def ustar_header(name: str, mode: int, size: int, is_dir: bool) -> bytes:
    """One 512-byte ustar header (ascii ``name`` of at most 100 bytes, mtime 0, owner 0)."""
    block = bytearray(
        name.encode("ascii").ljust(100, b"\x00")
        + b"%07o\x00" % (mode & 0o7777)
        + _USTAR_MIDDLE
        + b"%011o\x00" % size
        + b"00000000000\x00"
        + b"        "
        + (tarfile.DIRTYPE if is_dir else tarfile.REGTYPE)
        + _USTAR_TAIL
    )
    # the checksum counts its own field as eight spaces; written as six octal digits, NUL, space
    block[148:155] = b"%06o\x00" % sum(block)
    return bytes(block)


def _padding(size: int) -> bytes:
    remainder = size % _BLOCK
    return tarfile.NUL * (_BLOCK - remainder) if remainder else b""


class RatioProbe:
    """The compression ratio an extractor (``lockgate.artifact.extract``) will see, measured
    while packing: where each file's bytes sit in the tar, and how many compressed bytes the
    compressor had written after each block. ``peak`` is a ratio the extractor surely
    reaches, so a layer refused for it here is refused on every runner with that limit."""

    def __init__(self) -> None:
        #: (offset of the data in the tar, size) of each file, in order
        self.spans: list[tuple[int, int]] = []
        #: (tar bytes compressed, compressed bytes written), per block and at the end
        self.marks: list[tuple[int, int]] = []

    def _file_bytes(self, offset: int, starts: list[int], before: list[int]) -> int:
        """Bytes of files in the tar's first ``offset`` bytes (what an extractor counts)."""
        index = bisect.bisect_right(starts, offset) - 1
        if index < 0:
            return 0
        start, size = self.spans[index]
        return before[index] + min(size, offset - start)

    def peak(self, floor: int) -> float:
        """The highest ratio past ``floor`` file bytes an extractor cannot avoid seeing."""
        starts = [start for start, _ in self.spans]
        before = [0, *itertools.accumulate(size for _, size in self.spans)][:-1]
        peak = 0.0
        last = len(self.marks) - 1
        for index, (offset, _) in enumerate(self.marks):
            files = self._file_bytes(offset, starts, before)
            if files <= floor:
                continue
            if index == last:
                compressed = self.marks[last][1]  # at the end it has read the whole layer at most
            else:
                # by then it may have read a chunk further (its reads of a file, and the
                # compressor's output of a block can come with the next one): two blocks on
                compressed = self.marks[min(index + 2, last)][1] + _READ_AHEAD
            peak = max(peak, files / compressed)
        return peak


#: what an extractor reads of the compressed layer at once (tarfile's record)
_READ_AHEAD = tarfile.RECORDSIZE


class RatioTooHigh(UsageError):
    """The layer compresses better than runners extract by default (a decompression bomb?).

    ``stopped`` says what did not happen: "written" for ``build``, "pushed" for ``push``."""

    def __init__(self, root: Path, ratio: float, max_ratio: float, *, stopped: str = "written") -> None:
        super().__init__(
            f"{root}: the layer compresses {ratio:,.0f}:1, over the {max_ratio:g}:1 runners "
            "extract (lockgate pull and reconcile --max-ratio, a Sync's spec.maxRatio), so every one "
            f"of them would refuse it as a decompression bomb; nothing was {stopped}. If the files are "
            "meant to compress this well, pass a higher --max-ratio here and give the runners the "
            "same limit"
        )
        self.root, self.ratio, self.max_ratio = root, ratio, max_ratio


def write(
    entries: Sequence[Entry],
    out: IO[bytes],
    *,
    check: Check | None = None,
    inline_limit: int = INLINE_LIMIT,
    probe: RatioProbe | None = None,
) -> tuple[str, int]:
    """Stream ``entries`` as tar+gzip into ``out``; returns (digest, compressed size).

    The tar stream is assembled here rather than through ``tarfile.TarFile.addfile`` (same
    headers, same bytes: the digest of a tree never changes) and handed to gzip in large
    chunks; ``gz.GzipWriter`` re-cuts them into fixed blocks, so the deflate output does not
    depend on how they were split here. Each file is read once, and ``check`` (e.g. YAML
    validation) sees the bytes that are packed. Deflate, CRC, hashing and writing ``out``
    run on the writer's worker thread, in order: the bytes are those of a single thread.
    """
    sink = _HashingWriter(out)
    gzw = gz.GzipWriter(sink.write, threaded=True, marks=None if probe is None else probe.marks)
    total = sum(entry.stamp[0] for entry in entries if entry.stamp)
    task = progress.current().task("packing", total=total or None)
    try:
        return _write(entries, sink, gzw, check, inline_limit, task, [] if probe is None else probe.spans)
    except BaseException:
        gzw.abort()
        raise
    finally:
        task.finish()


def _write(
    entries: Sequence[Entry],
    sink: _HashingWriter,
    gzw: gz.GzipWriter,
    check: Check | None,
    inline_limit: int,
    task: progress.Task,
    spans: list[tuple[int, int]],
) -> tuple[str, int]:
    offset = 0
    buf = bytearray()
    for entry in entries:
        if entry.is_dir:
            header = tar_header(entry, 0)
            buf += header
            offset += len(header)
            continue
        try:
            with open(entry.source, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size <= inline_limit:
                    data = handle.read()
                    if check is not None:
                        check(entry, data)
                    header = tar_header(entry, len(data))
                    spans.append((offset + len(header), len(data)))
                    buf += header
                    buf += data
                    buf += _padding(len(data))
                    offset += len(header) + len(data) + len(_padding(len(data)))
                else:
                    if check is not None:
                        check(entry, None)
                    header = tar_header(entry, size)
                    spans.append((offset + len(header), size))
                    buf += header
                    gzw.write(buf)
                    buf.clear()
                    _copy(handle, gzw, size, entry)
                    buf += _padding(size)
                    offset += len(header) + size + len(_padding(size))
        except OSError as exc:
            raise UsageError(f"{entry.source}: cannot read ({exc.strerror or exc})") from None
        task.advance(size)
        if len(buf) >= _CHUNK:
            gzw.write(buf)
            buf.clear()
    # the end of archive: two zero blocks, then zeros up to a whole record (as tarfile.close)
    buf += tarfile.NUL * (2 * _BLOCK)
    offset += 2 * _BLOCK
    if offset % _RECORD:
        buf += tarfile.NUL * (_RECORD - offset % _RECORD)
    gzw.write(buf)
    gzw.close()
    return "sha256:" + sink.sha.hexdigest(), sink.size


def _check_ratio(root: Path, ratio: float, limits: Limits) -> None:
    if ratio > limits.max_ratio:
        raise RatioTooHigh(root, ratio, limits.max_ratio)


def _copy(handle: IO[bytes], gzw: gz.GzipWriter, size: int, entry: Entry) -> None:
    left = size
    while left:
        chunk = handle.read(min(left, _CHUNK))
        if not chunk:
            raise UsageError(f"{entry.source}: changed while being packed (shorter than {size} bytes)")
        gzw.write(chunk)
        left -= len(chunk)


def pack(
    root: Path,
    dest: Path,
    options: PackOptions | None = None,
    *,
    entries: Sequence[Entry] | None = None,
    check: Check | None = None,
    inline_limit: int = INLINE_LIMIT,
    limits: Limits | None = None,
) -> Layer:
    """Write ``root`` into the file ``dest`` (replaced atomically; nothing left on failure).

    ``entries``: what ``collect(root, options)`` returned, when the caller already has it.
    ``check`` runs on the second core too when there is one (``sharedcheck``). With
    ``limits``, a layer whose compression ratio an extractor with those limits refuses is
    refused here (``RatioTooHigh``), before anything is pushed.
    """
    from lockgate.artifact import sharedcheck

    if entries is None:
        entries = collect(root, options)
    partial = dest.with_name(dest.name + ".partial")
    try:
        probe = RatioProbe() if limits is not None else None
        with open(partial, "wb") as out, sharedcheck.shared(check, entries) as checking:
            digest, size = write(entries, out, check=checking, inline_limit=inline_limit, probe=probe)
        if probe is not None and limits is not None:
            _check_ratio(root, probe.peak(limits.ratio_floor), limits)
        partial.replace(dest)
    finally:
        partial.unlink(missing_ok=True)
    return Layer(path=dest, digest=digest, size=size, entries=tuple(entries))
