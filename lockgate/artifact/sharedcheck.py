"""The pack's per-file check (YAML validation) shared with a forked helper, on the second core.

Validating 50 MB of YAML costs libyaml about twice what reading, tar framing, deflate and
hashing cost together, and libyaml holds the GIL, so a thread cannot help: a child process
forked just before packing validates from the last entry backwards while the parent packs
from the first, validating inline the bytes it packs. Claims go through two shared indices
under one lock, so every file is checked exactly once, by whichever side reaches it first,
and the two meet wherever the work balances on this machine. Nothing here touches the
layer's bytes: the output does not depend on the core count.

A failure reads exactly as without the helper: the child stops at the first file it
rejects and reports its index; the parent, when done, runs the check on that file itself
(the file named, the message the check gives) unless it failed earlier in archive order.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lockgate.artifact.pack import Check, Entry

#: below this many bytes of files the fork costs more than it saves
MIN_BYTES = 4 << 20
_NONE = -1


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class SharedCheck:
    """A ``pack.Check`` for the parent's side; ``start`` forks the helper, ``finish`` joins it."""

    def __init__(self, check: Check, entries: Sequence[Entry]) -> None:
        import multiprocessing

        self._check = check
        self._entries = entries
        self._index = {id(entry): i for i, entry in enumerate(entries)}
        context = multiprocessing.get_context("fork")
        self._lock = context.Lock()
        # [low, high): low is the parent's next claim, entries from high on are the child's
        self._low = context.RawValue("q", 0)
        self._high = context.RawValue("q", len(entries))
        self._pid = 0
        self._read_fd = -1
        #: the helper's pid, kept after it is joined (for logs and tests); 0 before ``start``
        self.forked = 0

    def __call__(self, entry: Entry, data: bytes | None) -> None:
        index = self._index.get(id(entry))
        if index is not None:
            with self._lock:
                if index >= self._high.value:
                    return  # the helper checked it already
                self._low.value = index + 1
        self._check(entry, data)

    def start(self) -> None:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the helper: never returns
            os.close(read_fd)
            code = 0
            try:
                failed = self._helper()
                os.write(write_fd, struct.pack("<q", failed))
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(write_fd)
        self._pid, self._read_fd, self.forked = pid, read_fd, pid

    def _helper(self) -> int:
        while True:
            with self._lock:
                index = int(self._high.value) - 1
                if index < self._low.value:
                    return _NONE
                self._high.value = index
            entry = self._entries[index]
            if entry.is_dir:
                continue
            try:
                self._check(entry, None)
            except Exception:
                return index

    def finish(self) -> None:
        """Join the helper; raises what the check raises for the file the helper rejected."""
        failed = self._join()
        if failed != _NONE:
            self._check(self._entries[failed], None)

    def _join(self) -> int:
        with os.fdopen(self._read_fd, "rb") as pipe:
            report = pipe.read()
        self._read_fd = -1
        _, status = os.waitpid(self._pid, 0)
        self._pid = 0
        if os.waitstatus_to_exitcode(status) != 0 or len(report) != 8:
            # the helper died: check what it had claimed here, so nothing goes unchecked
            return self._recheck()
        (failed,) = struct.unpack("<q", report)
        return int(failed)

    def _recheck(self) -> int:
        for entry in self._entries[self._high.value :]:
            if not entry.is_dir:
                self._check(entry, None)
        return _NONE

    def abandon(self) -> None:
        """Stop the helper (the pack failed); nothing is left running."""
        if self._pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            self._pid = 0
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1


@contextlib.contextmanager
def shared(check: Check | None, entries: Sequence[Entry], *, force: bool = False) -> Iterator[Check | None]:
    """``check``, shared with a helper when there is a second core and enough to check (or ``force``)."""
    size = sum(entry.stamp[0] for entry in entries if not entry.is_dir and entry.stamp)
    if check is None or not (force or (size >= MIN_BYTES and cores() >= 2)):
        yield check
        return
    helper = SharedCheck(check, entries)
    helper.start()
    try:
        yield helper
    except BaseException:
        helper.abandon()
        raise
    helper.finish()
