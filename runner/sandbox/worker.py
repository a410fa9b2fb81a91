"""The CEL worker process: judges objects with expressions, one frame at a time, and says
before each evaluation which one it starts, so its watcher (``runner.sandbox.pool``) can
stop it and name the expression.

Started as ``python -P -m runner.sandbox.worker FD`` with a bare environment; ``FD`` is a
shared file of ``PROGRESS.size`` bytes. It limits its own address space and core dumps
before reading anything, then reads frames on stdin: a ``HEADER`` (the length) and a
``marshal`` payload ``(texts, items)``: the tuples of expression texts, and ``(which texts,
object)`` pairs. For each frame it writes one JSON line: ``[decided, kind, said]`` per item
(``health_exprs.Outcome``). JSON back, because the parent must not unpickle or unmarshal what
a worker (running tenants' expressions) wrote; marshal forward, because the parent wrote it.
"""

from __future__ import annotations

import json
import marshal
import mmap
import resource
import struct
import sys
from typing import Any

#: the length of a frame's payload
HEADER = struct.Struct("<I")
#: (evaluations started, item in the frame, expression of the item: -1 while converting it)
PROGRESS = struct.Struct("<Qii")
#: the worker's address space: 50 MB of its own, room for the largest objects and a margin
MEMORY_BYTES = 512 * 1024 * 1024


def _limit_self() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class _Progress:
    """The shared record, written before each evaluation (a counter, the item, the expression)."""

    def __init__(self, shared: mmap.mmap) -> None:
        self.shared, self.count, self.position, self.expression = shared, 0, 0, -1

    def started(self, expression: int) -> None:
        self.count += 1
        self.expression = expression
        PROGRESS.pack_into(self.shared, 0, self.count, self.position, expression)


def serve(shared: mmap.mmap, stdin: Any, stdout: Any) -> None:
    from runner.plan import health_exprs

    limit, run = health_exprs.Outcome.LIMIT, health_exprs.run_in_order
    memory = f"ran over the CEL worker's memory limit ({MEMORY_BYTES // 2**20} MiB)"
    progress = _Progress(shared)
    while True:
        head = stdin.read(HEADER.size)
        if len(head) < HEADER.size:
            return  # the parent closed the pipe: it is done, or gone
        (size,) = HEADER.unpack(head)
        texts, items = marshal.loads(stdin.read(size))
        said: list[tuple[int, str, str]] = []
        for position, (which, obj) in enumerate(items):
            progress.position = position
            try:
                outcome = run(texts[which], obj, started=progress.started)
            except MemoryError:
                said.append((progress.expression, limit, memory))
                continue
            if outcome.kind == health_exprs.Outcome.ERROR and "bad_alloc" in outcome.said:
                # the runtime's allocation failed at the rlimit and it said so as an error
                said.append((outcome.decided, limit, memory))
                continue
            said.append((outcome.decided, outcome.kind, outcome.said))
        stdout.write(json.dumps(said).encode() + b"\n")
        stdout.flush()


def main() -> None:
    _limit_self()
    with open(int(sys.argv[1]), "r+b", buffering=0) as shared:
        progress = mmap.mmap(shared.fileno(), PROGRESS.size)
        serve(progress, sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
