"""Worker processes for CEL, handed out per look, watched, and ended when an evaluation runs over.

``Pool.run`` is the runner's ``health_exprs.Engine``: it takes an idle worker (or starts one),
sends the objects in frames of ``FRAME`` items, and while it waits for each frame's answer it
reads the worker's progress record every ``TICK``: an evaluation that has used more than
``EVALUATION_CPU_SECONDS`` of the worker's CPU (or ``EVALUATION_WALL_SECONDS`` of wall clock,
if the worker is starved) is stopped by killing the worker; its object is ``LIMIT`` for the
expression it was running, and the frame's other objects go to a new worker. A look that has
used ``LOOK_CPU_SECONDS`` of its workers' CPU (or ``LOOK_WALL_SECONDS``) stops the same way and
leaves what it did not finish ``UNJUDGED`` (Unknown: no one expression is to blame). A
worker that dies by itself (its memory rlimit) is the same as a stopped one. Concurrent looks
(several syncs of ``serve``) each get their own worker, so one tenant's costly expression
delays no other tenant's look; at most ``IDLE`` idle workers are kept.
"""

from __future__ import annotations

import atexit
import json
import marshal
import mmap
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import IO

from runner.plan.health_exprs import Outcome, Work
from runner.sandbox.worker import HEADER, PROGRESS

#: CPU one evaluation may use (Kubernetes' per-call limit is about 0.1 s of cel-go)
EVALUATION_CPU_SECONDS = 0.5
#: wall clock one evaluation may take, whatever the machine's load
EVALUATION_WALL_SECONDS = 5.0
#: CPU one look may spend on all its objects (its workers' CPU), and its wall-clock backstop
LOOK_CPU_SECONDS = 10.0
LOOK_WALL_SECONDS = 60.0
#: objects per frame: large enough to amortise a round trip, small enough to redo cheaply
FRAME = 500
#: how often a waiting look reads the worker's progress
TICK = 0.02
IDLE = 4
#: what the worker inherits of the environment: only what finds the interpreter and its
#: packages (no credentials, tokens or kubeconfig of the runner)
INHERITED = ("PYTHONPATH", "PYTHONHOME", "PATH", "LANG", "LC_ALL", "LC_CTYPE")

_SPENT = (
    f"not judged: the look's CEL budget ({LOOK_CPU_SECONDS:g}s of CPU, {LOOK_WALL_SECONDS:g}s in all) "
    "was spent on other objects"
)
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class _Stopped(Exception):
    def __init__(self, position: int, outcome: Outcome) -> None:
        super().__init__(outcome.said)
        self.position, self.outcome = position, outcome


def _shared_file() -> IO[bytes]:
    """Memory shared with a worker: an anonymous memory file on Linux (nothing on disk, so a
    read-only root filesystem is no matter), an unlinked temporary file elsewhere."""
    if hasattr(os, "memfd_create"):
        return os.fdopen(os.memfd_create("lockgate-cel-progress"), "r+b", buffering=0)
    return tempfile.TemporaryFile()


class Worker:
    """One worker process and its shared progress record."""

    def __init__(self) -> None:
        self._shared = _shared_file()
        self._shared.truncate(PROGRESS.size)
        self.progress = mmap.mmap(self._shared.fileno(), PROGRESS.size)
        fd = self._shared.fileno()
        env = {name: os.environ[name] for name in INHERITED if name in os.environ}
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-m", "runner.sandbox.worker", str(fd)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            pass_fds=(fd,),
            env=env,
        )

    def _cpu(self) -> float | None:
        """The worker's CPU seconds so far (Linux's /proc); None elsewhere (wall clock only)."""
        try:
            with open(f"/proc/{self.process.pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / _TICKS

    def _progress(self) -> tuple[int, int, int]:
        count, position, expression = PROGRESS.unpack_from(self.progress, 0)
        return int(count), int(position), int(expression)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self.progress.close()
        self._shared.close()

    def _send(self, frames: Sequence[bytes]) -> None:
        """Write every frame (a thread: the pipe holds 64 KiB, so this waits on the worker
        while the caller watches it); a worker that was ended just stops the writing."""
        assert self.process.stdin is not None
        try:
            for frame in frames:
                self.process.stdin.write(HEADER.pack(len(frame)) + frame)
                self.process.stdin.flush()
        except (OSError, ValueError):
            return

    def judge(
        self, frames: Sequence[bytes], *, until: float, cpu_left: float
    ) -> tuple[list[list[Outcome]], _Stopped | None, float]:
        """The outcomes of each frame, in order, until one evaluation runs over (then the
        worker is ended and ``_Stopped`` says where, in the first frame not returned), or the
        look's budget (``cpu_left`` of CPU, ``until`` on the clock) is spent; and the CPU used."""
        first_cpu = self._cpu()
        assert self.process.stdout is not None
        before, _, _ = self._progress()
        writer = threading.Thread(target=self._send, args=(frames,), daemon=True, name="cel-frames")
        writer.start()
        done: list[list[Outcome]] = []
        seen, cpu_at, wall_at = before, first_cpu, time.monotonic()
        latest = first_cpu
        stdout = self.process.stdout
        stopped: _Stopped | None = None
        while len(done) < len(frames):
            if select.select([stdout], [], [], TICK)[0]:
                line = stdout.readline()
                if not line:
                    stopped = self._ended(before)
                    break
                done.append([Outcome(int(d), str(k), str(s)) for d, k, s in json.loads(line)])
                continue
            count, position, expression = self._progress()
            now, cpu = time.monotonic(), self._cpu()
            latest = cpu if cpu is not None else latest
            if (now > until) or (cpu is not None and first_cpu is not None and cpu - first_cpu > cpu_left):
                # the look as a whole ran out, not one evaluation: Unknown, not Failed
                self.close()
                stopped = _Stopped(position, Outcome(-1, Outcome.UNJUDGED, _SPENT))
                break
            if count != seen:
                seen, cpu_at, wall_at = count, cpu, now
                continue
            over = ""
            if cpu is not None and cpu_at is not None and cpu - cpu_at > EVALUATION_CPU_SECONDS:
                over = f"ran over the limit of {EVALUATION_CPU_SECONDS:g}s of CPU for one evaluation"
            elif now - wall_at > EVALUATION_WALL_SECONDS:
                over = f"ran over the limit of {EVALUATION_WALL_SECONDS:g}s for one evaluation"
            if over:
                self.close()
                stopped = _Stopped(position, Outcome(expression, Outcome.LIMIT, over))
                break
        writer.join()
        last_cpu = self._cpu() if stopped is None else latest
        used = (last_cpu or 0.0) - (first_cpu or 0.0)
        return done, stopped, max(0.0, used)

    def _ended(self, before: int) -> _Stopped:
        """The worker died by itself: over its memory rlimit, or worse; the evaluation it had
        started (if any) is the one to blame."""
        code = self.process.wait()
        count, position, expression = self._progress()
        self.close()
        said = f"stopped the CEL worker (it ended with {code}: over its memory limit, or a crash)"
        if count == before:  # it never started: nothing of the tenant's is to blame
            return _Stopped(
                -1, Outcome(-1, Outcome.UNJUDGED, f"not judged: the CEL worker ended with {code}")
            )
        return _Stopped(position, Outcome(expression, Outcome.LIMIT, said))


class Pool:
    """The runner's engine for ``healthCheckExprs``: idle workers, started on first use."""

    def __init__(self) -> None:
        self._idle: list[Worker] = []
        self._lock = threading.Lock()
        atexit.register(self.close)

    def _take(self) -> Worker:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return Worker()

    def _give(self, worker: Worker) -> None:
        with self._lock:
            if worker.process.poll() is None and len(self._idle) < IDLE:
                self._idle.append(worker)
                return
        worker.close()

    def worker_cpu_seconds(self) -> float:
        """The CPU its idle workers have used (Linux; 0 elsewhere): what a look costs beyond
        this process, for bench/bench_health.py."""
        with self._lock:
            return sum(w._cpu() or 0.0 for w in self._idle)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()

    def run(self, work: Sequence[Work]) -> list[Outcome]:
        outcomes: dict[int, Outcome] = {}
        todo = list(range(len(work)))
        until, cpu_left = time.monotonic() + LOOK_WALL_SECONDS, LOOK_CPU_SECONDS
        worker: Worker | None = None
        try:
            while todo:
                if time.monotonic() > until or cpu_left <= 0:
                    outcomes.update((i, Outcome(-1, Outcome.UNJUDGED, _SPENT)) for i in todo)
                    break
                if worker is None:
                    try:
                        worker = self._take()
                    except OSError as exc:  # no interpreter to start: nobody's expression is to blame
                        said = f"not judged: the CEL worker could not start ({exc})"
                        outcomes.update((i, Outcome(-1, Outcome.UNJUDGED, said)) for i in todo)
                        break
                frames = [todo[at : at + FRAME] for at in range(0, len(todo), FRAME)]
                done, stopped, used = worker.judge(
                    [_frame(work, frame) for frame in frames], until=until, cpu_left=cpu_left
                )
                cpu_left -= used
                for frame, outcome in zip(frames, done, strict=False):
                    outcomes.update(zip(frame, outcome, strict=True))
                if stopped is None:
                    break
                worker = None  # ended by ``judge``: the next round starts another
                rest = [i for frame in frames[len(done) :] for i in frame]
                if stopped.position < 0 or stopped.outcome.kind == Outcome.UNJUDGED:
                    # it ended before evaluating, or the look's budget is spent: nobody's expression
                    outcomes.update((i, stopped.outcome) for i in rest)
                    break
                culprit = frames[len(done)][stopped.position]
                outcomes[culprit] = stopped.outcome
                todo = [i for i in rest if i != culprit]
        finally:
            if worker is not None:
                self._give(worker)
        return [outcomes[i] for i in range(len(work))]


def _frame(work: Sequence[Work], indices: Sequence[int]) -> bytes:
    """One frame's payload: each distinct tuple of texts once, and (which texts, object) pairs."""
    tables: dict[tuple[str, ...], int] = {}
    items = [(tables.setdefault(work[i].texts, len(tables)), work[i].obj) for i in indices]
    return marshal.dumps((list(tables), items))


_SHARED: Pool | None = None
_SHARED_LOCK = threading.Lock()


def shared() -> Pool:
    """The process's pool (workers start only when a look needs one)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = Pool()
        return _SHARED
