"""The in-toto statement cosign v3 signs, and the DSSE envelope around it.

cosign v3 (and ``lockgate sign --keyless``) signs an in-toto Statement v1 whose only
subject is the manifest digest, with predicate type ``https://sigstore.dev/cosign/sign/v1``
and an empty predicate, in a DSSE envelope inside a Sigstore bundle v0.3. cosign v3 also
writes this layout for key signatures (``cosign sign --key``, ``lockgate sign --key`` next
to its legacy ``.sig``); for those the bundle holds a public-key hint instead of a
certificate, is built here (``key_bundle``, also for key-signed attestations) and its DSSE
signature is checked here against the key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import serialization

from lockgate import boundedjson
from lockgate.errors import VerificationError
from lockgate.signing import keys, layout

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
COSIGN_SIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1"


def build(
    digest: str,
    *,
    predicate_type: str = COSIGN_SIGN_PREDICATE,
    name: str | None = None,
    annotations: dict[str, str] | None = None,
) -> bytes:
    """The statement bytes for a manifest digest (``sha256:<hex>``), as cosign v3 lays it out.

    ``name`` adds a subject name. cosign v3 writes none, but sigstore-python 4.5 refuses to
    sign a statement whose subject has no ``name`` field, so keyless signing names the
    repository there (as ``cosign attest`` does). Verifiers (ours, cosign's, Flux's) match
    the digest only. ``annotations`` go in the subject, where ``cosign sign -a`` puts them
    and ``cosign verify -a`` looks for them.
    """
    algorithm, _, hexdigest = digest.partition(":")
    subject: dict[str, Any] = {"digest": {algorithm: hexdigest}}
    if name is not None:
        subject = {"name": name} | subject
    if annotations:
        subject["annotations"] = dict(annotations)
    doc = {
        "_type": STATEMENT_TYPE,
        "subject": [subject],
        "predicateType": predicate_type,
        "predicate": {},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def check(
    payload_type: str, payload: bytes, *, digest: str, predicate_type: str = COSIGN_SIGN_PREDICATE
) -> str:
    """Return the predicate type if the statement's subjects name exactly ``digest``; raise if not."""
    if payload_type != PAYLOAD_TYPE:
        raise VerificationError(f"the signed envelope holds {payload_type!r}, not an in-toto statement")
    try:
        doc = boundedjson.json_value(payload, "the signed statement", max_bytes=len(payload))
        subjects = doc["subject"]
        found_type = doc["predicateType"]
        kind = doc["_type"]
    except (ValueError, KeyError, TypeError, boundedjson.LimitExceeded):
        raise VerificationError(
            "the signed in-toto statement is not valid JSON with _type, subject and predicateType"
        ) from None
    if kind not in (STATEMENT_TYPE, "https://in-toto.io/Statement/v0.1"):
        raise VerificationError(f"the signed statement has type {kind!r}, expected {STATEMENT_TYPE!r}")
    algorithm, _, hexdigest = digest.partition(":")
    named = sorted(
        f"{alg}:{value}"
        for subject in (subjects if isinstance(subjects, list) else [])
        if isinstance(subject, dict) and isinstance(subject.get("digest"), dict)
        for alg, value in subject["digest"].items()
    )
    if f"{algorithm}:{hexdigest}" not in named:
        raise VerificationError(
            f"the signature is for {', '.join(named) or 'no digest'}, not for {digest}: "
            "it was made for another artifact and copied here"
        )
    if found_type != predicate_type:
        raise VerificationError(
            f"the signed statement has predicate type {found_type!r}, expected {predicate_type!r}"
        )
    return predicate_type


def subject_for(payload: bytes, *, digest: str) -> dict[str, Any] | None:
    """The statement's subject for ``digest`` (its ``name``, ``annotations``...), or None when
    it names no such subject or is not readable. Call after the signature verified."""
    algorithm, _, hexdigest = digest.partition(":")
    try:
        doc = boundedjson.json_value(payload, "the signed statement", max_bytes=len(payload))
    except (ValueError, boundedjson.LimitExceeded):
        return None
    subjects = doc.get("subject") if isinstance(doc, dict) else None
    for subject in subjects if isinstance(subjects, list) else []:
        if isinstance(subject, dict) and (subject.get("digest") or {}).get(algorithm) == hexdigest:
            return subject
    return None


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE pre-authentication encoding: what a DSSE signature actually signs."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


@dataclass(frozen=True)
class Envelope:
    payload_type: str
    payload: bytes
    signatures: list[bytes]


def envelope_of(bundle: dict[str, Any]) -> Envelope:
    """The DSSE envelope of a bundle's JSON; malformed base64 or fields are a ``VerificationError``."""
    env = bundle.get("dsseEnvelope")
    if not isinstance(env, dict):
        raise VerificationError("the Sigstore bundle holds no DSSE envelope")
    try:
        payload = base64.b64decode(env["payload"], validate=True)
        sigs = [base64.b64decode(item["sig"], validate=True) for item in env.get("signatures", [])]
        payload_type = str(env["payloadType"])
    except (KeyError, TypeError, binascii.Error):
        raise VerificationError("the bundle's DSSE envelope has missing fields or corrupt base64") from None
    return Envelope(payload_type=payload_type, payload=payload, signatures=sigs)


def key_hint(key: keys.PublicKey) -> str:
    """The ``publicKey.hint`` ``key_bundle`` writes for ``key``: base64 of sha256 of its DER."""
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def key_bundle(payload: bytes, key: keys.PrivateKey) -> bytes:
    """A Sigstore bundle v0.3 around the DSSE envelope of ``payload`` (an in-toto statement),
    signed with ``key``: a public-key hint, no log entry, as ``cosign sign|attest --key`` v3
    writes with ``--tlog-upload=false``."""
    signature = keys.sign(key, pae(PAYLOAD_TYPE, payload))
    doc = {
        "mediaType": layout.BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": key_hint(key.public_key())}},
        "dsseEnvelope": {
            "payload": base64.b64encode(payload).decode(),
            "payloadType": PAYLOAD_TYPE,
            "signatures": [{"sig": base64.b64encode(signature).decode()}],
        },
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def verify_key_bundle(bundle: dict[str, Any], key: keys.PublicKey, *, digest: str) -> None:
    """Check a key-signed bundle (cosign v3 ``sign --key``): one DSSE signature by ``key`` over
    a statement for ``digest``. Transparency-log entries are not required, as with
    ``cosign verify --insecure-ignore-tlog``; the key is the trust anchor."""
    material = bundle.get("verificationMaterial") or {}
    if "publicKey" not in material:
        raise VerificationError("the bundle is signed with a certificate (keyless), not with a key")
    envelope = envelope_of(bundle)
    if not envelope.signatures:
        raise VerificationError("the bundle's DSSE envelope has no signature")
    errors = []
    for signature in envelope.signatures:
        try:
            keys.check_signature(key, signature, pae(envelope.payload_type, envelope.payload))
        except VerificationError as exc:
            errors.append(exc)
            continue
        check(envelope.payload_type, envelope.payload, digest=digest)
        return
    raise errors[0]
