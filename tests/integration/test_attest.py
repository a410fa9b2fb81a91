"""Attestations in the registry (lockgate.signing.attest), checked by the real cosign.

``cosign verify-attestation --key`` (pinned cosign v3, no transparency log here, so
``--insecure-ignore-tlog=true``) accepts what ``attest_with_key`` stores; the same
statement is not written twice; reading refuses another key, a copied (replayed)
statement and keeps only attestations for the digest asked about.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import pytest

from lockgate.errors import UsageError, VerificationError
from lockgate.signing import attest, requirements, store
from lockgate.signing.policy import KeyPolicy
from tests.integration.signing_support import client_for, digest_of, push_artifact
from tests.integration.test_signing_cosign import cosign, our_key_pair, registry_ref
from tests.world.registry import Registry


def cosign_verify_attestation(
    ref: str, public: Path, cwd: Path, predicate_type: str
) -> subprocess.CompletedProcess[str]:
    return cosign(
        "verify-attestation",
        "--key",
        str(public),
        "--type",
        predicate_type,
        "--insecure-ignore-tlog=true",
        "--allow-http-registry",
        registry_ref(ref),
        cwd=cwd,
    )


def healthy(cluster: str = "staging", at: dt.datetime | None = None) -> dict[str, object]:
    return attest.health_predicate(
        cluster=cluster,
        sync="app",
        revision="v1.0.0@sha256:0",
        healthy=True,
        at=at or dt.datetime.now(dt.UTC),
        objects={"total": 1, "healthy": 1},
    )


def test_cosign_verify_attestation_accepts_ours(registry: Registry, unique: str, tmp_path: Path) -> None:
    key, _, public = our_key_pair(tmp_path)
    ref = push_artifact(registry, unique)
    written = attest.attest_with_key(ref, key, predicate_type=attest.HEALTHY, predicate=healthy())
    assert written.status == "signed"
    accepted = cosign_verify_attestation(ref, public, tmp_path, attest.HEALTHY)
    assert accepted.returncode == 0, accepted.stderr
    envelope = json.loads(accepted.stdout.splitlines()[0])
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    other_type = cosign_verify_attestation(ref, public, tmp_path, "https://example.com/other/v1")
    assert other_type.returncode != 0
    (tmp_path / "other").mkdir()
    _, _, other_public = our_key_pair(tmp_path / "other")
    refused = cosign_verify_attestation(ref, other_public, tmp_path, attest.HEALTHY)
    assert refused.returncode != 0


def test_same_statement_is_written_once(registry: Registry, unique: str, tmp_path: Path) -> None:
    key, _, _ = our_key_pair(tmp_path)
    ref = push_artifact(registry, unique)
    predicate = healthy()
    first = attest.attest_with_key(ref, key, predicate_type=attest.HEALTHY, predicate=predicate)
    again = attest.attest_with_key(ref, key, predicate_type=attest.HEALTHY, predicate=predicate)
    assert (first.status, again.status) == ("signed", "unchanged")
    assert again.stored_at == first.stored_at
    client = client_for(registry, unique)
    assert len(store.read_bundles(client, unique, digest_of(ref))) == 1
    found = attest.read(client, unique, digest_of(ref), KeyPolicy(key.public_key()))
    assert [a.predicate for a in found.attestations] == [predicate]


def test_reading_refuses_other_keys_and_replayed_statements(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    key, _, _ = our_key_pair(tmp_path)
    a = push_artifact(registry, unique, b"kind: A\n", tag="a")
    b = push_artifact(registry, unique, b"kind: B\n", tag="b")
    attest.attest_with_key(a, key, predicate_type=attest.HEALTHY, predicate=healthy())
    client = client_for(registry, unique)
    # replay: the bundle made for A stored as a referrer of B
    bundle = store.read_bundles(client, unique, digest_of(a))[0].bundle
    assert bundle is not None
    store.write_bundle(
        client, unique, digest_of(b), bundle, predicate_type=attest.HEALTHY, created="2026-01-01T00:00:00Z"
    )
    replayed = attest.read(client, unique, digest_of(b), KeyPolicy(key.public_key()))
    assert replayed.attestations == []
    assert "another artifact" in replayed.refused[0].reason
    other, _, _ = our_key_pair(tmp_path)
    wrong_key = attest.read(client, unique, digest_of(a), KeyPolicy(other.public_key(), "other.pub"))
    assert wrong_key.attestations == [] and "not signed by other.pub" in wrong_key.refused[0].reason
    with pytest.raises(VerificationError, match="no attestation of type"):
        attest.verify_attestation(b, KeyPolicy(key.public_key()), attest.HEALTHY)


def test_requirements_cluster_age_and_failure(registry: Registry, unique: str, tmp_path: Path) -> None:
    key, _, _ = our_key_pair(tmp_path)
    ref = push_artifact(registry, unique)
    client = client_for(registry, unique)
    policy = KeyPolicy(key.public_key(), "staging.pub")
    now = dt.datetime.now(dt.UTC)
    attest.attest_with_key(ref, key, predicate_type=attest.HEALTHY, predicate=healthy(at=now))
    soak = requirements.Requirement(cluster="staging", policy=policy, min_age=3600)
    other = requirements.Requirement(cluster="qa", policy=policy)
    young, elsewhere = requirements.check_requirements(client, unique, digest_of(ref), (soak, other), now=now)
    assert not young.ok and young.reason == "waiting for healthy in staging, 1h soak: 1h left"
    assert not elsewhere.ok and "only for staging" in elsewhere.reason
    (old,) = requirements.check_requirements(
        client, unique, digest_of(ref), (soak,), now=now + dt.timedelta(hours=1, seconds=1)
    )
    assert old.ok
    failing = healthy(at=now) | {"failedAt": attest.timestamp(now)}
    del failing["healthyAt"]
    attest.attest_with_key(ref, key, predicate_type=attest.UNHEALTHY, predicate=failing)
    (excluded,) = requirements.check_requirements(
        client, unique, digest_of(ref), (soak,), now=now + dt.timedelta(hours=2)
    )
    assert excluded.excluded and "failing" in excluded.reason


def test_attesting_needs_a_digest_and_a_uri(registry: Registry, unique: str, tmp_path: Path) -> None:
    key, _, _ = our_key_pair(tmp_path)
    ref = push_artifact(registry, unique)
    with pytest.raises(UsageError, match="by digest"):
        attest.attest_with_key(
            registry.oci(unique, ":latest"), key, predicate_type=attest.HEALTHY, predicate={}
        )
    with pytest.raises(UsageError, match="must be a URI"):
        attest.attest_with_key(ref, key, predicate_type="qa", predicate={})
