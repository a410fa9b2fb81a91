"""``cosign verify --key`` on an artifact lockgate signed with a key and then attested (real cosign).

cosign v3.1's ``verify`` asks the referrers first (``cmd/cosign/cli/verify/verify.go``): once
any Sigstore bundle refers to the digest, it verifies only the bundles and never reads the
legacy ``sha256-<hex>.sig`` tag. A health attestation is such a bundle, signed by the
runner's key, so a key signature kept only in the legacy layout stopped verifying with
cosign as soon as a runner attested the digest. lockgate's key signatures are therefore
written in both of cosign's layouts; these tests run the world's cosign against them.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from lockgate.errors import VerificationError
from lockgate.signing import attest, keys, layout, sign, store, verify
from lockgate.signing.policy import KeyPolicy
from tests.integration.signing_support import client_for, digest_of, push_artifact
from tests.integration.test_attest import cosign_verify_attestation
from tests.integration.test_signing_cosign import (
    cosign,
    cosign_sign,
    cosign_verify,
    our_key_pair,
    registry_ref,
)
from tests.world.registry import Registry


def attest_healthy(ref: str, runner_key: keys.PrivateKey) -> None:
    """What the runner writes after a healthy pass (``runner.pipeline.attesting.write``)."""
    predicate = attest.health_predicate(
        cluster="staging",
        sync="app",
        revision=ref,
        healthy=True,
        at=dt.datetime.now(dt.UTC),
        objects={"total": 1, "current": 1},
    )
    written = attest.attest_with_key(ref, runner_key, predicate_type=attest.HEALTHY, predicate=predicate)
    assert written.status == "signed"


def test_cosign_verifies_our_key_signature_after_a_runner_attested_health(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    (tmp_path / "ci").mkdir()
    (tmp_path / "runner").mkdir()
    ci_key, _, ci_public = our_key_pair(tmp_path / "ci")
    runner_key, _, runner_public = our_key_pair(tmp_path / "runner")
    ref = push_artifact(registry, unique)
    assert sign.sign_with_key(ref, ci_key).status == "signed"
    attest_healthy(ref, runner_key)

    accepted = cosign_verify(ref, ci_public, tmp_path)
    assert accepted.returncode == 0, accepted.stderr
    claims = json.loads(accepted.stdout)
    assert [c["critical"]["image"]["docker-manifest-digest"] for c in claims] == [digest_of(ref)]
    (tmp_path / "other").mkdir()
    refused = cosign_verify(ref, our_key_pair(tmp_path / "other")[2], tmp_path)
    assert refused.returncode != 0

    # the health attestation is read by cosign as before, and by lockgate
    attested = cosign_verify_attestation(ref, runner_public, tmp_path, attest.HEALTHY)
    assert attested.returncode == 0, attested.stderr
    found = attest.verify_attestation(ref, KeyPolicy(runner_key.public_key()), attest.HEALTHY)
    assert [a.predicate["cluster"] for a in found] == ["staging"]
    # lockgate verify still reports the legacy signature, which Flux and cosign v2 read
    result = verify.verify(ref, KeyPolicy.from_file(ci_public))
    assert result.signature.startswith(f"signature 1 at {layout.signature_tag(digest_of(ref))}")
    # cosign v3's verify takes a bundle of any predicate type for a signature (docs/promotion.md
    # says to check the runner's key with verify-attestation); lockgate's counts signatures only
    assert cosign_verify(ref, runner_public, tmp_path).returncode == 0
    with pytest.raises(VerificationError, match="predicate type"):
        verify.verify(ref, KeyPolicy.from_file(runner_public))


def test_signing_again_adds_the_bundle_to_a_legacy_only_signature(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    """An artifact signed in the legacy layout only (lockgate before this fix, or
    ``cosign sign --new-bundle-format=false``) and then attested: signing it again with the
    same key adds the bundle, not a second ``.sig`` layer, and cosign verifies it again."""
    (tmp_path / "runner").mkdir()
    ci_key, ci_private, ci_public = our_key_pair(tmp_path)
    runner_key = our_key_pair(tmp_path / "runner")[0]
    ref = push_artifact(registry, unique)
    cosign_sign(ref, ci_private, tmp_path, "--new-bundle-format=false")
    attest_healthy(ref, runner_key)
    assert cosign_verify(ref, ci_public, tmp_path).returncode != 0
    # what docs/promotion.md offers until then: cosign's flag to read the legacy layout
    legacy_only = cosign(
        "verify", "--key", str(ci_public), "--new-bundle-format=false", "--insecure-ignore-tlog=true",
        "--allow-http-registry", registry_ref(ref), cwd=tmp_path,
    )
    assert legacy_only.returncode == 0, legacy_only.stderr

    again = sign.sign_with_key(ref, ci_key)
    assert again.status == "signed"
    assert again.stored_at == registry.oci(unique, ":" + layout.signature_tag(digest_of(ref)))
    client = client_for(registry, unique)
    sig = json.loads(client.get_manifest(unique, layout.signature_tag(digest_of(ref))).content)
    assert len(sig["layers"]) == 1
    assert len(store.read_bundles(client, unique, digest_of(ref))) == 2
    accepted = cosign_verify(ref, ci_public, tmp_path)
    assert accepted.returncode == 0, accepted.stderr
    assert sign.sign_with_key(ref, ci_key).status == "unchanged"
    assert len(store.read_bundles(client, unique, digest_of(ref))) == 2
