"""Progress of long work (packing, uploading, downloading, extracting) as one live line on stderr.

Only when stderr is a terminal and the user did not pass ``--quiet``: in CI logs, pipes and
tests nothing is written at all. The CLI command opens the scope (``shown``); the library
code asks for the ``current`` reporter and calls ``advance`` as it goes, which when silent
is one addition and one comparison, and when drawing redraws at most ten times a second.
The line is erased when a task ends, so what the command prints afterwards stands alone.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import IO, TextIO, cast

from lockgate import terminal

#: seconds between two redraws
INTERVAL = 0.1
_NEVER = float("inf")


class Task:
    """One piece of work, ``done`` out of ``total`` (``None``: unknown) in ``unit``."""

    __slots__ = ("_drawn", "_interval", "_next", "_out", "done", "label", "total", "unit")

    def __init__(
        self, out: TextIO | None, label: str, total: int | None, unit: str, interval: float = INTERVAL
    ) -> None:
        self._out = out
        self._interval = interval
        self.label, self.total, self.unit = label, total, unit
        self.done = 0
        self._drawn = False
        # a silent task never reaches the threshold: advance() stays an addition and a compare
        self._next = _NEVER if out is None else 0.0

    def advance(self, amount: int = 1) -> None:
        self.done += amount
        if self._next is not _NEVER and (now := time.monotonic()) >= self._next:
            self._next = now + self._interval
            self._draw()

    def _draw(self) -> None:
        assert self._out is not None
        # our own erase-line sequence, then the line with a label's control characters escaped
        self._out.write(f"\r\x1b[K{terminal.shown(render(self.label, self.done, self.total, self.unit))}")
        self._out.flush()
        self._drawn = True

    def finish(self) -> None:
        """Erase the line (if one was drawn)."""
        if self._drawn and self._out is not None:
            self._out.write("\r\x1b[K")
            self._out.flush()
            self._drawn = False


def render(label: str, done: int, total: int | None, unit: str) -> str:
    """``packing 12.3/50.0 MB (24%)``, ``extracting 1234 files``."""
    if unit == "B":
        shown = f"{done / 1e6:.1f}" + (f"/{total / 1e6:.1f}" if total else "") + " MB"
    else:
        shown = f"{done}" + (f"/{total}" if total else "") + f" {unit}"
    percent = f" ({100 * done // total}%)" if total else ""
    return f"{label} {shown}{percent}"


class Progress:
    """Hands out tasks that draw on ``out``, or silent ones when ``out`` is None."""

    def __init__(self, out: TextIO | None = None, *, interval: float = INTERVAL) -> None:
        self.out = out
        self.interval = interval

    @property
    def enabled(self) -> bool:
        return self.out is not None

    def task(self, label: str, *, total: int | None = None, unit: str = "B") -> Task:
        return Task(self.out, label, total, unit, self.interval)


_SILENT = Progress()
_current: ContextVar[Progress | None] = ContextVar("lockgate_progress", default=None)


def current() -> Progress:
    """The reporter of the running command (silent unless a command opened ``shown``)."""
    return _current.get() or _SILENT


@contextmanager
def shown(
    *, quiet: bool = False, stream: TextIO | None = None, interval: float = INTERVAL
) -> Iterator[Progress]:
    """Report progress on ``stream`` (stderr) during the block, if it is a terminal and not
    ``quiet``, redrawing at most every ``interval`` seconds."""
    out = sys.stderr if stream is None else stream
    reporter = Progress(out if not quiet and _is_terminal(out) else None, interval=interval)
    token = _current.set(reporter)
    try:
        yield reporter
    finally:
        _current.reset(token)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Reading:
    """A binary file opened for reading that advances ``task`` by what is read (for uploads)."""

    def __init__(self, raw: IO[bytes], task: Task) -> None:
        self.raw, self.task = raw, task

    @classmethod
    def of(cls, raw: IO[bytes], task: Task) -> IO[bytes]:
        """Typed as the file it wraps: the callers read, seek and tell, nothing else."""
        return cast("IO[bytes]", cls(raw, task))

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.task.advance(len(data))
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        position = self.raw.seek(offset, whence)
        self.task.done = position  # a retry rewinds: so does the count
        return position

    def tell(self) -> int:
        return self.raw.tell()


class Writing:
    """A binary file opened for writing that advances ``task`` by what is written (for downloads)."""

    def __init__(self, raw: IO[bytes], task: Task) -> None:
        self.raw, self.task = raw, task

    @classmethod
    def of(cls, raw: IO[bytes], task: Task) -> IO[bytes]:
        """Typed as the file it wraps: the callers only write."""
        return cast("IO[bytes]", cls(raw, task))

    def write(self, data: bytes) -> int:
        written = self.raw.write(data)
        self.task.advance(len(data))
        return written
