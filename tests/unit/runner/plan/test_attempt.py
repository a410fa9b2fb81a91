"""``runner.plan.attempt``: the last attempt, what holds a sync, and its Ready condition."""

from __future__ import annotations

import pytest

from runner.plan.attempt import (
    ARTIFACT_FAILED,
    DEPENDENCY_NOT_READY,
    SUSPENDED,
    Attempt,
    Held,
    Readiness,
    Result,
    readiness,
    settle,
)

T0, T1 = "2030-01-01T00:00:00Z", "2030-01-01T00:05:00Z"
OK = Attempt(Result.SUCCEEDED, T0, "v1@sha256:1", "sha256:1", "ReconciliationSucceeded", "2 created")
REFUSED = Attempt(Result.FAILED, T0, "v2@sha256:2", "sha256:2", "VerificationFailed", "not signed", 4)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, Readiness("True", "ReconciliationSucceeded", "Applied revision: v1@sha256:1")),
        ({"attempt": REFUSED}, Readiness("False", "VerificationFailed", "not signed")),
        ({"health": "Unhealthy"}, Readiness("False", "HealthCheckFailed", "v1@sha256:1 is not healthy")),
        (
            {"held": Held(DEPENDENCY_NOT_READY, "waiting for 'db' to be ready")},
            Readiness("False", "DependencyNotReady", "waiting for 'db' to be ready"),
        ),
        (
            {"held": Held(ARTIFACT_FAILED, "connection refused")},
            Readiness("False", "ArtifactFailed", "connection refused"),
        ),
        # suspended: the Ready condition stays what the last pass left (shown apart)
        (
            {"held": Held(SUSPENDED, "suspended")},
            Readiness("True", "ReconciliationSucceeded", "Applied revision: v1@sha256:1"),
        ),
        (
            {"attempt": Attempt(Result.ABANDONED, T0, message="shutting down", reason="Abandoned")},
            Readiness("Unknown", "Abandoned", "shutting down"),
        ),
        (
            {"attempt": Attempt(Result.PROGRESSING, T0, "v1@sha256:1")},
            Readiness(
                "Unknown", "Progressing", "applied v1@sha256:1; waiting for its objects to become healthy"
            ),
        ),
        ({"attempt": None}, Readiness("False", "NotRunYet", "no pass has run yet")),
        # an older runner's parent: its last result stands for the attempt
        (
            {"attempt": None, "legacy_status": "Succeeded"},
            Readiness("True", "ReconciliationSucceeded", "Applied revision: v1@sha256:1"),
        ),
        ({"attempt": None, "legacy_status": "Exploded"}, Readiness("False", "Failed", "")),
        (
            {"waiting": "v2@sha256:2: waiting for healthy in staging"},
            Readiness(
                "True",
                "ReconciliationSucceeded",
                "Applied revision: v1@sha256:1\nv2@sha256:2: waiting for healthy in staging",
            ),
        ),
    ],
    ids=[
        "applied",
        "last-attempt-failed",
        "unhealthy",
        "dependency-not-ready",
        "source-unreachable",
        "suspended",
        "abandoned",
        "progressing",
        "never-ran",
        "legacy-succeeded",
        "legacy-unknown-word",
        "waiting-for-attestations",
    ],
)
def test_readiness(fields: dict[str, object], expected: Readiness) -> None:
    given: dict[str, object] = {"attempt": OK, "held": None, "health": "Healthy", "revision": "v1@sha256:1"}
    given.update(fields)
    assert readiness(**given) == expected  # type: ignore[arg-type]


def test_an_outcome_told_again_keeps_its_record_so_nothing_is_written() -> None:
    later = Attempt(Result.SUCCEEDED, T1, "v1@sha256:1", "sha256:1", "ReconciliationSucceeded", "3 unchanged")
    assert settle(OK, later) is OK  # a success of one digest is one outcome
    again = Attempt(Result.FAILED, T1, "v2@sha256:2", "sha256:2", "VerificationFailed", "not signed", 4)
    assert settle(REFUSED, again) is REFUSED
    other = Attempt(
        Result.FAILED, T1, "v2@sha256:2", "sha256:2", "VerificationFailed", "signed by someone else", 4
    )
    assert settle(REFUSED, other) is other
    assert settle(None, OK) is OK


def test_records_round_trip_and_read_leniently() -> None:
    assert Attempt.from_json(REFUSED.to_json()) == REFUSED
    assert Attempt.from_json({"result": "Exploded", "exitCode": "x"}) == Attempt(Result.FAILED, "")
    assert Attempt.from_json({}) is None and Attempt.from_json("nonsense") is None
    hold = Held(ARTIFACT_FAILED, "connection refused", T0)
    assert Held.from_json(hold.to_json()) == hold and Held.from_json(None) is None
    assert Readiness("False", "X", "a\nb").to_json()["summary"] == "a; b"
