"""A verification policy from what a user wrote: one constructor for every place that asks.

``lockgate verify`` flags, ``lockgate reconcile`` flags and a Sync document's
``spec.verify`` all describe the same policy in different words; ``VerifyOptions`` holds
the values and ``Spelling`` how each one is written where the user wrote it, so an error
names the flag or field to fix. ``build_policy`` refuses a keyless policy that trusts one of
lockgate's own reusable workflows without pinning the calling repository, and
``policy_warnings`` says when another GitHub workflow identity is unpinned
(``lockgate.signing.github.audit``). The policy classes (and ``cryptography`` behind them) are
imported only when a policy is built: they cost a tenth of a second of start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lockgate.errors import UsageError
from lockgate.signing import buildclaims, github
from lockgate.signing.buildclaims import BuildClaims
from lockgate.signing.github import GitHubClaims

if TYPE_CHECKING:
    from lockgate.signing.policy import KeylessPolicy, Match, Policy


@dataclass(frozen=True)
class VerifyOptions:
    key: Path | None = None
    identity: str | None = None
    identity_regexp: str | None = None
    issuer: str | None = None
    issuer_regexp: str | None = None
    #: the GitHub workflow-run claims to pin (cosign's --certificate-github-workflow-*)
    github: GitHubClaims = field(default_factory=GitHubClaims)
    #: any CI's source and build extensions to pin (``lockgate.signing.buildclaims``)
    build: BuildClaims = field(default_factory=BuildClaims)
    trusted_root: Path | None = None
    offline: bool = False
    insecure_skip: bool = False

    @property
    def keyless(self) -> bool:
        """Any keyless value is set."""
        return self.github.any() or self.build.any() or any(
            value is not None
            for value in (self.identity, self.identity_regexp, self.issuer, self.issuer_regexp)
        )


@dataclass(frozen=True)
class Spelling:
    """How each option is written where the user wrote it (a flag, a document field)."""

    key: str
    identity: str
    identity_regexp: str
    issuer: str
    issuer_regexp: str
    insecure_skip: str = ""
    #: each GitHub claim's name (``GitHubClaims`` attribute -> flag or field)
    github: Mapping[str, str] = field(default_factory=lambda: github.names("cosign"))
    #: each source/build claim's name (``BuildClaims`` attribute -> flag or field)
    build: Mapping[str, str] = field(default_factory=lambda: buildclaims.names("flag", "--certificate-"))


#: ``lockgate verify``, with cosign's flag names
VERIFY_FLAGS = Spelling(
    key="--key",
    identity="--certificate-identity",
    identity_regexp="--certificate-identity-regexp",
    issuer="--certificate-oidc-issuer",
    issuer_regexp="--certificate-oidc-issuer-regexp",
)


def field_spelling(prefix: str) -> Spelling:
    """A document's keyless fields under ``prefix`` (``spec.verify.``), key and skip included."""
    return Spelling(
        key=f"{prefix}key",
        identity=f"{prefix}identity",
        identity_regexp=f"{prefix}identityRegexp",
        issuer=f"{prefix}issuer",
        issuer_regexp=f"{prefix}issuerRegexp",
        insecure_skip=f"{prefix}insecureSkip",
        github=github.names("field", prefix),
        build=buildclaims.names("field", prefix),
    )


def _match(exact: str | None, regexp: str | None, name: str, name_regexp: str) -> Match:
    from lockgate import goregex
    from lockgate.signing.policy import Match

    if (exact is None) == (regexp is None):
        raise UsageError(f"keyless verification needs exactly one of {name} and {name_regexp}")
    if exact is not None:
        return Match(exact, regexp=False)
    try:
        return Match(str(regexp), regexp=True)
    except goregex.RegexpError as exc:
        raise exc.within(name_regexp) from None


def build_policy(options: VerifyOptions, spelling: Spelling, *, required: bool = False) -> Policy | None:
    """The policy ``options`` describe; None when they describe none and none is ``required``.

    Skipping verification (``insecure_skip``) is exclusive with any policy; a key policy
    with any keyless value; a keyless policy needs exactly one of the exact and regexp
    forms for both the identity and the issuer.
    """
    from lockgate.signing.policy import KeylessPolicy, KeyPolicy

    s = spelling
    if options.insecure_skip and (options.key is not None or options.keyless):
        raise UsageError(
            f"{s.insecure_skip} cannot be combined with a verification policy ({s.key} or keyless)"
        )
    if options.key is not None:
        if options.keyless:
            raise UsageError(f"{s.key} cannot be combined with {', '.join(_keyless_given(options, s))}")
        return KeyPolicy.from_file(options.key)
    if options.keyless:
        policy = KeylessPolicy(
            identity=_match(options.identity, options.identity_regexp, s.identity, s.identity_regexp),
            issuer=_match(options.issuer, options.issuer_regexp, s.issuer, s.issuer_regexp),
            github=options.github,
            build=options.build,
            trusted_root=options.trusted_root,
            offline=options.offline,
        )
        _audit(policy, s)  # raises for lockgate's own reusable workflow, unpinned
        return policy
    if required:
        raise UsageError(
            f"no verification policy: pass {s.key}, or {s.identity} (or {s.identity_regexp}) "
            f"and {s.issuer} (or {s.issuer_regexp})"
        )
    return None


def policy_warnings(policy: Policy | None, spelling: Spelling) -> tuple[str, ...]:
    """What a user should hear about a policy ``build_policy`` built from ``spelling``'s
    options: a GitHub workflow identity that does not pin the repository. Empty otherwise."""
    from lockgate.signing.policy import KeylessPolicy

    if not isinstance(policy, KeylessPolicy):
        return ()
    warning = _audit(policy, spelling)
    return () if warning is None else (warning,)


def _keyless_given(options: VerifyOptions, s: Spelling) -> list[str]:
    exact = [
        (options.identity, s.identity),
        (options.identity_regexp, s.identity_regexp),
        (options.issuer, s.issuer),
        (options.issuer_regexp, s.issuer_regexp),
    ]
    pins = [(value, s.github[claim.attribute]) for claim, value in options.github.items()]
    pins += [(value, s.build[claim.attribute]) for claim, value in options.build.items()]
    return [name for value, name in exact + pins if value is not None]


def _audit(policy: KeylessPolicy, s: Spelling) -> str | None:
    return github.audit(
        policy.identity,
        policy.issuer,
        policy.github,
        identity_name=s.identity_regexp if policy.identity.regexp else s.identity,
        repository_name=s.github["repository"],
    )
