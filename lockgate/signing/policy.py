"""Verification policies: who must have signed, as values the CLI and the runner build.

``KeyPolicy``: the signature must verify with this public key (and, bound to a cluster, an
attestation it signed may claim that cluster only); ``KeySetPolicy``: with any one of these
keys (a Secret of ``*.pub`` entries, as Flux). ``KeylessPolicy``: the
Sigstore certificate must chain to the trusted root and name this identity (a SAN) and
OIDC issuer, exactly or by regular expression, and optionally the GitHub workflow-run
claims (``lockgate.signing.github``: repository, ref, trigger, sha, workflow name, matched
exactly as cosign's ``--certificate-github-workflow-*``) and any CI's source and build
extensions (``lockgate.signing.buildclaims``: a GitLab project, ref, pipeline source...).
A regular expression is Go's, as cosign's ``--certificate-identity-regexp`` is, and is
compiled by RE2 (``lockgate.goregex``); it must match the whole value: cosign matches
unanchored, so a cosign policy written with ``^...$`` means the same here, and one without
anchors is stricter here, never looser.

``CertificatePolicy`` adapts a ``KeylessPolicy`` to sigstore-python's policy protocol and
reports expected against found when the certificate does not match.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cryptography.x509 import (
    Certificate,
    ExtensionNotFound,
    ObjectIdentifier,
    OtherName,
    RFC822Name,
    SubjectAlternativeName,
    UniformResourceIdentifier,
)

from lockgate import goregex
from lockgate.errors import UsageError
from lockgate.signing import buildclaims, keys, statement
from lockgate.signing.buildclaims import BuildClaims
from lockgate.signing.github import CLAIMS, GITHUB_BASE, SOURCE_REPOSITORY_URI, GitHubClaims

_ISSUER_V1 = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
_ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
_OTHERNAME_SAN = ObjectIdentifier("1.3.6.1.4.1.57264.1.7")


@dataclass(frozen=True)
class Match:
    """An expected value: exact, or a Go regular expression over the whole value.

    A pattern Go refuses raises ``goregex.RegexpError``; callers name the flag or field.
    """

    value: str
    regexp: bool = False

    def __post_init__(self) -> None:
        if self.regexp:
            try:
                goregex.compile(self.value)
            except goregex.RegexpError as exc:
                raise exc.within(f"invalid regular expression '{self.value}'") from None

    def matches(self, found: str | None) -> bool:
        if found is None:
            return False
        if not self.regexp:
            return found == self.value
        return goregex.compile(self.value).fullmatch(found) is not None

    def __str__(self) -> str:
        return f"matching /{self.value}/" if self.regexp else repr(self.value)


@dataclass(frozen=True)
class KeyPolicy:
    """Signed with the private half of ``key``; ``source`` names the key in messages."""

    key: keys.PublicKey
    source: str = "the public key"
    check_repository: bool = True
    #: the one cluster an attestation signed by this key may claim (its Secret entry
    #: ``<clusterName>.pub``, ``lockgate.signing.keybinding``); None: any cluster
    cluster: str | None = None

    @classmethod
    def from_file(cls, path: Path) -> KeyPolicy:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read public key {path}: {exc.strerror}") from None
        return cls.from_bytes(data, source=str(path))

    @classmethod
    def from_bytes(cls, data: bytes, *, source: str) -> KeyPolicy:
        """A PEM public key held in memory (a Secret's entry); ``source`` names it in messages."""
        return cls(key=keys.load_public_key(data, source=source), source=source)


@dataclass(frozen=True)
class KeySetPolicy:
    """Signed with the private half of any one of ``keys`` (Flux's verify.secretRef: every ``*.pub``)."""

    keys: tuple[KeyPolicy, ...]
    #: names the set in messages (``Secret/ns/name``)
    source: str = "the public keys"

    def __post_init__(self) -> None:
        if not self.keys:
            raise UsageError(f"{self.source}: no public keys")

    @classmethod
    def from_pems(cls, pems: dict[str, bytes], *, source: str) -> KeySetPolicy:
        """One key per entry, in name order; each key is named ``source[entry]``."""
        return cls(
            tuple(KeyPolicy.from_bytes(pems[name], source=f"{source}[{name}]") for name in sorted(pems)),
            source=source,
        )


@dataclass(frozen=True)
class KeylessPolicy:
    """A Sigstore certificate for ``identity`` from ``issuer`` (plus the GitHub claims pinned).

    ``trusted_root`` is a trusted_root.json for a private or air-gapped Sigstore; None means
    the public-good production instance (the root that ships with sigstore-python, updated
    over TUF when online).
    """

    identity: Match
    issuer: Match
    github: GitHubClaims = field(default_factory=GitHubClaims)
    #: any CI's source and build extensions pinned (GitLab CI's project, ref, trigger...)
    build: BuildClaims = field(default_factory=BuildClaims)
    trusted_root: Path | None = None
    offline: bool = False
    #: the statement type that counts as a signature (cosign v3's); other attestations do not
    predicate_type: str = statement.COSIGN_SIGN_PREDICATE


Policy = KeyPolicy | KeySetPolicy | KeylessPolicy


@dataclass(frozen=True)
class CertificateFacts:
    """What a Fulcio certificate says about its subject."""

    identities: list[str] = field(default_factory=list)
    issuer: str | None = None
    github: GitHubClaims = field(default_factory=GitHubClaims)
    build: BuildClaims = field(default_factory=BuildClaims)

    @classmethod
    def of(cls, cert: Certificate) -> CertificateFacts:
        identities: list[str] = []
        try:
            san = cert.extensions.get_extension_for_class(SubjectAlternativeName).value
            identities += san.get_values_for_type(RFC822Name)
            identities += san.get_values_for_type(UniformResourceIdentifier)
            identities += [
                other.value.decode(errors="replace")
                for other in san.get_values_for_type(OtherName)
                if other.type_id == _OTHERNAME_SAN
            ]
        except ExtensionNotFound:
            pass
        return cls(
            identities=identities,
            issuer=_der_string(cert, _ISSUER_V2) or _raw(cert, _ISSUER_V1),
            github=_github_claims(cert),
            build=BuildClaims(
                **{c.attribute: _der_string(cert, ObjectIdentifier(c.oid)) for c in buildclaims.CLAIMS}
            ),
        )

    def mismatches(self, policy: KeylessPolicy) -> list[str]:
        """Each way the certificate fails ``policy``, as "expected X, found Y"; empty when it passes."""
        problems = []
        if not any(policy.identity.matches(found) for found in self.identities):
            problems.append(f"identity: expected {policy.identity}, found {_list(self.identities)}")
        if not policy.issuer.matches(self.issuer):
            problems.append(f"issuer: expected {policy.issuer}, found {self.issuer!r}")
        problems += self.github.mismatches(policy.github)
        problems += self.build.mismatches(policy.build)
        return problems


class CertificatePolicy:
    """sigstore-python's ``VerificationPolicy`` protocol for a ``KeylessPolicy``."""

    def __init__(self, policy: KeylessPolicy) -> None:
        self.policy = policy
        self.facts: CertificateFacts | None = None

    def verify(self, cert: Certificate) -> None:
        from sigstore.errors import VerificationError as SigstoreVerificationError

        self.facts = CertificateFacts.of(cert)
        problems = self.facts.mismatches(self.policy)
        if problems:
            raise SigstoreVerificationError(
                "the signing certificate does not match the policy: " + "; ".join(problems)
            )


def _github_claims(cert: Certificate) -> GitHubClaims:
    """The GitHub claims, read as ``lockgate.signing.github`` says: the raw extension cosign
    matches, else (a github.com certificate only) the newer DER one."""
    github_com = (_der_string(cert, ObjectIdentifier(SOURCE_REPOSITORY_URI)) or "").startswith(GITHUB_BASE)
    found: dict[str, str | None] = {}
    for claim in CLAIMS:
        value = _raw(cert, ObjectIdentifier(claim.oid))
        if value is None and claim.fallback_oid is not None and github_com:
            value = _der_string(cert, ObjectIdentifier(claim.fallback_oid))
            if value is not None and claim.fallback_oid == SOURCE_REPOSITORY_URI:
                value = value.removeprefix(GITHUB_BASE)
        found[claim.attribute] = value
    return GitHubClaims(**found)


def _list(values: list[str]) -> str:
    return ", ".join(repr(v) for v in values) if values else "no identity"


def _raw(cert: Certificate, oid: ObjectIdentifier) -> str | None:
    try:
        value = cert.extensions.get_extension_for_oid(oid).value
    except ExtensionNotFound:
        return None
    return bytes(getattr(value, "value", b"")).decode(errors="replace")


def _der_string(cert: Certificate, oid: ObjectIdentifier) -> str | None:
    """A Fulcio v2 extension: a DER UTF8String (tag 0x0C) with a short or long length."""
    try:
        data = bytes(getattr(cert.extensions.get_extension_for_oid(oid).value, "value", b""))
    except ExtensionNotFound:
        return None
    if len(data) < 2 or data[0] != 0x0C:
        return None
    length, offset = data[1], 2
    if length & 0x80:
        count = length & 0x7F
        length, offset = int.from_bytes(data[2 : 2 + count], "big"), 2 + count
    return data[offset : offset + length].decode(errors="replace")
