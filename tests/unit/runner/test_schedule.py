"""The scheduler's arithmetic: jitter, backoff, when a full pass is due, dependencies."""

from __future__ import annotations

import pytest

from runner.plan import schedule


def test_success_interval_is_jittered_within_five_percent() -> None:
    low = schedule.next_delay(interval=60, retry_interval=None, failures=0, random=lambda: 0.0)
    high = schedule.next_delay(interval=60, retry_interval=None, failures=0, random=lambda: 0.999999)
    mid = schedule.next_delay(interval=60, retry_interval=None, failures=0, random=lambda: 0.5)
    assert low == pytest.approx(57.0)
    assert high == pytest.approx(63.0, abs=1e-3)
    assert mid == pytest.approx(60.0)


def test_retry_backs_off_exponentially_and_caps_at_the_interval() -> None:
    delays = [
        schedule.next_delay(interval=300, retry_interval=10, failures=n, random=lambda: 0.5)
        for n in range(1, 8)
    ]
    assert delays == [10, 20, 40, 80, 160, 300, 300]


def test_retry_defaults_to_the_interval() -> None:
    assert schedule.next_delay(interval=120, retry_interval=None, failures=3, random=lambda: 0.5) == 120


def test_a_retry_interval_longer_than_the_interval_is_kept() -> None:
    assert schedule.next_delay(interval=60, retry_interval=90, failures=1, random=lambda: 0.5) == 90


def reason(
    digest: str,
    applied: schedule.Applied,
    *,
    now: float = 200.0,
    requested: bool = False,
    rejected: tuple[str, ...] = (),
) -> str | None:
    return schedule.full_pass_reason(
        current_digest=digest,
        applied=applied,
        now=now,
        drift_interval=3600.0,
        requested=requested,
        rejected=rejected,
    )


def test_full_pass_reasons() -> None:
    applied = schedule.Applied("sha256:a", at=100.0)
    assert reason("sha256:a", applied) is None
    assert reason("sha256:b", applied) == "new digest"
    assert reason("sha256:a", schedule.Applied()) == "first pass"
    assert reason("sha256:a", applied, now=3700.0) == "drift interval"
    assert reason("sha256:a", applied, requested=True) == "requested"


def test_with_nothing_applied_the_reason_says_why() -> None:
    def unapplied(*, attempted: bool = False, reconfigured: bool = False) -> str | None:
        return schedule.full_pass_reason(
            current_digest="sha256:a",
            applied=schedule.Applied(),
            now=0.0,
            drift_interval=60.0,
            requested=False,
            attempted=attempted,
            reconfigured=reconfigured,
        )

    assert unapplied() == "first pass"
    assert unapplied(attempted=True) == "retry: the last pass did not succeed"
    assert unapplied(reconfigured=True) == "configuration changed"
    assert unapplied(attempted=True, reconfigured=True) == "retry: the last pass did not succeed"


def test_a_rolled_back_digest_waits_for_a_person_or_a_new_digest() -> None:
    good = schedule.Applied("sha256:good", at=0.0)
    assert reason("sha256:bad", good, rejected=("sha256:bad",)) is None
    assert reason("sha256:bad", good, rejected=("sha256:bad",), requested=True) == "requested"
    assert reason("sha256:new", good, rejected=("sha256:bad",)) == "new digest"


def test_waiting_for_lists_unready_dependencies_in_order() -> None:
    ready = {"a": True, "b": False}
    assert schedule.waiting_for(["a", "b", "c"], lambda n: ready.get(n, False)) == ["b", "c"]
    assert schedule.waiting_for([], lambda n: False) == []
