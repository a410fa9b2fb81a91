"""Where a pass's time goes, phase by phase: the profile a pass carries in its ``Result``.

Each phase is the wall time of one step of ``reconcile`` (resolve the tag, check the
signature, pull and extract, build, prepare the objects, read the inventory, plan, the
pre-flight dry run, record the inventory, apply, prune, wait for health, attest); a phase met
twice (the inventory is recorded before and after applying) adds up. ``reconcile -o json``
shows them as ``timings``, ``serve`` observes them in ``lockgate_pass_phase_seconds``, and
``bench/profile_pass.py`` summarises them. Measuring costs two clock reads a phase.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Timings:
    """Seconds per phase, in the order the phases were first met."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - started

    def to_json(self) -> dict[str, float]:
        return {name: round(seconds, 4) for name, seconds in self.seconds.items()}


