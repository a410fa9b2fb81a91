"""``Inventory.health`` and ``Inventory.verified_by``: always the revision the parent shows.

The history's newest entry may be another digest (the pass of the new one is still waiting,
or failed before it was recorded as applied); its verdict is never shown for the digest shown.
"""

from __future__ import annotations

import pytest

from runner.plan.attempt import Attempt, Result
from runner.plan.history import Entry, Outcome, Summary
from runner.plan.inventory import Inventory

T0, T1 = "2030-01-01T00:00:00Z", "2030-01-01T00:05:00Z"
OLD = Entry("sha256:1", "v1@sha256:1", "key sha256:aa", Outcome.SUCCEEDED, Summary.HEALTHY, T0)
NEW_ABANDONED = Entry("sha256:2", "v2@sha256:2", "key sha256:bb", Outcome.ABANDONED, Summary.UNKNOWN, T1)
NEW_FAILED = Entry("sha256:2", "v2@sha256:2", "key sha256:bb", Outcome.FAILED, Summary.UNHEALTHY, T1)
WAITING = Attempt(
    Result.PROGRESSING, T1, "v2@sha256:2", "sha256:2", "Progressing", "1 configured", 0, "key sha256:bb"
)


@pytest.mark.parametrize(
    ("digest", "history", "last", "health", "signer"),
    [
        pytest.param("sha256:1", [OLD], None, "Healthy", "key sha256:aa", id="healthy"),
        # applied, still waiting: the old release's Healthy is not the new one's
        pytest.param("sha256:2", [OLD], WAITING, "Progressing", "key sha256:bb", id="waiting"),
        # the wait was interrupted: the digest's own verdict, Unknown
        pytest.param("sha256:2", [NEW_ABANDONED, OLD], None, "Unknown", "key sha256:bb", id="abandoned"),
        pytest.param("sha256:2", [NEW_FAILED, OLD], None, "Unhealthy", "key sha256:bb", id="unhealthy"),
        # a new digest refused before it was applied: the revision shown is still v1, healthy
        pytest.param("sha256:1", [NEW_FAILED, OLD], None, "Healthy", "key sha256:aa", id="refused-new"),
        # a parent that has no entry for its digest (the history rolled over): not known
        pytest.param("sha256:3", [NEW_FAILED, OLD], None, "Unknown", "", id="no-entry"),
        pytest.param("", [], None, "Unknown", "", id="never-applied"),
    ],
)
def test_health_and_signer_are_the_revision_shown(
    digest: str, history: list[Entry], last: Attempt | None, health: str, signer: str
) -> None:
    inventory = Inventory(
        name="app", namespace="lockgate-system", digest=digest, history=history, last_attempt=last
    )
    assert inventory.health == health
    assert inventory.verified_by == signer


def test_a_waiting_attempt_keeps_its_signer_through_json() -> None:
    assert Attempt.from_json(WAITING.to_json()) == WAITING
    assert "verifiedBy" not in Attempt(Result.SUCCEEDED, T0).to_json()
