"""Pure parts of the transport: challenge parsing and the retry delay."""

from __future__ import annotations

import email.utils
import time

from lockgate.registry.transport import RetryPolicy, parse_challenge


def test_parses_bearer_challenge() -> None:
    scheme, params = parse_challenge(
        'Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:org/app:pull,push"'
    )
    assert scheme == "bearer"
    assert params == {
        "realm": "https://ghcr.io/token",
        "service": "ghcr.io",
        "scope": "repository:org/app:pull,push",
    }


def test_parses_basic_challenge() -> None:
    assert parse_challenge('Basic realm="lockgate-test"') == ("basic", {"realm": "lockgate-test"})


def test_backoff_doubles_and_is_capped() -> None:
    policy = RetryPolicy(attempts=5, backoff=0.5, cap=3.0)
    assert [policy.delay(n, None) for n in range(4)] == [0.5, 1.0, 2.0, 3.0]


def test_retry_after_seconds_and_date_are_honoured() -> None:
    policy = RetryPolicy(cap=30.0)
    assert policy.delay(0, "7") == 7.0
    later = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8.0 <= policy.delay(0, later) <= 10.5
    assert policy.delay(0, "120") == 30.0
    assert policy.delay(1, "garbage-date") == 1.0
