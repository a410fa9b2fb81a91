"""The serve scheduler and a sync waiting for attestations (promotion): not ready, not rejected,
looked at again at its interval until a pass applies."""

from __future__ import annotations

from collections.abc import Callable

from runner.pipeline.reconcile import SyncOptions
from runner.pipeline.result import Result
from runner.serve import scheduler as sched
from tests.unit.runner.test_scheduler import World, make, sync, wait_until, world

__all__ = ["make", "world"]  # the fixtures, shared with test_scheduler

WAITING = "1.0.0@sha256:1: waiting for healthy in staging, 1h soak: 59m left"


def test_a_waiting_pass_is_retried_at_the_interval_until_it_applies(
    world: World, make: Callable[..., sched.Scheduler]
) -> None:
    promoted = {"now": False}
    plain_run = world.run

    def run(options: SyncOptions, requested: bool, guard: Callable[[], None]) -> Result:
        result = plain_run(options, requested, guard)
        if not promoted["now"]:
            return Result(name=options.name, waiting=WAITING, skipped=WAITING)
        return result

    s = sched.Scheduler(check=world.check, run=run)
    try:
        s.configure([sync("a")])
        s.start()
        wait_until(lambda: world.ran("a") >= 3)  # the same digest, passed again: nothing was applied
        (state,) = s.snapshot()
        assert not state.ready and state.reason == WAITING and state.rejected == ()
        promoted["now"] = True
        wait_until(lambda: s.snapshot()[0].ready)
        ran = world.ran("a")
        wait_until(lambda: world.checks.count("a") >= 3 + ran)
        assert world.ran("a") == ran  # applied: back to cheap checks
    finally:
        s.stop(grace=2)
