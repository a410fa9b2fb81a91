"""Safe extraction of an artifact layer, shared by ``lockgate pull`` and the runner.

Stricter than ``tarfile``'s ``data`` filter: regular files and directories only (no
symlinks, hard links, devices or fifos), no absolute paths or ``..``, no duplicates, and
limits on total size, entry count (files and directories alike: a layer of nothing but
directories costs an inode each) and compression ratio. Everything is written into a
temporary directory next to the target and renamed into place only when the whole layer
was read; on any failure nothing is left behind and the error names the entry.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from lockgate import paths, progress
from lockgate.artifact import gz
from lockgate.artifact.limits import Limits as Limits
from lockgate.errors import LockgateError, RenderError, UsageError, VerificationError

CHUNK = 1 << 20
#: compressed bytes read at once (tarfile's record, what its r|gz stream read)
READ_AHEAD = tarfile.RECORDSIZE


class UnsafeArtifactError(VerificationError):
    """The layer holds something lockgate refuses to write; ``entry`` names it."""

    def __init__(self, entry: str, reason: str) -> None:
        super().__init__(f"refusing to extract {entry!r}: {reason}; nothing was written")
        self.entry = entry


class LimitExceeded(RenderError):
    """The layer is larger, has more files or compresses better than the limits allow."""

    def __init__(self, entry: str, reason: str) -> None:
        super().__init__(f"refusing to extract {entry!r}: {reason}; nothing was written")
        self.entry = entry


@dataclass(frozen=True)
class Extracted:
    root: Path
    files: int
    total_bytes: int


class _Counting:
    """Counts the compressed bytes read from the layer file, for the ratio limit."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.count += len(data)
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:
        # at most what tarfile's gzip stream read at once, so the ratio is measured as tightly
        # as before (the decompressor would otherwise read 512 KiB ahead)
        buffer = memoryview(buffer)[:READ_AHEAD]
        readinto = getattr(self.raw, "readinto", None)
        if readinto is not None:
            n = int(readinto(buffer))
        else:
            data = self.raw.read(len(buffer))
            n = len(data)
            buffer[:n] = data
        self.count += n
        return n


def _safe_name(name: str) -> str | None:
    """The normalised relative path, or None for the root entry; raises on anything unsafe."""
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArtifactError(name, "absolute path")
    if "\\" in name or "\x00" in name:
        raise UnsafeArtifactError(name, "backslash or NUL in the name")
    if ".." in name.split("/"):
        raise UnsafeArtifactError(name, "path contains '..'")
    clean = posixpath.normpath(name)
    if clean in (".", ""):
        return None
    return clean


class _Stream(Protocol):
    def read(self, size: int, /) -> bytes: ...


class _Exact:
    """Exactly ``size`` bytes of the tar stream: a plain member's data, read straight from the
    stream tarfile parses (``next()`` then skips the padding), without the two reader layers
    ``extractfile`` builds per member; a short stream raises as tarfile's reader does."""

    def __init__(self, stream: _Stream, size: int) -> None:
        self._stream, self._left = stream, size

    def read(self, size: int) -> bytes:
        data = self._stream.read(min(size, self._left)) if self._left else b""
        if len(data) < min(size, self._left):
            raise tarfile.ReadError("unexpected end of data")
        self._left -= len(data)
        return data


def _content(tar: tarfile.TarFile, member: tarfile.TarInfo) -> IO[bytes] | _Exact:
    stream = tar.fileobj
    if member.issparse() or stream is None or stream.tell() != member.offset_data:
        source = tar.extractfile(member)
        if source is None:
            raise UnsafeArtifactError(member.name, "unreadable entry")
        return source
    return _Exact(stream, member.size)


def _check_type(member: tarfile.TarInfo) -> None:
    if member.issym():
        raise UnsafeArtifactError(member.name, f"symbolic link (to {member.linkname})")
    if member.islnk():
        raise UnsafeArtifactError(member.name, f"hard link (to {member.linkname})")
    if member.ischr() or member.isblk():
        raise UnsafeArtifactError(member.name, "device file")
    if member.isfifo():
        raise UnsafeArtifactError(member.name, "fifo")
    if not (member.isreg() or member.isdir()):
        raise UnsafeArtifactError(member.name, "not a regular file or directory")


def extract(layer: IO[bytes], target: Path, limits: Limits | None = None) -> Extracted:
    """Extract the tar+gzip ``layer`` into ``target``, which must not exist or be an empty directory.

    ``Extracted.files`` counts regular files; ``limits.max_files`` bounds every entry."""
    limits = limits or Limits()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"{target} exists and is not an empty directory; choose a new output directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        result = _extract_into(layer, staging, limits)
        # mkdtemp made it 0700; the result gets what `flux pull` gives: 0755 less the umask
        staging.chmod(0o755 & ~paths.umask())
        if target.exists():
            target.rmdir()
        staging.rename(target)
        return Extracted(root=target, files=result[0], total_bytes=result[1])
    except LockgateError:
        raise
    except gz.ERRORS as exc:
        raise VerificationError(
            f"the layer is not a valid tar+gzip archive ({exc}); nothing was written"
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _extract_into(layer: IO[bytes], root: Path, limits: Limits) -> tuple[int, int]:
    """The members of ``layer`` written under the fresh staging directory ``root``.

    Written for few system calls per entry, since they are most of a pull at 10,000 files:
    each directory is made once (``made`` remembers them), a file is one ``open`` with
    ``O_EXCL | O_NOFOLLOW`` (which is also the collision check), its writes and a ``close``,
    and modes are set at creation (0755 for directories and executables, else 0644), less
    the umask, as ``flux pull`` creates them: no ``chmod`` at all.
    """
    counting = _Counting(layer)
    seen: set[str] = set()
    made: set[str] = {""}
    base = str(root)
    files = 0
    total = 0
    task = progress.current().task("extracting", unit="files")
    # decompressed through the same bundled library as packing (gz), not the system zlib
    with gz.reader(counting) as plain, tarfile.open(fileobj=plain, mode="r|") as tar, _finishing(task):
        for member in tar:
            name = _safe_name(member.name)
            _check_type(member)
            if name is None:
                continue
            if name in seen:
                raise UnsafeArtifactError(member.name, "appears twice in the layer")
            seen.add(name)
            dest = f"{base}/{name}"
            if member.isdir():
                if name not in made:
                    _parents(base, name, made)
                    os.mkdir(dest, 0o755)
                    made.add(name)
                _count(member, files + len(made) - 1, limits)
                continue
            files += 1
            if total + member.size > limits.max_total_bytes:
                raise LimitExceeded(member.name, f"total size exceeds {limits.max_total_bytes} bytes (limit)")
            _parents(base, name, made)
            # every entry made so far: files, listed directories and the ones their paths imply
            _count(member, files + len(made) - 1, limits)
            source = _content(tar, member)
            mode = 0o755 if member.mode & 0o100 else 0o644
            try:
                fd = os.open(dest, _CREATE, mode)
            except FileExistsError:
                raise UnsafeArtifactError(member.name, "collides with an entry already extracted") from None
            try:
                while chunk := source.read(CHUNK):
                    total += len(chunk)
                    if total > limits.ratio_floor and total > limits.max_ratio * max(counting.count, 1):
                        raise LimitExceeded(
                            member.name,
                            f"compression ratio above {limits.max_ratio:g}:1 (a decompression bomb?)",
                        )
                    _write_all(fd, chunk)
            finally:
                os.close(fd)
            task.advance()
    return files, total


def _count(member: tarfile.TarInfo, entries: int, limits: Limits) -> None:
    if entries > limits.max_files:
        raise LimitExceeded(
            member.name, f"more than {limits.max_files} entries, files and directories (limit)"
        )


@contextlib.contextmanager
def _finishing(task: progress.Task) -> Iterator[None]:
    try:
        yield
    finally:
        task.finish()


#: a new file only: never through a link, never over an existing entry
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _parents(base: str, name: str, made: set[str]) -> None:
    """Make the directories above ``name`` once (0755 less the umask, as the listed ones)."""
    parent = name.rpartition("/")[0]
    if parent in made:
        return
    os.makedirs(f"{base}/{parent}", mode=0o755, exist_ok=True)
    while parent not in made:
        made.add(parent)
        parent = parent.rpartition("/")[0]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
