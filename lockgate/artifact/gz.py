"""The layer's gzip, through a deflate that travels with lockgate: ISA-L, bundled in ``isal``'s wheel.

Python's ``zlib`` is the system library on Linux (zlib on Debian and Ubuntu, zlib-ng-compat on
Fedora), and each compresses the same tar to different bytes. ``isal`` (python-isal) links its
own ISA-L statically and is pinned exactly in pyproject, so the compressed bytes depend only on
the tar and lockgate's version.

ISA-L's output also depends on how the input is split between calls, so ``GzipWriter`` feeds
the compressor in blocks of exactly ``BLOCK`` bytes of the tar stream, whatever sizes its
callers write. The gzip member is framed here, byte for byte as ``gzip.GzipFile`` framed it
before: no file name, mtime 0, XFL 0, OS 255 (unknown), then raw deflate, CRC-32 and size.

With ``threaded``, the blocks are compressed (and their output emitted) by one worker
thread, in order, by the same compressor: ISA-L releases the GIL, so deflate overlaps reading
and tar framing on the other core, and the bytes are exactly those of the unthreaded writer.

``reader`` opens a layer for reading through the same library (multi-member streams, CRC and
length checked); what reading a broken layer raises is in ``ERRORS``.
"""

from __future__ import annotations

import gzip
import queue
import struct
import tarfile
import threading
from collections.abc import Callable
from typing import Protocol, cast

import isal
from isal import igzip, isal_zlib

#: ISA-L's levels are 0-3; 1 is its fastest (see README's dependency table for the measurement)
LEVEL = 1
#: the compressor sees exactly this many bytes per call, so the output is a function of the tar alone
BLOCK = 1 << 20
#: magic, deflate, no flags, mtime 0, XFL 0, OS 255: what gzip.GzipFile(filename="", mtime=0) wrote at level 6
HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
#: what reading a broken tar+gzip layer through ``reader`` and tarfile can raise
# (isal_zlib.error is igzip_lib.IsalError, a class; its stub declares an instance)
ERRORS: tuple[type[Exception], ...] = (
    tarfile.TarError,
    OSError,
    EOFError,
    ValueError,
    cast("type[Exception]", isal_zlib.error),
)
#: what the bytes depend on, for the build cache's key
IDENTITY = f"isal {isal.__version__} (ISA-L {isal.ISAL_VERSION}), level {LEVEL}, blocks of {BLOCK}"


class GzipWriter:
    """Writes one gzip member through ``emit``: ``write`` any number of times, then ``close``
    (or ``abort``, which stops the worker of a ``threaded`` writer without finishing)."""

    def __init__(
        self,
        emit: Callable[[bytes], object],
        *,
        threaded: bool = False,
        marks: list[tuple[int, int]] | None = None,
    ) -> None:
        self._emit = emit
        self._deflate = isal_zlib.compressobj(LEVEL, isal_zlib.DEFLATED, -isal_zlib.MAX_WBITS)
        self._pending = bytearray()
        self._crc = 0
        self._size = 0
        #: (uncompressed bytes in, compressed bytes out) after each block and at the end, when asked
        self._marks = marks
        self._out = len(HEADER)
        emit(HEADER)
        self._queue: queue.Queue[bytes | None] | None = None
        self._error: BaseException | None = None
        if threaded:
            # a few blocks in flight: memory stays flat, and the reader never waits on one block
            self._queue = queue.Queue(maxsize=4)
            self._worker = threading.Thread(target=self._work, name="lockgate-deflate", daemon=True)
            self._worker.start()

    def _compress(self, block: bytes | bytearray | memoryview) -> None:
        self._crc = isal_zlib.crc32(block, self._crc)
        self._size += len(block)
        compressed = self._deflate.compress(block)
        if compressed:
            self._out += len(compressed)
            self._emit(compressed)
        if self._marks is not None:
            self._marks.append((self._size, self._out))

    def _work(self) -> None:
        assert self._queue is not None
        while (block := self._queue.get()) is not None:
            if self._error is None:
                try:
                    self._compress(block)
                except BaseException as exc:  # handed to the writing thread at its next call
                    self._error = exc

    def _feed(self, block: bytes | bytearray | memoryview) -> None:
        if self._queue is None:
            self._compress(block)
            return
        if self._error is not None:
            raise self._error
        self._queue.put(bytes(block))  # a copy: the caller reuses its buffer

    def _join(self) -> None:
        if self._queue is not None:
            self._queue.put(None)
            self._worker.join()
            self._queue = None
            if self._error is not None:
                raise self._error

    def write(self, data: bytes | bytearray | memoryview) -> None:
        with memoryview(data) as whole_view:
            view = whole_view
            if self._pending:
                take = min(BLOCK - len(self._pending), len(view))
                self._pending += view[:take]
                view = view[take:]
                if len(self._pending) < BLOCK:
                    return
                self._feed(self._pending)
                self._pending.clear()
            whole = len(view) - len(view) % BLOCK
            for start in range(0, whole, BLOCK):
                self._feed(view[start : start + BLOCK])
            self._pending += view[whole:]

    def close(self) -> None:
        if self._pending:
            self._feed(self._pending)
            self._pending.clear()
        self._join()
        tail = self._deflate.flush(isal_zlib.Z_FINISH) + struct.pack(
            "<II", self._crc & 0xFFFFFFFF, self._size & 0xFFFFFFFF
        )
        self._emit(tail[:-8])
        self._emit(tail[-8:])
        if self._marks is not None:
            self._marks.append((self._size, self._out + len(tail)))

    def abort(self) -> None:
        """Stop the worker, discarding what is queued; the member is left unfinished."""
        if self._queue is not None:
            self._error = self._error or RuntimeError("aborted")
            with self._queue.mutex:
                self._queue.queue.clear()
                self._queue.not_full.notify_all()
            self._queue.put(None)
            self._worker.join()
            self._queue = None


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...

    def readinto(self, buffer: bytearray | memoryview, /) -> int: ...


def reader(raw: Readable) -> gzip.GzipFile:
    """The decompressed stream of the gzip ``raw``, read sequentially (``raw`` is never seeked)."""
    return igzip.IGzipFile(fileobj=raw, mode="rb")  # type: ignore[no-untyped-call]
