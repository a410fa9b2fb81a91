"""Signing an artifact by digest, with a cosign key or keyless with Sigstore.

Key signatures are written in both of cosign's layouts: a layer of the legacy
``sha256-<hex>.sig`` manifest (what Flux and cosign v2 read), appended to any signatures
already there, and a cosign v3 key bundle (the ``https://sigstore.dev/cosign/sign/v1``
statement in a DSSE envelope) as an OCI referrer. Both are needed: cosign v3's ``verify``
reads only the referrers once any bundle refers to the digest, and a runner's health
attestation is such a bundle, signed by another key; with the signature in the legacy
layout only, ``cosign verify --key`` failed on every attested artifact.

Signing again with the same key adds nothing: a ``.sig`` layer over the same payload that
verifies with the key's public key, and a key bundle for the same digest (and annotations)
that verifies with it, are reported ``already signed``, as cosign's dupe detector does. A
cosign v3 key bundle alone also counts (cosign and Flux 2.8+ read it). When only the
legacy layer is there (signed before both layouts were written, or by cosign with
``--new-bundle-format=false``), signing again adds just the bundle. So CI re-runs never
grow the signature manifest or the verifier's work.

Keyless signatures are a Sigstore bundle of the cosign v3 in-toto statement, attached as
an OCI 1.1 referrer. Each keyless signing is new evidence (a fresh ephemeral key, Fulcio
certificate and log entry), so it is stored as a new referrer, as cosign does; only a
byte-identical referrer is listed once. Signing is always by digest: a tag could move
between resolving and signing.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockgate.errors import AuthError, LockgateError, UsageError, VerificationError
from lockgate.registry import Reference, RegistryClient, parse
from lockgate.signing import keys, layout, simplesigning, statement, store
from lockgate.signing.policy import CertificateFacts

if TYPE_CHECKING:
    # sigstore-python takes about a second to import; key signing never needs it
    from sigstore.models import ClientTrustConfig


@dataclass(frozen=True)
class SignedArtifact:
    """What was signed, how, and where the signature is stored."""

    reference: str
    digest: str
    mode: str
    signer: str
    stored_at: str
    #: ``signed`` when a signature was written, ``unchanged`` when an equivalent one was there
    status: str = "signed"

    @property
    def already_signed(self) -> bool:
        return self.status == "unchanged"

    def describe(self) -> str:
        """One line for text output: what was signed (or found signed), by whom, where."""
        if self.already_signed:
            return f"already signed {self.digest} by {self.signer}; signature at {self.stored_at}"
        return f"signed {self.digest} by {self.signer}; signature at {self.stored_at}"

    def to_json(self) -> dict[str, Any]:
        # JSON keys in Kubernetes' camelCase, as every command's --output json
        return {"storedAt" if k == "stored_at" else k: v for k, v in asdict(self).items()}


def by_digest(reference: Reference | str, *, hint: str = "") -> Reference:
    """``reference`` if it names a digest; else a usage error (``hint`` appended to it)."""
    ref = parse(reference) if isinstance(reference, str) else reference
    if not ref.digest:
        raise UsageError(
            f"sign {ref} by digest (oci://REGISTRY/REPO@sha256:...): a tag can move "
            f"between resolving it and signing it{hint}"
        )
    return ref


def sign_with_key(
    reference: Reference | str,
    key: keys.PrivateKey,
    *,
    client: RegistryClient | None = None,
    annotations: dict[str, str] | None = None,
) -> SignedArtifact:
    """Sign the manifest ``reference`` names with ``key``: a layer of its ``.sig`` tag and a
    key bundle among its referrers, each written unless an equivalent one is there."""
    ref = by_digest(reference)
    client = client or RegistryClient.for_reference(ref)
    digest = client.resolve(ref)
    notes = dict(annotations or {})
    payload = simplesigning.encode(
        simplesigning.SimpleSigning(docker_reference=ref.name, manifest_digest=digest, annotations=notes)
    )
    public = key.public_key()
    signer = f"key {keys.key_id(public)}"
    legacy = store.read_legacy(client, ref.repository, digest)
    legacy_at = str(ref.with_tag(layout.signature_tag(digest)))
    legacy_signed = any(_same_legacy_signature(found, public, payload) for found in legacy)
    bundle_at = existing_key_bundle(client, ref, digest, public, annotations=notes)
    # a key bundle alone is the signature when there is no .sig manifest (cosign v3 signed
    # it); where there is one, the key's layer belongs there too
    if bundle_at is not None and (legacy_signed or not legacy):
        return SignedArtifact(
            reference=str(ref),
            digest=digest,
            mode="key",
            signer=signer,
            stored_at=legacy_at if legacy_signed else bundle_at,
            status="unchanged",
        )
    if not legacy_signed:
        signature = base64.b64encode(keys.sign(key, payload)).decode()
        store.upload(client, ref.repository, payload)
        store.write_legacy(client, ref.repository, digest, layout.signature_layer(payload, signature))
    if bundle_at is None:
        # written after the .sig layer: an interrupted signing leaves what cosign v2 and
        # Flux read, and signing again adds the missing bundle
        signed = statement.build(digest, name=ref.name, annotations=notes)
        bundle = statement.key_bundle(signed, key)
        when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        predicate = statement.COSIGN_SIGN_PREDICATE
        store.write_bundle(client, ref.repository, digest, bundle, predicate_type=predicate, created=when)
    return SignedArtifact(
        reference=str(ref),
        digest=digest,
        mode="key",
        signer=signer,
        stored_at=legacy_at,
    )


def _same_legacy_signature(found: store.LegacySignature, public_key: keys.PublicKey, payload: bytes) -> bool:
    """Whether a ``.sig`` layer is equivalent to signing ``payload`` with ``public_key``'s key,
    as cosign's dupe detector decides: its payload is these very bytes (same digest,
    docker-reference and annotations) and its signature verifies with the key. Anything
    unreadable or not verifying is no match: then a new signature is written, never
    skipped on a guess."""
    if found.payload != payload or layout.CERTIFICATE_ANNOTATION in found.annotations:
        return False
    try:
        keys.check_signature(public_key, base64.b64decode(found.signature_b64, validate=True), payload)
    except (VerificationError, binascii.Error, ValueError):
        return False
    return True


def existing_key_bundle(
    client: RegistryClient,
    ref: Reference,
    digest: str,
    public_key: keys.PublicKey,
    *,
    annotations: dict[str, str],
) -> str | None:
    """Where a key bundle (cosign v3 ``sign --key``, or ours) for ``digest`` that verifies with
    ``public_key``, names no other repository and whose subject carries exactly
    ``annotations`` is stored, or None."""
    for bundled in store.read_bundles(client, ref.repository, digest):
        if bundled.bundle is None or bundled.subject_digest != digest:
            continue
        try:
            document = store.read_value(bundled.bundle, "the bundle")
            if not isinstance(document, dict):
                continue
            statement.verify_key_bundle(document, public_key, digest=digest)
        except (VerificationError, ValueError):
            continue
        subject = statement.subject_for(statement.envelope_of(document).payload, digest=digest) or {}
        notes = subject.get("annotations") or {}
        if subject.get("name", ref.name) == ref.name and notes == annotations:
            return str(ref.with_digest(bundled.manifest_digest))
    return None


def attach_bundle(
    reference: Reference | str,
    bundle: bytes,
    *,
    client: RegistryClient | None = None,
    created: datetime | None = None,
) -> str:
    """Store a Sigstore bundle as a referrer of the manifest ``reference`` names; returns its digest."""
    ref = by_digest(reference)
    client = client or RegistryClient.for_reference(ref)
    digest = client.resolve(ref)
    when = (created or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return store.write_bundle(
        client, ref.repository, digest, bundle, predicate_type=statement.COSIGN_SIGN_PREDICATE, created=when
    )


def ambient_token() -> str:
    """The CI's OIDC identity token (GitHub Actions with ``id-token: write``, and others
    sigstore-python detects), or an ``AuthError`` saying how to get one."""
    from sigstore.oidc import IdentityError, detect_credential

    try:
        token = detect_credential()
    except IdentityError as exc:
        raise AuthError(f"could not get an OIDC identity token for keyless signing: {exc}") from None
    if not token:
        raise AuthError(
            "keyless signing needs an OIDC identity token: in GitHub Actions grant "
            "'permissions: id-token: write'; elsewhere pass one with --identity-token "
            "or SIGSTORE_ID_TOKEN"
        )
    return token


def keyless_bundle(
    digest: str,
    token: str,
    *,
    staging: bool = False,
    trust_config: Path | None = None,
    name: str | None = None,
    payload: bytes | None = None,
) -> bytes:
    """Sign the cosign v3 statement for ``digest`` (or the statement ``payload``) with Sigstore
    (Fulcio certificate for ``token``, Rekor entry) and return the bundle JSON. This is the
    only networked step.

    ``trust_config`` is a Sigstore client trust config (trusted root + signing config, the
    file ``sigstore --trust-config`` takes) for a private Sigstore instance; without it the
    public-good production (or ``staging``) instance is used. ``name`` is the statement's
    subject name (sigstore-python requires one; see ``statement.build``), the digest if None.
    """
    from sigstore.dsse import Statement
    from sigstore.errors import Error as SigstoreError
    from sigstore.models import ClientTrustConfig
    from sigstore.oidc import IdentityToken
    from sigstore.sign import SigningContext

    if trust_config is not None and staging:
        raise UsageError("pass a Sigstore trust config or staging, not both")
    try:
        if trust_config is not None:
            config = _load_trust_config(trust_config)
        else:
            config = ClientTrustConfig.staging() if staging else ClientTrustConfig.production()
        context = SigningContext.from_trust_config(config)
        with context.signer(IdentityToken(token)) as signer:
            signed = payload if payload is not None else statement.build(digest, name=name or digest)
            bundle = signer.sign_dsse(Statement(signed))
    except LockgateError:
        raise
    except SigstoreError as exc:
        raise LockgateError(f"Sigstore keyless signing failed: {exc}") from None
    except Exception as exc:
        # sigstore-python's Fulcio, Rekor and TSA clients raise plain exceptions (a refused
        # token is a bare FulcioClientError whose cause holds the HTTP status), and requests
        # raises its own: each means "not signed", reported like any other Sigstore failure
        raise LockgateError(f"Sigstore keyless signing failed: {_describe(exc)}") from None
    return bundle.to_json().encode()


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or (str(exc.__cause__).strip() if exc.__cause__ else "")
    name = exc.__class__.__name__
    return f"{name}: {text.splitlines()[0]}" if text else name


def _load_trust_config(path: Path) -> ClientTrustConfig:
    from sigstore.models import ClientTrustConfig

    try:
        raw = path.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read Sigstore trust config {path}: {exc.strerror}") from None
    try:
        return ClientTrustConfig.from_json(raw)
    except Exception as exc:  # pydantic and sigstore errors alike: the file is unusable
        first = (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]
        raise UsageError(f"{path} is not a Sigstore client trust config: {first}") from None


def sign_keyless(
    reference: Reference | str,
    *,
    token: str | None = None,
    client: RegistryClient | None = None,
    staging: bool = False,
    trust_config: Path | None = None,
) -> SignedArtifact:
    """Keyless signature: ambient (or given) OIDC token -> Sigstore bundle -> OCI referrer.

    ``trust_config``: a client trust config file for a private Sigstore (see ``keyless_bundle``).
    """
    ref = by_digest(reference)
    client = client or RegistryClient.for_reference(ref)
    digest = client.resolve(ref)
    bundle = keyless_bundle(
        digest, token or ambient_token(), staging=staging, trust_config=trust_config, name=ref.name
    )
    referrer = attach_bundle(ref, bundle, client=client)
    return SignedArtifact(
        reference=str(ref),
        digest=digest,
        mode="keyless",
        signer=bundle_signer(bundle),
        stored_at=str(ref.with_digest(referrer)),
    )


def bundle_signer(bundle: bytes) -> str:
    """The identity (and issuer) named by a bundle's signing certificate, for messages."""
    from sigstore.models import Bundle

    facts = CertificateFacts.of(Bundle.from_json(bundle).signing_certificate)
    identity = facts.identities[0] if facts.identities else "an unnamed identity"
    return f"{identity} (issuer {facts.issuer})" if facts.issuer else identity
