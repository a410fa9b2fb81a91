"""The CEL sandbox with real worker processes: an evaluation over its limit is stopped and named,
the other objects are judged by a new worker, and this process's threads never wait for CEL."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from runner.plan.health_exprs import Outcome, Work
from runner.sandbox import pool
from tests.unit.runner.plan.test_cel_cost import ATTACK

READY = "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')"


def conditions(count: int) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "Ready", "status": "True"} for _ in range(count)]}}


@pytest.fixture
def workers() -> Iterator[pool.Pool]:
    made = pool.Pool()
    yield made
    made.close()


def test_objects_are_judged_as_in_process(workers: pool.Pool) -> None:
    said = workers.run(
        [Work(("false", READY), conditions(1)), Work((READY,), {"status": {}}), Work(("false",), {})]
    )
    assert said[0] == Outcome(1, Outcome.TRUE)
    assert said[1].kind == Outcome.ERROR and "conditions" in said[1].said
    assert said[2] == Outcome()


def test_an_evaluation_over_its_limit_is_stopped_and_named_and_the_rest_judged(workers: pool.Pool) -> None:
    beats: list[float] = []
    stop = threading.Event()

    def beat() -> None:  # a thread of this process, as serve's probes are
        while not stop.is_set():
            beats.append(time.monotonic())
            time.sleep(0.01)

    thread = threading.Thread(target=beat)
    thread.start()
    started = time.monotonic()
    try:
        said = workers.run(
            [
                Work(("false", READY), conditions(1)),
                Work(("false", ATTACK), conditions(1)),  # 49 s in one evaluation
                Work(("false", READY), conditions(4_999)),  # seconds: the runtime copies the list
                Work(("false", READY), conditions(2)),
            ]
        )
    finally:
        stop.set()
        thread.join()
    seconds = time.monotonic() - started
    assert said[0] == said[3] == Outcome(1, Outcome.TRUE)
    limits = (
        "ran over the limit of 0.5s of CPU for one evaluation",
        # on a machine so loaded that the worker gets a tenth of a core, the clock's backstop
        "ran over the limit of 5s for one evaluation",
    )
    for stopped in (said[1], said[2]):
        assert (stopped.decided, stopped.kind) == (1, Outcome.LIMIT), stopped
        # the attack may reach the worker's memory limit before its CPU limit
        assert stopped.said in limits or "memory limit" in stopped.said, stopped
    assert seconds < 30, (seconds, said)
    gap = max(b - a for a, b in itertools.pairwise(beats))
    assert gap < 1.0, gap  # the kubelet's probe timeout; it was the whole evaluation (49 s) before


def test_a_worker_over_its_memory_dies_and_its_expression_is_named(
    workers: pool.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A string of 1 GiB asked for at once: over the worker's address space (512 MiB) whatever
    its CPU; the evaluation is named whether the runtime raised or died."""
    monkeypatch.setattr(pool, "EVALUATION_CPU_SECONDS", 60.0)
    monkeypatch.setattr(pool, "EVALUATION_WALL_SECONDS", 60.0)
    grow = "'x'" + f".replace('x', '{'x' * 64}')" * 5 + " == ''"
    (said,) = workers.run([Work(("false", grow), {})])
    assert (said.decided, said.kind) == (1, Outcome.LIMIT), said
    assert "memory limit" in said.said, said


def test_a_worker_that_cannot_start_leaves_the_objects_unjudged(
    workers: pool.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nobody's expression is to blame: Unknown (the wait runs to its timeout naming why), never Failed."""
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    said = workers.run([Work(("true",), {}), Work(("true",), {})])
    assert [o.kind for o in said] == [Outcome.UNJUDGED] * 2
    assert said[0].said.startswith("not judged: the CEL worker could not start"), said[0]


def test_a_look_over_its_budget_leaves_the_rest_unknown_not_failed(
    workers: pool.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No single evaluation ran over its limit: the look's budget ends them all as Unknown."""
    monkeypatch.setattr(pool, "EVALUATION_CPU_SECONDS", 60.0)
    monkeypatch.setattr(pool, "EVALUATION_WALL_SECONDS", 60.0)
    monkeypatch.setattr(pool, "LOOK_CPU_SECONDS", 0.3)
    monkeypatch.setattr(pool, "FRAME", 1)  # the first object's answer comes back before the others run
    said = workers.run([Work(("false", READY), conditions(1)), *[Work((READY,), conditions(4_999))] * 3])
    assert said[0] == Outcome(1, Outcome.TRUE)
    assert [o.kind for o in said[1:]] == [Outcome.UNJUDGED] * 3, said
    assert said[1].said.startswith("not judged: the look's CEL budget"), said[1]
