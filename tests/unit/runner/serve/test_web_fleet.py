"""The status page's fleet, its pure parts: the digest a waiting sync wants, and how long a
sync's view is kept (the registry reads themselves are tested against the world, in
tests/integration/test_web_status_fleet.py)."""

from __future__ import annotations

import pytest

from lockgate.errors import UsageError
from lockgate.signing import attest, quorum, requirements
from runner.serve.web import fleet, view

HEX = "ab" * 32


@pytest.mark.parametrize(
    ("waiting", "digest"),
    [
        (f"1.1.0@sha256:{HEX}: waiting for healthy in staging", f"sha256:{HEX}"),
        (f"sha256:{HEX}: waiting for healthy in staging, 1h soak: 59m left", f"sha256:{HEX}"),
        ("", ""),
        ("waiting for something else", ""),
        (f"1.1.0@sha256:{HEX[:10]}: truncated", ""),
    ],
)
def test_the_digest_a_waiting_sync_wants(waiting: str, digest: str) -> None:
    assert view.waiting_digest(waiting) == digest


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_view_is_kept_until_the_interval_passes_or_the_digests_change() -> None:
    asked: list[str] = []

    def no_policy(sync: str) -> fleet.FleetSource | None:
        asked.append(sync)
        return None

    clock = Clock()
    cache = fleet.FleetCache(no_policy, clock=clock)
    assert cache.view("app", current="sha256:1", wanted="") is None
    assert cache.view("app", current="sha256:1", wanted="") is None
    assert asked == ["app"]
    clock.now += fleet.RETRY - 1
    cache.view("app", current="sha256:1", wanted="")
    assert asked == ["app"]
    clock.now += 2
    cache.view("app", current="sha256:1", wanted="")
    assert asked == ["app", "app"]
    cache.view("app", current="sha256:1", wanted="sha256:2")  # a new wanted digest: read now
    cache.view("other", current="sha256:1", wanted="")
    assert asked == ["app", "app", "app", "other"]


def test_keys_that_cannot_be_read_are_shown_and_tried_again() -> None:
    asked: list[str] = []

    def unreadable(sync: str) -> fleet.FleetSource | None:
        asked.append(sync)
        raise UsageError("Secret/run/fleet-keys (spec.verify.attestations[0].secretRef.name): not found")

    clock = Clock()
    cache = fleet.FleetCache(unreadable, clock=clock)
    shown = cache.view("app", current="sha256:1", wanted="")
    assert shown is not None and shown["digests"] == [] and shown["clusters"] == []
    assert shown["error"] == (
        "cannot read the attesters' keys: Secret/run/fleet-keys "
        "(spec.verify.attestations[0].secretRef.name): not found"
    )
    assert cache.view("app", current="sha256:1", wanted="") == shown and asked == ["app"]
    clock.now += fleet.RETRY
    cache.view("app", current="sha256:1", wanted="")
    assert asked == ["app", "app"]


def test_a_quorum_waits_for_its_names_and_every_attesting_cluster_its_patterns_select() -> None:
    policy = keys_policy()
    selection = quorum.Selection(entries=("staging-*", "qa"), own="staging-eu-1")
    wants = requirements.Requirement(
        cluster=None, policy=policy, quorum=quorum.Quorum(selection=selection, min_clusters=2)
    )
    attested = ["staging-us-1", "staging-eu-1", "production", "staging-ap-1"]
    # the runner's own cluster never counts, so it is no row either
    assert fleet.requirement_clusters(wants, attested) == ["qa", "staging-ap-1", "staging-us-1"]
    one = requirements.Requirement(cluster="staging", policy=policy)
    assert fleet.requirement_clusters(one, attested) == ["staging"]


def keys_policy() -> attest.AttestationPolicy:
    from cryptography.hazmat.primitives.asymmetric import ec

    from lockgate.signing.policy import KeyPolicy

    return KeyPolicy(ec.generate_private_key(ec.SECP256R1()).public_key())
