"""The serve scheduler with in-test ``check`` and ``run`` functions (our own seam, no cluster).

Intervals are a few tens of milliseconds, so each test takes well under a second; the
assertions are on what ran and in which order, with generous time bounds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from lockgate.errors import Abandoned, RegistryError, ShuttingDown
from runner.pipeline.reconcile import Schedule, SyncOptions
from runner.pipeline.result import Result
from runner.pipeline.source import SourceSpec
from runner.serve import scheduler as sched


def sync(name: str, *, interval: float = 0.05, **timing: object) -> SyncOptions:
    return SyncOptions(
        name=name,
        source=SourceSpec(url=f"oci://registry.example/{name}:v1", insecure_skip_verify=True),
        schedule=Schedule(interval=interval, **timing),  # type: ignore[arg-type]
    )


class World:
    """Digests per sync, what ran, and a hook to block or fail a run."""

    def __init__(self) -> None:
        self.digests: dict[str, str] = {}
        self.checks: list[str] = []
        self.runs: list[tuple[str, bool]] = []
        self.lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        self.before_run: Callable[[str, Callable[[], None]], object] = lambda name, guard: None
        self.fail: set[str] = set()

    def check(self, options: SyncOptions) -> str:
        with self.lock:
            self.checks.append(options.name)
        if options.name in self.fail and self.digests.get(options.name) == "registry-down":
            raise RegistryError("registry.example: connection refused")
        return self.digests.get(options.name, "sha256:1")

    def run(self, options: SyncOptions, requested: bool, guard: Callable[[], None]) -> Result:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.runs.append((options.name, requested))
        try:
            result = Result(name=options.name, digest=self.digests.get(options.name, "sha256:1"))
            try:
                self.before_run(options.name, guard)
            except Abandoned as exc:
                result.error = exc
            if options.name in self.fail:
                result.error = RegistryError("boom")
            return result
        finally:
            with self.lock:
                self.active -= 1

    def ran(self, name: str) -> int:
        with self.lock:
            return sum(1 for n, _ in self.runs if n == name)


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


@pytest.fixture
def world() -> World:
    return World()


@pytest.fixture
def make(world: World) -> Iterator[Callable[..., sched.Scheduler]]:
    made: list[sched.Scheduler] = []

    def build(**kw: object) -> sched.Scheduler:
        s = sched.Scheduler(check=world.check, run=world.run, **kw)  # type: ignore[arg-type]
        made.append(s)
        return s

    yield build
    for s in made:
        s.stop(grace=2)


def test_unchanged_digest_costs_a_check_not_a_pass(
    world: World, make: Callable[..., sched.Scheduler]
) -> None:
    s = make()
    s.configure([sync("a")])
    s.start()
    wait_until(lambda: world.checks.count("a") >= 5)
    assert world.ran("a") == 1  # the first pass only
    world.digests["a"] = "sha256:2"
    wait_until(lambda: world.ran("a") == 2)
    (state,) = s.snapshot()
    assert state.ready and state.applied.digest == "sha256:2"


def test_drift_interval_makes_a_full_pass_with_the_same_digest(
    world: World, make: Callable[..., sched.Scheduler]
) -> None:
    s = make()
    s.configure([sync("a", drift_interval=0.15)])
    s.start()
    wait_until(lambda: world.ran("a") >= 3)
    assert world.checks.count("a") > world.ran("a")


def test_one_slow_sync_does_not_delay_the_others(world: World, make: Callable[..., sched.Scheduler]) -> None:
    release = threading.Event()
    world.before_run = lambda name, guard: release.wait(5) if name == "slow" else None
    world.digests["fast"] = "sha256:f0"
    s = make(concurrency=2)
    s.configure([sync("slow"), sync("fast")])
    s.start()
    wait_until(lambda: world.ran("fast") == 1)
    for n in range(1, 4):  # new digests keep arriving for "fast" while "slow" is stuck
        world.digests["fast"] = f"sha256:f{n}"
        wait_until(lambda n=n: world.ran("fast") == n + 1)  # type: ignore[misc]
    assert world.ran("slow") == 1
    release.set()


def test_passes_at_once_stay_within_the_limit(world: World, make: Callable[..., sched.Scheduler]) -> None:
    world.before_run = lambda name, guard: time.sleep(0.05)
    s = make(concurrency=2)
    s.configure([sync(f"s{i}") for i in range(6)])
    s.start()
    wait_until(lambda: all(world.ran(f"s{i}") >= 1 for i in range(6)))
    assert world.max_active == 2


def test_a_burst_of_triggers_is_one_more_pass(world: World, make: Callable[..., sched.Scheduler]) -> None:
    gate = threading.Event()
    world.before_run = lambda name, guard: gate.wait(5)
    s = make()
    s.configure([sync("a", interval=60)])
    s.start()
    wait_until(lambda: world.ran("a") == 1)
    for _ in range(20):
        assert s.trigger("a", "webhook", requested=True)
    gate.set()
    wait_until(lambda: world.ran("a") == 2)
    time.sleep(0.2)
    assert world.ran("a") == 2
    assert world.runs[-1] == ("a", True)  # the person's request reached the pass
    assert not s.trigger("nope", "webhook")


def test_depends_on_waits_for_the_upstream_to_be_ready(
    world: World, make: Callable[..., sched.Scheduler]
) -> None:
    world.fail.add("base")
    s = make()
    s.configure([sync("app", depends_on=("base",)), sync("base")])
    s.start()
    wait_until(lambda: world.ran("base") >= 1)
    time.sleep(0.2)
    assert world.ran("app") == 0
    states = {st.name: st for st in s.snapshot()}
    assert states["app"].reason == "waiting for 'base' to be ready"
    world.fail.clear()
    s.trigger("base", "test")
    s.trigger("app", "test")
    wait_until(lambda: world.ran("app") == 1)
    order = [n for n, _ in world.runs]
    assert order.index("app") > len(order) - 1 - order[::-1].index("base")


def test_readiness_lost_to_failed_checks_comes_back_by_itself_with_its_dependents(
    world: World, make: Callable[..., sched.Scheduler]
) -> None:
    s = make()
    s.configure([sync("base"), sync("app", depends_on=("base",))])
    s.start()
    wait_until(lambda: s.ready("base") and s.ready("app"))
    world.fail.add("base")
    world.digests["base"] = "registry-down"  # the cheap check fails: the registry is away
    wait_until(lambda: not s.ready("base") and not s.ready("app"))
    states = {st.name: st for st in s.snapshot()}
    assert states["base"].reason == "registry.example: connection refused"
    world.fail.clear()
    world.digests["base"] = "sha256:1"  # back, at the digest already applied
    wait_until(lambda: s.ready("base") and s.ready("app"))
    states = {st.name: st for st in s.snapshot()}
    assert states["base"].reason == "applied; digest unchanged"
    assert world.ran("base") == 1 and world.ran("app") == 1  # no pass was needed for that


def test_a_failed_pass_is_not_made_ready_by_a_check(
    world: World, make: Callable[..., sched.Scheduler]
) -> None:
    s = make()
    s.configure([sync("a", drift_interval=3600)])
    s.start()
    wait_until(lambda: s.ready("a"))
    world.fail.add("a")
    s.trigger("a", "test", requested=True)  # a full pass at the same digest, which fails
    wait_until(lambda: world.ran("a") == 2)
    wait_until(lambda: world.checks.count("a") >= 5)
    (state,) = s.snapshot()
    assert not state.ready and state.reason == "boom"


def test_first_pass_is_said_once_and_retries_say_so(
    world: World, make: Callable[..., sched.Scheduler]
) -> None:
    reasons: list[str] = []
    world.fail.add("a")
    s = make(observe=lambda outcome: reasons.append(outcome.reason) if outcome.result else None)
    s.configure([sync("a", retry_interval=0.02)])
    s.start()
    wait_until(lambda: len(reasons) >= 3)
    world.fail.clear()
    wait_until(lambda: s.ready("a"))
    s.configure([replace(sync("a", retry_interval=0.02), force=True)])  # new settings: a full pass
    wait_until(lambda: reasons[-1] == "configuration changed")
    assert reasons.count("first pass") == 1 and reasons[0] == "first pass"
    assert set(reasons[1:-1]) == {"retry: the last pass did not succeed"}


def test_failures_back_off_up_to_the_interval(world: World, make: Callable[..., sched.Scheduler]) -> None:
    world.fail.add("a")
    s = make()
    s.configure([sync("a", interval=0.4, retry_interval=0.02)])
    s.start()
    wait_until(lambda: world.ran("a") >= 5, timeout=10)
    (state,) = s.snapshot()
    assert state.failures >= 5 and not state.ready and state.reason == "boom"


def test_stop_abandons_a_pass_at_its_next_write(world: World, make: Callable[..., sched.Scheduler]) -> None:
    started = threading.Event()
    outcome: list[str] = []

    def long_pass(name: str, guard: Callable[[], None]) -> None:
        started.set()
        for _ in range(500):
            guard()  # the pass's check before each write
            time.sleep(0.01)

    world.before_run = long_pass
    s = make(observe=lambda o: outcome.append(o.outcome))
    s.configure([sync("a", interval=60)])
    s.start()
    assert started.wait(5)
    t0 = time.monotonic()
    assert s.stop(grace=3)
    assert time.monotonic() - t0 < 1.0
    # stop returns once the last outcome is observed (logged): nothing is logged after "stopped"
    assert outcome == [sched.ABANDONED]


def test_the_guard_says_the_runner_is_shutting_down(make: Callable[..., sched.Scheduler]) -> None:
    s = make()
    s.guard()
    s.stop(grace=0.1)
    with pytest.raises(ShuttingDown, match="shutting down"):
        s.guard()


def test_reconfigure_keeps_timing_of_unchanged_syncs(
    world: World, make: Callable[..., sched.Scheduler]
) -> None:
    s = make()
    a, b = sync("a", interval=60), sync("b", interval=60)
    s.configure([a, b])
    s.start()
    wait_until(lambda: world.ran("a") == 1 and world.ran("b") == 1)
    removed = s.configure([a, replace(b, prune=True), sync("c", interval=60)])
    assert removed == []
    wait_until(lambda: world.ran("b") == 2 and world.ran("c") == 1)
    time.sleep(0.1)
    assert world.ran("a") == 1
    assert s.configure([a]) == ["b", "c"]
    assert s.names() == ["a"]


def test_suspended_and_foreign_syncs_do_not_run(world: World, make: Callable[..., sched.Scheduler]) -> None:
    s = make(owns=lambda name: name != "theirs")
    s.configure([sync("paused", suspend=True), sync("theirs"), sync("mine")])
    s.start()
    wait_until(lambda: world.ran("mine") == 1)
    time.sleep(0.15)
    assert world.ran("paused") == 0 and world.ran("theirs") == 0
    states = {st.name: st.reason for st in s.snapshot()}
    assert states["paused"] == "suspended"
    assert states["theirs"] == "run by another replica"
