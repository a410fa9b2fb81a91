"""``verify(reference, policy)``: the one verification entry point, for the CLI and the runner.

The reference is resolved to a manifest digest exactly once; every signature found for
that digest is checked against the policy, and the first that passes is returned as a
``VerifiedArtifact`` (the caller then pulls by that digest, never by tag again). When none
passes, ``VerificationError`` says why for each. Any failure to talk to the registry or
to load the trust root refuses the artifact too (verification fails closed); a registry's
refusal keeps its own class (``RegistryError``, ``AuthError``), so its exit code says why.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from lockgate.errors import AuthError, RegistryError, VerificationError
from lockgate.registry import Reference, RegistryClient, parse
from lockgate.signing import keys, layout, simplesigning, statement, store
from lockgate.signing.policy import CertificatePolicy, KeylessPolicy, KeyPolicy, KeySetPolicy, Policy

if TYPE_CHECKING:
    # sigstore-python takes about a second to import; key verification never needs it
    from sigstore.verify import Verifier


@dataclass(frozen=True)
class VerifiedArtifact:
    """A digest and who signed it. ``signer`` is a key fingerprint or a certificate identity."""

    reference: str
    digest: str
    mode: str
    signer: str
    issuer: str | None
    signature: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def verify(
    reference: Reference | str,
    policy: Policy,
    *,
    client: RegistryClient | None = None,
    signed_repository: str | None = None,
) -> VerifiedArtifact:
    """Resolve ``reference`` once; return the verified digest and signer or raise ``VerificationError``.

    ``signed_repository``: the repository a key signature's claim must name when it is not
    the one verified (a mirror or an ``oci-layout://`` copy names where it was copied from)."""
    ref = parse(reference) if isinstance(reference, str) else reference
    client = client or RegistryClient.for_reference(ref)
    try:
        digest = client.resolve(ref)
        if isinstance(policy, KeyPolicy):
            return _verify_key(client, ref, digest, (policy,), signed=signed_repository)
        if isinstance(policy, KeySetPolicy):
            return _verify_key(client, ref, digest, policy.keys, named=True, signed=signed_repository)
        return _verify_keyless(client, ref, digest, policy, trust_root_verifier(policy))
    except (RegistryError, AuthError) as exc:
        # still refused, but with the cause's exit code: an unreachable registry is exit 9 in
        # every command, and only a signature that fails its check is 4
        cause = AuthError if isinstance(exc, AuthError) else RegistryError
        raise cause(f"cannot verify {ref}: {exc.message}; refusing it (verification fails closed)") from exc


def trust_root_verifier(policy: KeylessPolicy) -> Verifier:
    """A sigstore-python verifier for the policy's trusted root, or the production one."""
    from sigstore.models import TrustedRoot
    from sigstore.verify import Verifier

    try:
        if policy.trusted_root is not None:
            return Verifier(trusted_root=TrustedRoot.from_file(str(policy.trusted_root)))
        return Verifier.production(offline=policy.offline)
    except Exception as exc:  # TUF, network and parse errors alike: all mean "cannot verify"
        where = policy.trusted_root or "the production Sigstore trust root"
        raise VerificationError(f"cannot load {where}: {exc}; refusing to verify") from None


def _verify_key(
    client: RegistryClient,
    ref: Reference,
    digest: str,
    policies: tuple[KeyPolicy, ...],
    *,
    named: bool = False,
    signed: str | None = None,
) -> VerifiedArtifact:
    """The first signature that one of the keys verifies; each signature is tried with every key.

    ``named``: say which key each failure is about (a key set), not only why; ``signed``: the
    repository the claims must name (default: the one verified)."""
    repo = ref.repository
    reasons: list[str] = []
    tag = layout.signature_tag(digest)

    def first(where: str, check: Callable[[KeyPolicy], None]) -> VerifiedArtifact | None:
        failures: list[str] = []
        for policy in policies:
            try:
                check(policy)
            except VerificationError as exc:
                failures.append(f"{policy.source}: {exc.message}" if named else exc.message)
                continue
            signer = f"key {keys.key_id(policy.key)} ({policy.source})"
            return VerifiedArtifact(str(ref.with_digest(digest)), digest, "key", signer, None, where)
        reasons.append(f"{where}: {'; '.join(_unique(failures))}")
        return None

    for number, sig in enumerate(store.read_legacy(client, repo, digest), start=1):
        check = functools.partial(_check_legacy, sig, digest=digest, repository=signed or ref.name)
        found = first(f"signature {number} at {tag}", check)
        if found is not None:
            return found
    for bundled in store.read_bundles(client, repo, digest):
        try:
            bundle = _bundle_json(bundled, digest)
        except VerificationError as exc:
            reasons.append(f"bundle {bundled.manifest_digest}: {exc.message}")
            continue
        check = functools.partial(_check_bundle, bundle, digest=digest, repository=signed or ref.name)
        found = first(f"bundle {bundled.manifest_digest}", check)
        if found is not None:
            return found
    raise _refusal(ref, digest, reasons)


def _check_bundle(bundle: dict[str, Any], policy: KeyPolicy, *, digest: str, repository: str) -> None:
    statement.verify_key_bundle(bundle, policy.key, digest=digest)
    # lockgate names the repository in the statement's subject, as the legacy claim does;
    # cosign v3's statement names none and is checked by digest only
    name = (statement.subject_for(statement.envelope_of(bundle).payload, digest=digest) or {}).get("name")
    if policy.check_repository and name is not None:
        simplesigning.check_repository(str(name), repository)


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _check_legacy(sig: store.LegacySignature, policy: KeyPolicy, *, digest: str, repository: str) -> None:
    if sig.problem or sig.payload is None:
        raise VerificationError(sig.problem or "no payload")
    if not sig.signature_b64:
        raise VerificationError(f"the layer has no {layout.SIGNATURE_ANNOTATION} annotation")
    try:
        signature = base64.b64decode(sig.signature_b64, validate=True)
    except binascii.Error:
        raise VerificationError("the signature annotation is not valid base64") from None
    if layout.CERTIFICATE_ANNOTATION in sig.annotations:
        raise VerificationError("it is a keyless (certificate) signature, not a key signature")
    keys.check_signature(policy.key, signature, sig.payload)
    claim = simplesigning.decode(sig.payload)
    simplesigning.check(claim, digest=digest, repository=repository if policy.check_repository else None)


def _bundle_json(found: store.StoredBundle, digest: str) -> dict[str, Any]:
    if found.problem or found.bundle is None:
        raise VerificationError(found.problem or "no bundle")
    if found.subject_digest != digest:
        raise VerificationError(
            f"the referrer's subject is {found.subject_digest}, not {digest}: "
            "it was made for another artifact"
        )
    try:
        value = store.read_value(found.bundle, "the bundle")
    except ValueError:
        raise VerificationError("the bundle is not valid JSON") from None
    if not isinstance(value, dict):
        raise VerificationError("the bundle is not a JSON object")
    return value


def _verify_keyless(
    client: RegistryClient, ref: Reference, digest: str, policy: KeylessPolicy, verifier: Verifier
) -> VerifiedArtifact:
    reasons: list[str] = []
    for found in store.read_bundles(client, ref.repository, digest):
        where = f"bundle {found.manifest_digest}"
        try:
            _bundle_json(found, digest)
            identity, issuer = verify_keyless_bundle(
                found.bundle or b"", policy, digest=digest, verifier=verifier
            )
        except VerificationError as exc:
            reasons.append(f"{where}: {exc.message}")
            continue
        return VerifiedArtifact(str(ref.with_digest(digest)), digest, "keyless", identity, issuer, where)
    legacy = store.read_legacy(client, ref.repository, digest)
    if legacy:
        reasons.append(
            f"{len(legacy)} signature(s) at {layout.signature_tag(digest)} are in the legacy "
            "layout, which lockgate verifies with --key only (keyless needs a Sigstore bundle)"
        )
    raise _refusal(ref, digest, reasons)


def verify_keyless_bundle(
    bundle: bytes, policy: KeylessPolicy, *, digest: str, verifier: Verifier
) -> tuple[str, str | None]:
    """Check one Sigstore bundle for ``digest`` against ``policy``; returns (identity, issuer)."""
    from sigstore.errors import Error as SigstoreError
    from sigstore.models import Bundle

    try:
        parsed = Bundle.from_json(bundle)
    except (SigstoreError, ValueError) as exc:
        raise VerificationError(f"the bundle is malformed: {_first_line(exc)}") from None
    certificate_policy = CertificatePolicy(policy)
    try:
        payload_type, payload = verifier.verify_dsse(parsed, certificate_policy)
    except Exception as exc:  # whatever sigstore-python raises, the bundle is refused, never skipped
        raise VerificationError(_first_line(exc)) from None
    statement.check(payload_type, payload, digest=digest, predicate_type=policy.predicate_type)
    facts = certificate_policy.facts
    if facts is None:
        raise VerificationError("the signing certificate was never checked against the policy")
    identity = next((i for i in facts.identities if policy.identity.matches(i)), facts.identities[0])
    return identity, facts.issuer


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]


def _refusal(ref: Reference, digest: str, reasons: list[str]) -> VerificationError:
    name = f"{ref.name}@{digest}"
    if not reasons:
        return VerificationError(
            f"{name} is not signed: no signature at tag {layout.signature_tag(digest)} "
            "and no Sigstore bundle among its referrers"
        )
    if len(reasons) == 1:
        return VerificationError(f"{name}: {reasons[0]}")
    return VerificationError(
        f"no signature of {name} satisfies the policy:\n" + "\n".join(f"  - {reason}" for reason in reasons)
    )
