"""The cosign v3 in-toto statement and key-signed DSSE bundles."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from lockgate.errors import VerificationError
from lockgate.signing import keys, statement

DIGEST = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32


def test_statement_is_cosign_v3s() -> None:
    doc = json.loads(statement.build(DIGEST))
    assert doc == {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"digest": {"sha256": "ab" * 32}}],
        "predicateType": "https://sigstore.dev/cosign/sign/v1",
        "predicate": {},
    }
    assert statement.check(statement.PAYLOAD_TYPE, statement.build(DIGEST), digest=DIGEST) == (
        statement.COSIGN_SIGN_PREDICATE
    )


@pytest.mark.parametrize(
    ("name", "payload_type", "payload", "message"),
    [
        ("moved", statement.PAYLOAD_TYPE, statement.build(OTHER), "is for sha256:cdcd"),
        ("other envelope", "text/plain", statement.build(DIGEST), "not an in-toto statement"),
        (
            "attestation",
            statement.PAYLOAD_TYPE,
            statement.build(DIGEST, predicate_type="https://slsa.dev/x"),
            "predicate type 'https://slsa.dev/x'",
        ),
        ("garbage", statement.PAYLOAD_TYPE, b"{", "not valid JSON"),
        (
            "no subjects",
            statement.PAYLOAD_TYPE,
            b'{"_type":"https://in-toto.io/Statement/v1","subject":[],"predicateType":'
            b'"https://sigstore.dev/cosign/sign/v1"}',
            "for no digest",
        ),
    ],
)
def test_check_refuses(name: str, payload_type: str, payload: bytes, message: str) -> None:
    with pytest.raises(VerificationError, match=message):
        statement.check(payload_type, payload, digest=DIGEST)


def test_pae_is_dsse_v1() -> None:
    assert statement.pae("t", b"hello") == b"DSSEv1 1 t 5 hello"


def _key_bundle(key: keys.PrivateKey, payload: bytes, *, sig: str | None = None) -> dict[str, Any]:
    signature = keys.sign(key, statement.pae(statement.PAYLOAD_TYPE, payload))
    return {
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {"publicKey": {"hint": "x"}, "tlogEntries": []},
        "dsseEnvelope": {
            "payload": base64.b64encode(payload).decode(),
            "payloadType": statement.PAYLOAD_TYPE,
            "signatures": [{"sig": sig if sig is not None else base64.b64encode(signature).decode()}],
        },
    }


def _key() -> keys.PrivateKey:
    pair = keys.generate_key_pair(b"")
    return keys.load_private_key(pair.private_pem, b"")


def test_key_bundle_verifies_with_its_key() -> None:
    key = _key()
    statement.verify_key_bundle(_key_bundle(key, statement.build(DIGEST)), key.public_key(), digest=DIGEST)


def test_key_bundle_refusals() -> None:
    key, other = _key(), _key()
    good = _key_bundle(key, statement.build(DIGEST))
    with pytest.raises(VerificationError, match="not made by the given key"):
        statement.verify_key_bundle(good, other.public_key(), digest=DIGEST)
    with pytest.raises(VerificationError, match="another artifact"):
        statement.verify_key_bundle(_key_bundle(key, statement.build(OTHER)), key.public_key(), digest=DIGEST)
    with pytest.raises(VerificationError, match="corrupt base64"):
        statement.verify_key_bundle(_key_bundle(key, b"{}", sig="***"), key.public_key(), digest=DIGEST)
    keyless = {**good, "verificationMaterial": {"certificate": {"rawBytes": ""}}}
    with pytest.raises(VerificationError, match="keyless"):
        statement.verify_key_bundle(keyless, key.public_key(), digest=DIGEST)


def test_a_named_annotated_statement_and_its_subject() -> None:
    """What ``lockgate sign --key`` signs into its bundle: the repository as the subject's name
    and the annotations where ``cosign sign -a`` puts them."""
    payload = statement.build(DIGEST, name="reg.example/app", annotations={"build": "7"})
    doc = json.loads(payload)
    assert doc["subject"] == [
        {"name": "reg.example/app", "digest": {"sha256": "ab" * 32}, "annotations": {"build": "7"}}
    ]
    assert statement.subject_for(payload, digest=DIGEST) == doc["subject"][0]
    assert statement.subject_for(payload, digest=OTHER) is None
    assert statement.subject_for(b"{", digest=DIGEST) is None
    key = keys.load_private_key(keys.generate_key_pair(b"").private_pem, b"")
    bundle = json.loads(statement.key_bundle(payload, key))
    statement.verify_key_bundle(bundle, key.public_key(), digest=DIGEST)
    assert bundle["verificationMaterial"]["publicKey"]["hint"] == statement.key_hint(key.public_key())
