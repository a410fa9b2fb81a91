"""runner.serve.metrics: ``lockgate_promotion_waiting`` follows the full passes of a promoted sync."""

from __future__ import annotations

from runner.pipeline.result import Result
from runner.serve.metrics import Metrics
from tests.unit.runner.serve.test_metrics import SYNC, value

WAITING = "1.1.0@sha256:ab: waiting for healthy in staging, 1h soak: 23m left"


def test_waiting_is_one_while_a_pass_waits_and_zero_once_it_applies() -> None:
    metrics = Metrics()
    metrics.observe_pass(SYNC, Result(name="web", namespace="lockgate", waiting=WAITING), "skipped")
    assert value(metrics, "lockgate_promotion_waiting", name="web", namespace="lockgate") == 1
    # a cheap check (no digest, no waiting) knows nothing of attestations: the gauge stays
    metrics.observe_pass(SYNC, Result(name="web", namespace="lockgate"), "skipped")
    assert value(metrics, "lockgate_promotion_waiting", name="web", namespace="lockgate") == 1
    applied = Result(name="web", namespace="lockgate", digest="sha256:" + "a" * 64)
    metrics.observe_pass(SYNC, applied, "applied")
    assert value(metrics, "lockgate_promotion_waiting", name="web", namespace="lockgate") == 0
    metrics.forget("web", "lockgate")
    assert value(metrics, "lockgate_promotion_waiting", name="web", namespace="lockgate") is None
