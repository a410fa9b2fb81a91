"""Ctrl-C (SIGINT) and SIGTERM for the commands that write: stop cleanly and say what was done.

Two ways, one per kind of command:

- ``graceful`` (``reconcile``): the first signal is only recorded; the pass asks ``guard``
  before each write and twice a second in its health wait, as ``serve``'s passes ask theirs,
  and ``guard`` raises ``ShuttingDown`` once a signal came. The pass then records itself
  ``Abandoned`` (the inventory already holds every object it wrote) and the command exits 12.
  A second signal stops at once (``KeyboardInterrupt``), for a pass that will not reach a write.
- ``raising`` (``push``, ``copy``): SIGTERM becomes a ``KeyboardInterrupt``, as Ctrl-C is, so
  the command's own handler reports what was and was not written instead of dying silently
  with 143. ``Interrupted`` is the error it then raises (exit 12).

Handlers are installed only in the main thread (Python allows no other) and restored on exit.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from lockgate.errors import Abandoned, ShuttingDown

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Abandoned):
    """A command stopped by Ctrl-C or SIGTERM; the message says what was and was not written."""


def name(signum: int) -> str:
    return signal.Signals(signum).name


class Interrupts:
    """The signal a ``graceful`` command received, if any."""

    def __init__(self) -> None:
        self.received: int | None = None

    @property
    def stopping(self) -> bool:
        return self.received is not None

    def guard(self) -> None:
        """Raise ``ShuttingDown`` once a signal came (a pass's guard, as ``serve`` gives one)."""
        if self.received is not None:
            raise ShuttingDown(
                f"interrupted by {name(self.received)}: the pass stopped before its next write and "
                "was recorded as abandoned; what it had applied is listed, nothing else was changed, "
                "and the next pass converges"
            )


@contextmanager
def _handlers(handler: signal.Handlers | object) -> Iterator[bool]:
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    previous = {sig: signal.signal(sig, handler) for sig in _SIGNALS}  # type: ignore[arg-type]
    try:
        yield True
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def graceful() -> Iterator[Interrupts]:
    """Record the first SIGINT/SIGTERM for ``Interrupts.guard``; a second one stops at once."""
    interrupts = Interrupts()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if interrupts.received is not None:
            raise KeyboardInterrupt
        interrupts.received = signum
        print(
            f"lockgate: {name(signum)}: stopping at the pass's next write or health check "
            "(again to stop at once, without recording it)",
            file=sys.stderr,
            flush=True,
        )

    with _handlers(on_signal):
        yield interrupts


@contextmanager
def raising() -> Iterator[None]:
    """SIGTERM raises ``KeyboardInterrupt`` in the main thread, as Ctrl-C does."""

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(name(signum))

    with _handlers(on_signal):
        yield


def which(interrupt: KeyboardInterrupt) -> str:
    """The signal a ``KeyboardInterrupt`` stands for (``raising`` names it; Ctrl-C is SIGINT)."""
    return str(interrupt.args[0]) if interrupt.args else "SIGINT"
