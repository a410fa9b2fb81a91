"""Quorum promotion decided over verified attestations: counts, soaks, failures, messages (issue 24).

The input is what ``attest.read`` returns for one digest (verified attestations and refusals,
plain values); the world tests (tests/integration/test_quorum.py) make them with real
signatures in the registry.
"""

from __future__ import annotations

import datetime as dt

import pytest

from lockgate.signing import attest, quorum, requirements
from lockgate.signing.quorum import State

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
HOUR = 3600.0


def healthy(cluster: str, *, ago: float) -> attest.Attestation:
    at = attest.timestamp(NOW - dt.timedelta(seconds=ago))
    return attest.Attestation("sha256:d", attest.HEALTHY, {"cluster": cluster, "healthyAt": at}, "k", "m")


def failing(cluster: str, *, ago: float = 60) -> attest.Attestation:
    at = attest.timestamp(NOW - dt.timedelta(seconds=ago))
    return attest.Attestation("sha256:d", attest.UNHEALTHY, {"cluster": cluster, "failedAt": at}, "k", "m")


def forged(cluster: str) -> attest.Refusal:
    return attest.Refusal("referrer sha256:f: not signed by a.pub, b.pub", attest.HEALTHY, cluster)


def need(*entries: str, at_least: int, failures: int = 0, own: str | None = None) -> quorum.Quorum:
    return quorum.Quorum(quorum.Selection(entries, own=own), min_clusters=at_least, max_failures=failures)


def test_the_selection_matches_names_and_globs_but_never_its_own_cluster() -> None:
    selection = quorum.Selection(("staging-*", "qa-[12]", "perf-?", "canary"), own="staging-eu-1")
    matched = [
        c
        for c in ("staging-eu-1", "staging-eu-2", "Staging-x", "qa-1", "qa-3", "perf-a", "perf-ab", "canary")
        if selection.matches(c)
    ]
    assert matched == ["staging-eu-2", "qa-1", "perf-a", "canary"]
    assert selection.names == ("canary",) and not selection.closed
    assert quorum.Selection(("a", "b", "a"), own="b").names == ("a",)


def test_three_of_five_healthy_for_an_hour_names_the_missing() -> None:
    found = attest.Found(
        [healthy(c, ago=2 * HOUR) for c in ("staging-eu-1", "staging-us-1", "staging-us-2")]
        + [healthy("staging-eu-2", ago=HOUR / 3), healthy("production-1", ago=2 * HOUR)],
        [],
    )
    known = {"staging-ap-1", "staging-eu-2", "production-1"}
    counted = quorum.tally(need("staging-*", at_least=5), found, now=NOW, min_age=HOUR, known=known)
    assert not counted.met and not counted.refused
    assert counted.healthy == ("staging-eu-1", "staging-us-1", "staging-us-2")
    assert counted.reason == (
        "3/5 of staging-* healthy for 1h; missing staging-ap-1, staging-eu-2 (40m left)"
    )
    assert counted.remaining is None  # soaking alone does not make five
    four = quorum.tally(need("staging-*", at_least=4), found, now=NOW, min_age=HOUR, known=known)
    assert not four.met and four.remaining == pytest.approx(40 * 60)
    three = quorum.tally(need("staging-*", at_least=3), found, now=NOW, min_age=HOUR, known=known)
    assert three.met and three.reason == ""


def test_a_pattern_no_cluster_matches_waits_and_says_so() -> None:
    found = attest.Found([healthy("qa", ago=HOUR), healthy("prod-1", ago=HOUR)], [])
    counted = quorum.tally(need("staging-*", at_least=1), found, now=NOW)
    assert not counted.met and not counted.refused
    assert (
        counted.reason
        == "0/1 of staging-* healthy; no attesting cluster matches staging-* (attested: prod-1, qa)"
    )


def test_the_same_cluster_attesting_twice_counts_once_from_its_first_healthyat() -> None:
    found = attest.Found([healthy("staging-a", ago=2 * HOUR), healthy("staging-a", ago=10)], [])
    counted = quorum.tally(need("staging-*", at_least=2), found, now=NOW, min_age=HOUR)
    assert not counted.met and counted.healthy == ("staging-a",)
    assert counted.reason == "1/2 of staging-* healthy for 1h"
    (state,) = quorum.cluster_states(found, now=NOW, min_age=HOUR).values()
    assert state.state is State.HEALTHY and state.since == NOW - dt.timedelta(hours=2)


def test_a_forged_attestation_does_not_count_and_is_named() -> None:
    found = attest.Found([healthy("staging-a", ago=HOUR)], [forged("staging-b"), forged("elsewhere")])
    counted = quorum.tally(need("staging-*", at_least=2), found, now=NOW, signers="Secret/ns/staging-keys")
    assert counted.healthy == ("staging-a",)
    assert counted.reason == (
        "1/2 of staging-* healthy; missing staging-b (refused: not signed by Secret/ns/staging-keys)"
    )


def test_a_healthyat_in_the_future_does_not_count_as_soaked() -> None:
    ahead = healthy("staging-b", ago=-2 * HOUR)  # its clock is two hours fast
    found = attest.Found([healthy("staging-a", ago=HOUR), ahead], [])
    counted = quorum.tally(need("staging-*", at_least=2), found, now=NOW)
    assert not counted.met and counted.healthy == ("staging-a",)
    assert "staging-b (healthyAt 2026-03-01T14:00:00Z is in the future: clock skew)" in counted.reason
    # the rounding to the second is no skew: a second ahead counts (without a soak)
    just_written = attest.Found([healthy("staging-a", ago=-1)], [])
    assert quorum.tally(need("staging-*", at_least=1), just_written, now=NOW).met


@pytest.mark.parametrize(
    ("name", "requirement", "attestations", "met", "refused", "reason"),
    [
        (
            "one failure refuses by default",
            need("staging-*", at_least=1),
            [healthy("staging-a", ago=HOUR), failing("staging-b")],
            False,
            True,
            "refused: 1 of staging-* attested failing their health checks (maxFailures 0): "
            "staging-b at 2026-03-01T11:59:00Z",
        ),
        (
            "a tolerated failure is said, and does not count as healthy",
            need("staging-*", at_least=2, failures=1),
            [healthy("staging-a", ago=HOUR), failing("staging-b")],
            False,
            False,
            "1/2 of staging-* healthy; failing staging-b at 2026-03-01T11:59:00Z (maxFailures 1)",
        ),
        (
            "failing after healthy is failing",
            need("staging-*", at_least=1, failures=1),
            [healthy("staging-a", ago=HOUR), failing("staging-a")],
            False,
            False,
            "0/1 of staging-* healthy; failing staging-a at 2026-03-01T11:59:00Z (maxFailures 1)",
        ),
        (
            "names only: too few left is refused",
            need("eu-1", "eu-2", "us-1", at_least=3, failures=1),
            [healthy("eu-1", ago=HOUR), failing("us-1")],
            False,
            True,
            "refused: us-1 at 2026-03-01T11:59:00Z attested failing, so at most 2 of eu-1, eu-2, us-1 "
            "can be healthy, not 3",
        ),
        (
            "names never seen are missing",
            need("canary", "eu-1", at_least=2),
            [healthy("canary", ago=HOUR)],
            False,
            False,
            "1/2 of canary, eu-1 healthy; missing eu-1",
        ),
        (
            "a failure outside the selection does not matter",
            need("production-canary", at_least=1),
            [healthy("production-canary", ago=HOUR), failing("staging-a")],
            True,
            False,
            "",
        ),
        (
            "its own cluster never counts, nor fails it",
            need("production-*", at_least=1, own="production-eu-1"),
            [healthy("production-eu-1", ago=HOUR), failing("production-eu-1")],
            False,
            False,
            "0/1 of production-* healthy; no attesting cluster matches production-*",
        ),
    ],
)
def test_failures_and_names(
    name: str,
    requirement: quorum.Quorum,
    attestations: list[attest.Attestation],
    met: bool,
    refused: bool,
    reason: str,
) -> None:
    counted = quorum.tally(requirement, attest.Found(attestations, []), now=NOW)
    assert (counted.met, counted.refused, counted.reason) == (met, refused, reason), name


def test_a_long_list_of_missing_clusters_is_cut() -> None:
    known = {f"edge-{n:03}" for n in range(25)}
    counted = quorum.tally(need("edge-*", at_least=20), attest.Found([], []), now=NOW, known=known)
    assert counted.reason.startswith("0/20 of edge-* healthy; missing edge-000, edge-001,")
    assert counted.reason.endswith("edge-009 and 15 more")


def test_the_requirement_says_the_quorum_and_evaluate_excludes_a_refused_digest() -> None:
    from lockgate.signing import keys
    from lockgate.signing.policy import KeyPolicy

    public = keys.load_private_key(keys.generate_key_pair(b"pw").private_pem, b"pw").public_key()
    requirement = requirements.Requirement(
        cluster=None,
        policy=KeyPolicy(public, "fleet.pub"),
        min_age=HOUR,
        quorum=need("staging-*", at_least=3),
    )
    assert requirement.describe() == "3 of staging-* healthy for 1h"
    verdict = requirements.evaluate(requirement, attest.Found([failing("staging-a")], []), now=NOW)
    assert not verdict.ok and verdict.excluded and verdict.reason.startswith("refused: 1 of staging-*")
