"""Signing an artifact by digest, with a cosign key or keyless with Sigstore.

Key signatures go to the legacy ``sha256-<hex>.sig`` manifest (what ``cosign verify --key``
and Flux read), appended to any signatures already there. Keyless signatures are a
Sigstore bundle of the cosign v3 in-toto statement, attached as an OCI 1.1 referrer.
Signing is always by digest: a tag could move between resolving and signing.
"""

from __future__ import annotations

import base64
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockgate.errors import AuthError, LockgateError, UsageError
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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def by_digest(reference: Reference | str) -> Reference:
    ref = parse(reference) if isinstance(reference, str) else reference
    if not ref.digest:
        raise UsageError(
            f"sign {ref} by digest (oci://REGISTRY/REPO@sha256:...): a tag can move "
            "between resolving it and signing it"
        )
    return ref


def sign_with_key(
    reference: Reference | str,
    key: keys.PrivateKey,
    *,
    client: RegistryClient | None = None,
    annotations: dict[str, str] | None = None,
) -> SignedArtifact:
    """Sign the manifest ``reference`` names with ``key`` and add the signature to its ``.sig`` tag."""
    ref = by_digest(reference)
    client = client or RegistryClient.for_reference(ref)
    digest = client.resolve(ref)
    payload = simplesigning.encode(
        simplesigning.SimpleSigning(
            docker_reference=ref.name, manifest_digest=digest, annotations=annotations or {}
        )
    )
    signature = base64.b64encode(keys.sign(key, payload)).decode()
    store.upload(client, ref.repository, payload)
    store.write_legacy(client, ref.repository, digest, layout.signature_layer(payload, signature))
    return SignedArtifact(
        reference=str(ref),
        digest=digest,
        mode="key",
        signer=f"key {keys.key_id(key.public_key())}",
        stored_at=str(ref.with_tag(layout.signature_tag(digest))),
    )


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
) -> bytes:
    """Sign the cosign v3 statement for ``digest`` with Sigstore (Fulcio certificate for
    ``token``, Rekor entry) and return the bundle JSON. This is the only networked step.

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
            bundle = signer.sign_dsse(Statement(statement.build(digest, name=name or digest)))
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
