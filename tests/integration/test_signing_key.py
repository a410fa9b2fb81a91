"""Key signatures against the world's registry: round trips, appends, and every refusal."""

from __future__ import annotations

import base64
import json

import pytest

from lockgate import registry
from lockgate.errors import RegistryError, VerificationError
from lockgate.signing import keys, layout, sign, verify
from lockgate.signing.policy import KeyPolicy
from tests.integration.signing_support import client_for, copy_manifest, digest_of, key_bundle, push_artifact
from tests.world.process import free_port
from tests.world.registry import Registry


def new_key() -> keys.PrivateKey:
    return keys.load_private_key(keys.generate_key_pair(b"pw").private_pem, b"pw")


def policy_for(key: keys.PrivateKey, source: str = "cosign.pub") -> KeyPolicy:
    return KeyPolicy(key=key.public_key(), source=source)


def test_signs_and_verifies_by_digest_and_by_tag(registry: Registry, unique: str) -> None:
    ref = push_artifact(registry, unique, tag="v1")
    key = new_key()
    signed = sign.sign_with_key(ref, key)
    assert signed.stored_at == registry.oci(unique, ":" + layout.signature_tag(digest_of(ref)))
    by_digest = verify.verify(ref, policy_for(key))
    by_tag = verify.verify(registry.oci(unique, ":v1"), policy_for(key))
    assert by_digest.digest == by_tag.digest == digest_of(ref)
    assert by_tag.reference == registry.oci(unique, ":v1@" + digest_of(ref))
    assert by_tag.mode == "key"
    assert by_tag.signer == f"key {keys.key_id(key.public_key())} (cosign.pub)"


def test_signing_again_keeps_earlier_signatures(registry: Registry, unique: str) -> None:
    ref = push_artifact(registry, unique)
    first, second = new_key(), new_key()
    sign.sign_with_key(ref, first)
    sign.sign_with_key(ref, second)
    sign.sign_with_key(ref, second)
    client = client_for(registry, unique)
    manifest = json.loads(client.get_manifest(unique, layout.signature_tag(digest_of(ref))).content)
    assert len(manifest["layers"]) == 2  # the second key's re-sign is recognised, not appended
    verify.verify(ref, policy_for(first))
    verify.verify(ref, policy_for(second))


def test_unsigned_artifact_is_refused(registry: Registry, unique: str) -> None:
    ref = push_artifact(registry, unique)
    with pytest.raises(VerificationError, match="is not signed: no signature at tag sha256-"):
        verify.verify(ref, policy_for(new_key()))


def test_signature_by_another_key_is_refused(registry: Registry, unique: str) -> None:
    ref = push_artifact(registry, unique)
    sign.sign_with_key(ref, new_key())
    with pytest.raises(VerificationError, match=r"signature 1 at sha256-.*not made by the given key"):
        verify.verify(ref, policy_for(new_key()))


def test_signature_moved_to_another_digest_is_refused(registry: Registry, unique: str) -> None:
    signed = push_artifact(registry, unique, b"good", tag="good")
    other = push_artifact(registry, unique, b"evil", tag="evil")
    key = new_key()
    sign.sign_with_key(signed, key)
    copy_manifest(
        registry, unique, layout.signature_tag(digest_of(signed)), layout.signature_tag(digest_of(other))
    )
    with pytest.raises(VerificationError, match=f"is for {digest_of(signed)}, not for {digest_of(other)}"):
        verify.verify(other, policy_for(key))


def test_signature_copied_to_another_repository_is_refused(registry: Registry, unique: str) -> None:
    ref = push_artifact(registry, unique)
    key = new_key()
    sign.sign_with_key(ref, key)
    copy = f"{unique}-copy"
    copy_manifest(registry, unique, "latest", "latest", target_repo=copy)
    tag = layout.signature_tag(digest_of(ref))
    copy_manifest(registry, unique, tag, tag, target_repo=copy)
    with pytest.raises(VerificationError, match=f"names repository '{registry.host}/{unique}'"):
        verify.verify(registry.oci(copy, "@" + digest_of(ref)), policy_for(key))
    no_check = KeyPolicy(key=key.public_key(), check_repository=False)
    assert verify.verify(registry.oci(copy, "@" + digest_of(ref)), no_check).digest == digest_of(ref)


def _store_raw_signature(registry: Registry, repo: str, digest: str, payload: bytes, signature: str) -> None:
    from lockgate.signing import store

    client = client_for(registry, repo)
    store.upload(client, repo, payload)
    store.write_legacy(client, repo, digest, layout.signature_layer(payload, signature))


def test_corrupt_base64_signature_is_refused(registry: Registry, unique: str) -> None:
    ref = push_artifact(registry, unique)
    _store_raw_signature(registry, unique, digest_of(ref), b"{}", "not base64!")
    with pytest.raises(VerificationError, match="not valid base64"):
        verify.verify(ref, policy_for(new_key()))


def test_corrupt_payload_signed_by_the_right_key_is_refused(registry: Registry, unique: str) -> None:
    ref = push_artifact(registry, unique)
    key = new_key()
    payload = b'{"critical": "garbage"'
    _store_raw_signature(
        registry, unique, digest_of(ref), payload, base64.b64encode(keys.sign(key, payload)).decode()
    )
    with pytest.raises(VerificationError, match="not valid JSON"):
        verify.verify(ref, policy_for(key))


def test_unreachable_registry_fails_closed() -> None:
    """Refused, and the class says why: the registry's (exit 9), as in every command."""
    ref = registry.parse(f"oci://127.0.0.1:{free_port()}/nothing@sha256:" + "ab" * 32)
    client = registry.RegistryClient.for_reference(ref, retry=registry.RetryPolicy(attempts=1))
    with pytest.raises(
        RegistryError, match=r"cannot reach registry .*refusing it \(verification fails closed\)"
    ):
        verify.verify(ref, policy_for(new_key()), client=client)


def test_cosign_v3_key_bundle_referrer_verifies(registry: Registry, unique: str) -> None:
    """cosign v3 writes key signatures as a bundle referrer by default; we read that layout too."""
    ref = push_artifact(registry, unique)
    key = new_key()
    referrer = sign.attach_bundle(ref, key_bundle(digest_of(ref), key))
    result = verify.verify(ref, policy_for(key))
    assert result.signature == f"bundle {referrer}"
    with pytest.raises(
        VerificationError, match=f"bundle {referrer}: the signature was not made by the given key"
    ):
        verify.verify(ref, policy_for(new_key()))
