"""Keyless signatures in the registry: the referrer layout, the fallback index, and refusals.

No Sigstore stack runs here (no Fulcio, Rekor or OIDC issuer), so the bundle stored is
a real one vendored from sigstore-python's test assets. Its statement names another
digest, which is exactly the "signature moved to another artifact" case; the positive
path of bundle verification is covered offline in tests/unit/signing/test_keyless_offline.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lockgate.errors import AuthError, VerificationError
from lockgate.signing import keys, layout, sign, verify
from lockgate.signing.policy import KeylessPolicy, Match
from tests.integration.signing_support import client_for, digest_of, push_artifact
from tests.world.registry import Registry

DATA = Path(__file__).parents[1] / "data" / "sigstore"
BUNDLE = (DATA / "dsse-staging.sigstore.json").read_bytes()
IDENTITY = (
    "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/"
    ".github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
)
POLICY = KeylessPolicy(
    identity=Match(IDENTITY),
    issuer=Match("https://token.actions.githubusercontent.com"),
    trusted_root=DATA / "staging-trusted-root.json",
)


def test_bundle_is_stored_as_a_referrer_with_the_fallback_index(registry: Registry, unique: str) -> None:
    ref = push_artifact(registry, unique)
    digest = digest_of(ref)
    client = client_for(registry, unique)
    sbom = client.get_manifest(unique, digest_of(push_artifact(registry, unique, b"sbom", tag="sbom")))
    foreign = {
        "mediaType": layout.OCI_MANIFEST,
        "size": len(sbom.content),
        "digest": sbom.digest,
        "artifactType": "application/spdx+json",
    }
    existing = {"schemaVersion": 2, "mediaType": layout.OCI_INDEX, "manifests": [foreign]}
    client.put_manifest(unique, layout.referrers_tag(digest), layout.encode(existing), layout.OCI_INDEX)

    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    referrer = sign.attach_bundle(ref, BUNDLE, created=when)

    index = json.loads(client.get_manifest(unique, layout.referrers_tag(digest)).content)
    assert [item["digest"] for item in index["manifests"]] == [foreign["digest"], referrer]
    assert index["manifests"][1]["artifactType"] == layout.BUNDLE_MEDIA_TYPE
    manifest = json.loads(client.get_manifest(unique, referrer).content)
    assert manifest["subject"]["digest"] == digest
    assert manifest["artifactType"] == layout.BUNDLE_MEDIA_TYPE
    assert manifest["annotations"]["dev.sigstore.bundle.content"] == "dsse-envelope"
    assert manifest["annotations"]["org.opencontainers.image.created"] == "2026-01-02T03:04:05Z"
    assert sign.attach_bundle(ref, BUNDLE, created=when) == referrer
    assert json.loads(client.get_manifest(unique, layout.referrers_tag(digest)).content) == index


def test_bundle_signing_another_digest_is_refused(registry: Registry, unique: str) -> None:
    ref = push_artifact(registry, unique)
    referrer = sign.attach_bundle(ref, BUNDLE)
    with pytest.raises(
        VerificationError, match=f"bundle {referrer}: the signature is for sha256:a0cfc712.*another artifact"
    ):
        verify.verify(ref, POLICY)


def test_referrer_listed_for_another_subject_is_refused(registry: Registry, unique: str) -> None:
    signed = push_artifact(registry, unique, b"good", tag="good")
    other = push_artifact(registry, unique, b"evil", tag="evil")
    sign.attach_bundle(signed, BUNDLE)
    client = client_for(registry, unique)
    stolen = client.get_manifest(unique, layout.referrers_tag(digest_of(signed)))
    client.put_manifest(unique, layout.referrers_tag(digest_of(other)), stolen.content, layout.OCI_INDEX)
    with pytest.raises(VerificationError, match=f"subject is {digest_of(signed)}, not {digest_of(other)}"):
        verify.verify(other, POLICY)


def test_unsigned_artifact_is_refused(registry: Registry, unique: str) -> None:
    ref = push_artifact(registry, unique)
    with pytest.raises(VerificationError, match="is not signed"):
        verify.verify(ref, POLICY)


def test_key_signature_does_not_satisfy_a_keyless_policy(registry: Registry, unique: str) -> None:
    ref = push_artifact(registry, unique)
    sign.sign_with_key(ref, keys.load_private_key(keys.generate_key_pair(b"").private_pem, b""))
    with pytest.raises(VerificationError, match="legacy layout, which lockgate verifies with --key only"):
        verify.verify(ref, POLICY)


def test_keyless_signing_without_an_identity_token_is_refused(
    registry: Registry, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "SIGSTORE_ID_TOKEN",
        "GITHUB_ACTIONS",
        "GITLAB_CI",
        "CIRCLECI",
        "BUILDKITE",
        "GOOGLE_SERVICE_ACCOUNT_NAME",
    ):
        monkeypatch.delenv(name, raising=False)
    ref = push_artifact(registry, unique)
    with pytest.raises(AuthError, match="id-token: write"):
        sign.sign_keyless(ref)
    client = client_for(registry, unique)
    assert client.head_manifest(unique, layout.referrers_tag(digest_of(ref))) is None
