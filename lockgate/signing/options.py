"""A verification policy from what a user wrote: one constructor for every place that asks.

``lockgate verify`` flags, ``lockgate reconcile`` flags and a Sync document's
``spec.verify`` all describe the same policy in different words; ``VerifyOptions`` holds
the values and ``Spelling`` how each one is written where the user wrote it, so an error
names the flag or field to fix. The policy classes (and ``cryptography`` behind them) are
imported only when a policy is built: they cost a tenth of a second of start-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockgate.errors import UsageError

if TYPE_CHECKING:
    from lockgate.signing.policy import Match, Policy


@dataclass(frozen=True)
class VerifyOptions:
    key: Path | None = None
    identity: str | None = None
    identity_regexp: str | None = None
    issuer: str | None = None
    issuer_regexp: str | None = None
    github_repository: str | None = None
    github_ref: str | None = None
    trusted_root: Path | None = None
    offline: bool = False
    insecure_skip: bool = False

    @property
    def keyless(self) -> bool:
        """Any keyless value is set."""
        return any(
            value is not None
            for value in (
                self.identity,
                self.identity_regexp,
                self.issuer,
                self.issuer_regexp,
                self.github_repository,
                self.github_ref,
            )
        )


@dataclass(frozen=True)
class Spelling:
    """How each option is written where the user wrote it (a flag, a document field)."""

    key: str
    identity: str
    identity_regexp: str
    issuer: str
    issuer_regexp: str
    github: str = "--github-repository/--github-ref"
    insecure_skip: str = ""


#: ``lockgate verify``, with cosign's flag names
VERIFY_FLAGS = Spelling(
    key="--key",
    identity="--certificate-identity",
    identity_regexp="--certificate-identity-regexp",
    issuer="--certificate-oidc-issuer",
    issuer_regexp="--certificate-oidc-issuer-regexp",
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
            raise UsageError(f"{s.key} cannot be combined with {s.identity}, {s.issuer} or {s.github}")
        return KeyPolicy.from_file(options.key)
    if options.keyless:
        return KeylessPolicy(
            identity=_match(options.identity, options.identity_regexp, s.identity, s.identity_regexp),
            issuer=_match(options.issuer, options.issuer_regexp, s.issuer, s.issuer_regexp),
            github_repository=options.github_repository,
            github_ref=options.github_ref,
            trusted_root=options.trusted_root,
            offline=options.offline,
        )
    if required:
        raise UsageError(
            f"no verification policy: pass {s.key}, or {s.identity} (or {s.identity_regexp}) "
            f"and {s.issuer} (or {s.issuer_regexp})"
        )
    return None
