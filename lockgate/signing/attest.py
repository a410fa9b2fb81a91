"""Attestations: signed in-toto statements about an artifact digest, written and read by key.

An attestation is an in-toto Statement v1 whose one subject is the artifact (its repository
name and manifest digest), with a predicate type and a JSON predicate, in a DSSE envelope
signed with a cosign key (the signature is over the DSSE pre-authentication encoding). It
is stored as cosign v3 stores ``cosign attest --key``: a Sigstore bundle v0.3 (a public-key
hint, no log entry) in a referrer manifest of the digest, with the predicate type in its
``dev.sigstore.bundle.predicateType`` annotation, listed in the tag-schema fallback index
when the registry has no referrers API (``store.write_bundle``, as keyless signatures).
``cosign verify-attestation --key K --type TYPE --insecure-ignore-tlog=true`` accepts it.

Writing the same statement twice adds nothing: a stored bundle whose payload is these very
bytes and verifies with the key is reported ``unchanged``. Reading verifies every bundle
among the referrers with a key policy and keeps those whose signature verifies and whose
statement names exactly the digest (a statement copied from another artifact is refused),
with the reason each other one did not count; a key bound to a cluster (``keybinding``) makes
an attestation claiming another cluster one of those. With a keyless policy, bundles with a
Sigstore certificate are verified against the policy's trusted root and identity instead
(``attest_keyless`` writes them); the runner's own attestations are signed with keys.
Through a client with a cache (``serve``'s), each bundle's verdict is remembered by its
referrer manifest digest and the policy (``judge``).

The runner's predicates (``HEALTHY`` and ``UNHEALTHY``) record the cluster, the sync, the
revision, when health was reached (or lost) and the objects' summary; what a consumer asks of
them, and whether a digest meets it, is ``lockgate.signing.requirements``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockgate.errors import (
    AuthError,
    LockgateError,
    RegistryError,
    ResolveError,
    UsageError,
    VerificationError,
)
from lockgate.registry import Reference, RegistryClient, parse
from lockgate.registry.cache import RegistryCache
from lockgate.signing import keys, layout, statement, store
from lockgate.signing.policy import KeylessPolicy, KeyPolicy, KeySetPolicy
from lockgate.signing.sign import SignedArtifact, by_digest

#: "healthy in cluster X": written by the runner once a digest's objects are healthy
HEALTHY = "https://lockgate.dev/attestations/healthy/v1"
#: "failed its health checks in cluster X": written when ``attest.onFailure`` is set
UNHEALTHY = "https://lockgate.dev/attestations/unhealthy/v1"
BUNDLE_MEDIA_TYPE = layout.BUNDLE_MEDIA_TYPE

Json = dict[str, Any]


def statement_bytes(name: str, digest: str, predicate_type: str, predicate: Json) -> bytes:
    """The in-toto Statement v1 for ``name@digest``, compact with keys in a fixed order."""
    if not predicate_type or ":" not in predicate_type:
        raise UsageError(f"predicate type {predicate_type!r} must be a URI (e.g. https://example.com/qa/v1)")
    algorithm, _, hexdigest = digest.partition(":")
    doc = {
        "_type": statement.STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {algorithm: hexdigest}}],
        "predicateType": predicate_type,
        "predicate": predicate,
    }
    return json.dumps(doc, separators=(",", ":"), sort_keys=False).encode()


#: the DSSE bundle of a statement signed with a key (one builder for signatures and attestations)
key_bundle = statement.key_bundle


@dataclass(frozen=True)
class Attestation:
    """One attestation whose signature verified with a policy's key, for this digest."""

    digest: str
    predicate_type: str
    predicate: Json
    signer: str
    #: the referrer manifest digest that holds it
    manifest_digest: str
    payload: bytes = field(repr=False, default=b"")

    def to_json(self) -> Json:
        return {
            "digest": self.digest,
            "predicateType": self.predicate_type,
            "predicate": self.predicate,
            "signer": self.signer,
            "storedAt": self.manifest_digest,
        }


@dataclass(frozen=True)
class Refusal:
    """A bundle that did not count, why, and what it claims to be (unverified: for messages only)."""

    reason: str
    claimed_type: str | None = None
    claimed_cluster: str | None = None
    #: the referrer manifest digest that holds the bundle
    referrer: str = ""

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class Found:
    """What the referrers of a digest hold: verified attestations, and why the others did not count."""

    attestations: list[Attestation]
    refused: list[Refusal]

    def refusals_about(self, predicate_type: str, cluster: str | None) -> list[Refusal]:
        """The refusals of bundles that claim to be of ``predicate_type`` (for ``cluster``), or are
        unreadable: a bundle that is plainly about something else is not worth a message."""
        return [
            r
            for r in self.refused
            if r.claimed_type in (None, predicate_type)
            and (cluster is None or r.claimed_cluster in (None, cluster))
        ]


KeyPolicies = KeyPolicy | KeySetPolicy
#: who must have signed an attestation: a key, one of a set of keys, or a Sigstore identity
AttestationPolicy = KeyPolicy | KeySetPolicy | KeylessPolicy


def _policies(policy: KeyPolicies) -> tuple[KeyPolicy, ...]:
    return policy.keys if isinstance(policy, KeySetPolicy) else (policy,)


def read(
    client: RegistryClient,
    repository: str,
    digest: str,
    policy: AttestationPolicy,
    *,
    bundles: Sequence[store.StoredBundle] | None = None,
) -> Found:
    """The attestations of ``digest`` signed by one of ``policy``'s keys, or keyless by its
    identity (any predicate type); among ``bundles`` when the caller has read them already.

    Cosign v3 signatures (predicate ``https://sigstore.dev/cosign/sign/v1``) are not
    attestations and are left out without a reason. Registry failures raise."""
    stored = store.read_bundles(client, repository, digest) if bundles is None else bundles
    return judge(stored, digest, policy, cache=client.cache)


def judge(
    bundles: Sequence[store.StoredBundle],
    digest: str,
    policy: AttestationPolicy,
    *,
    cache: RegistryCache | None,
) -> Found:
    """``read`` for bundles already read. With a ``cache``, each bundle's verdict is remembered
    by the referrer's manifest digest (its bytes), ``digest`` and the policy's keys or identity:
    verifying the same bytes with the same keys again would only repeat the answer."""
    if isinstance(policy, KeylessPolicy):
        return _judge_keyless(bundles, digest, policy, cache)
    policies = _policies(policy)
    hints = tuple(statement.key_hint(p.key) for p in policies)
    # a key's fingerprint includes its name (the Attestation's signer says which key verified
    # it) and its cluster (a bound key refuses what an unbound one accepts)
    key = ("key", tuple(zip(hints, ((p.source, p.cluster) for p in policies), strict=True)))
    found: list[Attestation] = []
    refused: list[Refusal] = []
    for bundled in bundles:

        def verdict(bundled: store.StoredBundle = bundled) -> Attestation | Refusal | None:
            try:
                return _verified(bundled, digest, policies, hints)
            except VerificationError as exc:
                where = f"referrer {bundled.manifest_digest}"
                return Refusal(
                    f"{where}: {exc.message}", *_claims(bundled.bundle), referrer=bundled.manifest_digest
                )

        outcome = _remembered(cache, bundled, digest, key, verdict)
        if isinstance(outcome, Refusal):
            refused.append(outcome)
        elif outcome is not None:
            found.append(outcome)
    return Found(found, refused)


def _remembered(
    cache: RegistryCache | None,
    bundled: store.StoredBundle,
    digest: str,
    key: Hashable,
    verdict: Callable[[], Attestation | Refusal | None],
) -> Attestation | Refusal | None:
    # a bundle that could not be read is judged again: its blob may be readable next time
    if cache is None or bundled.problem or bundled.bundle is None:
        return verdict()
    return cache.derived(("attestation", bundled.manifest_digest, digest, key), verdict)


class _NoVerifier(Exception):
    """The trusted root could not be loaded: no bundle was judged, so nothing is remembered."""

    def __init__(self, error: VerificationError) -> None:
        super().__init__(error.message)
        self.error = error


def _judge_keyless(
    bundles: Sequence[store.StoredBundle], digest: str, policy: KeylessPolicy, cache: RegistryCache | None
) -> Found:
    """Keyless attestations: each bundle with a certificate is verified with sigstore-python
    against the policy's trusted root and identity, for the type its statement claims."""
    from lockgate.signing import verify

    verifiers: list[Any] = []

    def verifier() -> Any:
        if not verifiers:
            try:
                verifiers.append(verify.trust_root_verifier(policy))
            except VerificationError as exc:
                raise _NoVerifier(exc) from None
        return verifiers[0]

    root = policy.trusted_root
    # a trusted root rewritten in place (a rotation) is another root
    stamp = (root.stat().st_mtime_ns, root.stat().st_size) if root is not None and root.exists() else None
    key = ("keyless", policy, stamp)
    found: list[Attestation] = []
    refused: list[Refusal] = []
    for bundled in bundles:
        claimed = _claims(bundled.bundle)
        if claimed[0] == statement.COSIGN_SIGN_PREDICATE:
            continue  # a signature, not an attestation
        try:
            outcome = _remembered(
                cache,
                bundled,
                digest,
                key,
                lambda bundled=bundled, claimed=claimed: _keyless_verdict(  # type: ignore[misc]
                    bundled, digest, policy, claimed, verifier
                ),
            )
        except _NoVerifier as failed:
            outcome = Refusal(
                f"referrer {bundled.manifest_digest}: {failed.error.message}",
                *claimed,
                referrer=bundled.manifest_digest,
            )
        if isinstance(outcome, Refusal):
            refused.append(outcome)
        elif outcome is not None:
            found.append(outcome)
    return Found(found, refused)


def _keyless_verdict(
    bundled: store.StoredBundle,
    digest: str,
    policy: KeylessPolicy,
    claimed: tuple[str | None, str | None],
    verifier: Callable[[], Any],
) -> Attestation | Refusal:
    from dataclasses import replace

    from lockgate.signing import verify

    try:
        if bundled.problem or bundled.bundle is None:
            raise VerificationError(bundled.problem or "no bundle")
        if bundled.subject_digest != digest:
            raise VerificationError(f"its subject is {bundled.subject_digest}, not {digest}")
        document = store.read_value(bundled.bundle, "the bundle")
        if not isinstance(document, dict) or "publicKey" in (document.get("verificationMaterial") or {}):
            raise VerificationError("it is signed with a key, not keyless")
        if claimed[0] is None:
            raise VerificationError("its statement is unreadable")
        identity, issuer = verify.verify_keyless_bundle(
            bundled.bundle, replace(policy, predicate_type=claimed[0]), digest=digest, verifier=verifier()
        )
    except (VerificationError, ValueError) as exc:
        message = exc.message if isinstance(exc, VerificationError) else "the bundle is not valid JSON"
        return Refusal(
            f"referrer {bundled.manifest_digest}: {message}", *claimed, referrer=bundled.manifest_digest
        )
    payload = statement.envelope_of(document).payload
    predicate = store.read_value(payload, "the statement").get("predicate")
    return Attestation(
        digest=digest,
        predicate_type=claimed[0],
        predicate=predicate if isinstance(predicate, dict) else {},
        signer=identity + (f" (issuer {issuer})" if issuer else ""),
        manifest_digest=bundled.manifest_digest,
        payload=payload,
    )


def _claims(bundle: bytes | None) -> tuple[str | None, str | None]:
    """(predicate type, cluster) a bundle's statement claims, unverified; None where unreadable."""
    try:
        envelope = statement.envelope_of(store.read_value(bundle or b"", "the bundle"))
        doc = store.read_value(envelope.payload, "the statement")
        predicate = doc.get("predicate") or {}
        cluster = predicate.get("cluster") if isinstance(predicate, dict) else None
        return str(doc["predicateType"]), None if cluster is None else str(cluster)
    except (ValueError, KeyError, TypeError, AttributeError, VerificationError):
        return None, None


def _bundle_hint(bundle: Json) -> str | None:
    material = bundle.get("verificationMaterial")
    public = material.get("publicKey") if isinstance(material, dict) else None
    hint = public.get("hint") if isinstance(public, dict) else None
    return hint if isinstance(hint, str) else None


def _verified(
    bundled: store.StoredBundle,
    digest: str,
    policies: tuple[KeyPolicy, ...],
    hints: tuple[str, ...] = (),
) -> Attestation | None:
    if bundled.problem or bundled.bundle is None:
        raise VerificationError(bundled.problem or "no bundle")
    if bundled.subject_digest != digest:
        raise VerificationError(f"its subject is {bundled.subject_digest}, not {digest}")
    try:
        bundle = store.read_value(bundled.bundle, "the bundle")
    except ValueError:
        raise VerificationError("the bundle is not valid JSON") from None
    if not isinstance(bundle, dict):
        raise VerificationError("the bundle is not a JSON object")
    if "publicKey" not in (bundle.get("verificationMaterial") or {}):
        raise VerificationError("it is signed with a certificate (keyless), not with a key")
    envelope = statement.envelope_of(bundle)
    if envelope.payload_type != statement.PAYLOAD_TYPE:
        raise VerificationError(f"the envelope holds {envelope.payload_type!r}, not an in-toto statement")
    hint = _bundle_hint(bundle)
    if hint and hints and hint in hints:
        # the key the bundle names is tried first: a set of many keys costs one check, not many
        # (the hint is unsigned, so it only orders the keys; a wrong hint costs the other checks)
        first = hints.index(hint)
        policies = (policies[first], *policies[:first], *policies[first + 1 :])
    signed_by = None
    for policy in policies:
        for signature in envelope.signatures:
            try:
                keys.check_signature(
                    policy.key, signature, statement.pae(envelope.payload_type, envelope.payload)
                )
            except VerificationError:
                continue
            signed_by = policy
            break
        if signed_by is not None:
            break
    if signed_by is None:
        raise VerificationError("not signed by " + ", ".join(p.source for p in policies))
    try:
        doc = store.read_value(envelope.payload, "the signed statement")
        predicate_type = str(doc["predicateType"])
        predicate = doc.get("predicate")
    except (ValueError, KeyError, TypeError):
        raise VerificationError("the signed statement is not valid JSON with a predicateType") from None
    if predicate_type == statement.COSIGN_SIGN_PREDICATE:
        return None  # a signature, not an attestation
    # the subject must be this very digest: a statement copied from another artifact is refused
    statement.check(envelope.payload_type, envelope.payload, digest=digest, predicate_type=predicate_type)
    claimed = predicate.get("cluster") if isinstance(predicate, dict) else None
    if isinstance(claimed, str):
        signed_by = _bound_for(signed_by, policies, claimed)
    return Attestation(
        digest=digest,
        predicate_type=predicate_type,
        predicate=predicate if isinstance(predicate, dict) else {},
        signer=f"key {keys.key_id(signed_by.key)} ({signed_by.source})",
        manifest_digest=bundled.manifest_digest,
        payload=envelope.payload,
    )


def _bound_for(signed_by: KeyPolicy, policies: Sequence[KeyPolicy], claimed: str) -> KeyPolicy:
    """The key that verified, if it may attest for the ``claimed`` cluster (``keybinding``): the
    same key may be in the set twice, bound to two clusters; else a ``VerificationError`` naming
    the cluster the key is for and the one the statement claims."""
    if signed_by.cluster is None or signed_by.cluster == claimed:
        return signed_by
    same = statement.key_hint(signed_by.key)
    for policy in policies:
        if policy.cluster in (None, claimed) and statement.key_hint(policy.key) == same:
            return policy
    raise VerificationError(
        f"signed by the key for {signed_by.cluster} ({signed_by.source}), claims {claimed}"
    )


def attest_with_key(
    reference: Reference | str,
    key: keys.PrivateKey,
    *,
    predicate_type: str,
    predicate: Json,
    client: RegistryClient | None = None,
    created: dt.datetime | None = None,
) -> SignedArtifact:
    """Attest ``predicate`` about the manifest ``reference`` names (by digest), signed with ``key``.

    The same statement already stored and signed by this key is not written again
    (``status == "unchanged"``)."""
    ref = by_digest(reference, hint="; attest the digest you checked")
    client = client or RegistryClient.for_reference(ref)
    digest = client.resolve(ref)
    payload = statement_bytes(ref.name, digest, predicate_type, predicate)
    public = key.public_key()
    signer = f"key {keys.key_id(public)}"
    for existing in read(client, ref.repository, digest, KeyPolicy(public, "the signing key")).attestations:
        if existing.payload == payload:
            return SignedArtifact(
                reference=str(ref),
                digest=digest,
                mode="attestation",
                signer=signer,
                stored_at=str(ref.with_digest(existing.manifest_digest)),
                status="unchanged",
            )
    when = (created or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    referrer = store.write_bundle(
        client, ref.repository, digest, key_bundle(payload, key), predicate_type=predicate_type, created=when
    )
    return SignedArtifact(
        reference=str(ref),
        digest=digest,
        mode="attestation",
        signer=signer,
        stored_at=str(ref.with_digest(referrer)),
    )


def attest_keyless(
    reference: Reference | str,
    *,
    predicate_type: str,
    predicate: Json,
    token: str | None = None,
    trust_config: Path | None = None,
    staging: bool = False,
    client: RegistryClient | None = None,
) -> SignedArtifact:
    """Attest ``predicate`` keyless: the OIDC identity's Fulcio certificate signs the statement,
    Rekor logs it, and the bundle is stored like a key-signed one. Each is new evidence (a new
    certificate and log entry), so it is always written."""
    from lockgate.signing import sign

    ref = by_digest(reference, hint="; attest the digest you checked")
    client = client or RegistryClient.for_reference(ref)
    digest = client.resolve(ref)
    payload = statement_bytes(ref.name, digest, predicate_type, predicate)
    bundle = sign.keyless_bundle(
        digest, token or sign.ambient_token(), staging=staging, trust_config=trust_config, payload=payload
    )
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    referrer = store.write_bundle(
        client, ref.repository, digest, bundle, predicate_type=predicate_type, created=when
    )
    return SignedArtifact(
        reference=str(ref),
        digest=digest,
        mode="attestation (keyless)",
        signer=sign.bundle_signer(bundle),
        stored_at=str(ref.with_digest(referrer)),
    )


# -- the runner's health predicates ---------------------------------------------------------------


def timestamp(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> dt.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


#: ``health_predicate`` rounds the time up to the whole second, so an attestation just written
#: may be dated up to this far ahead; beyond that the attester's clock is wrong (not counted)
ROUNDING = 1.0


def health_predicate(
    *, cluster: str, sync: str, revision: str, healthy: bool, at: dt.datetime, objects: dict[str, int]
) -> Json:
    """The predicate of a runner's health attestation (``HEALTHY`` or ``UNHEALTHY``).

    The time is written in whole seconds, rounded up, so a soak measured from it is never
    shorter than asked."""
    if at.microsecond:
        at = at.replace(microsecond=0) + dt.timedelta(seconds=1)
    return {
        "cluster": cluster,
        "sync": sync,
        "revision": revision,
        ("healthyAt" if healthy else "failedAt"): timestamp(at),
        "objects": dict(objects),
    }


def format_duration(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.999))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs and minutes < 10 else f"{minutes}m"
    return f"{secs}s"


def verify_attestation(
    reference: Reference | str,
    policy: AttestationPolicy,
    predicate_type: str,
    *,
    client: RegistryClient | None = None,
) -> list[Attestation]:
    """The attestations of ``predicate_type`` for the digest ``reference`` names, signed by
    ``policy``; a ``VerificationError`` saying why when there is none."""
    ref = parse(reference) if isinstance(reference, str) else reference
    client = client or RegistryClient.for_reference(ref)
    try:
        digest = client.resolve(ref)
        found = read(client, ref.repository, digest, policy)
    except LockgateError as exc:
        if isinstance(exc, VerificationError):
            raise
        # refused all the same, with the cause's exit code as ``verify`` gives it: an unreachable
        # registry is 9, a tag not found 7, refused credentials 3, in every command
        cause = type(exc) if isinstance(exc, RegistryError | AuthError | ResolveError) else VerificationError
        raise cause(
            f"cannot verify the attestations of {ref}: {exc.message}; refusing it (verification fails closed)"
        ) from exc
    matching = [a for a in found.attestations if a.predicate_type == predicate_type]
    if matching:
        return matching
    others = sorted({a.predicate_type for a in found.attestations})
    signers = policy_source(policy)
    lines = [f"{ref.name}@{digest} has no attestation of type {predicate_type} signed by {signers}"]
    if others:
        lines.append(f"  signed attestations of other types: {', '.join(others)}")
    lines.extend(f"  - {reason}" for reason in found.refusals_about(predicate_type, None))
    raise VerificationError("\n".join(lines))


def policy_source(policy: AttestationPolicy) -> str:
    """Who a policy trusts, for messages: its key's source, or its identity and issuer."""
    """Who a policy trusts, for messages: its key's source, or its identity and issuer."""
    if isinstance(policy, KeylessPolicy):
        return f"identity {policy.identity} (issuer {policy.issuer})"
    return policy.source
