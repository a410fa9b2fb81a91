"""Signing what ``lockgate push --sign`` pushed: the manifest digest, right after the push.

The signer is made before anything is pushed (the key is decrypted, the keyless identity
token found), so a wrong password or a missing token fails with nothing written. Signing
itself is the shared library's (``lockgate.signing.sign``); this module only carries the
choice of mode from the flags to the push. The signing modules are imported when a
signer is used, so a plain push never loads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockgate import registry
from lockgate.errors import UsageError

if TYPE_CHECKING:
    from lockgate.signing.keys import PrivateKey
    from lockgate.signing.sign import SignedArtifact


@dataclass(frozen=True)
class Signer:
    """With a cosign key, or keyless with an OIDC token (and maybe a private Sigstore's trust config)."""

    mode: str
    key: PrivateKey | None = None
    token: str | None = None
    trust_config: Path | None = None
    staging: bool = False

    @classmethod
    def with_key(cls, key: PrivateKey) -> Signer:
        return cls("key", key=key)

    @classmethod
    def keyless(cls, token: str, *, trust_config: Path | None = None, staging: bool = False) -> Signer:
        return cls("keyless", token=token, trust_config=trust_config, staging=staging)

    def sign(
        self, target: registry.Reference, digest: str, client: registry.RegistryClient
    ) -> SignedArtifact:
        """Sign ``digest`` in ``target``'s repository (by digest, never by tag)."""
        from lockgate.signing import sign

        ref = target.with_digest(digest)
        if self.key is not None:
            return sign.sign_with_key(ref, self.key, client=client)
        return sign.sign_keyless(
            ref, token=self.token, client=client, staging=self.staging, trust_config=self.trust_config
        )

    def __repr__(self) -> str:
        # never show the key or the token
        return f"Signer(mode={self.mode!r})"


@dataclass(frozen=True)
class SignOptions:
    """``push --sign key|keyless`` and what goes with it, as the user gave them."""

    mode: str | None = None  #: "key", "keyless" or None (do not sign)
    key_path: Path | None = None
    token: str | None = None
    trust_config: Path | None = None


def prepare(options: SignOptions) -> Signer | None:
    """The signer the options ask for, ready to sign: the key decrypted, the token found.

    Called before anything is pushed, so a wrong password or a missing token fails with
    nothing written.
    """
    if options.mode is None:
        if options.key_path is not None or options.trust_config is not None:
            raise UsageError("--key and --trust-config need --sign key or --sign keyless")
        return None
    if options.mode == "key":
        if options.key_path is None:
            raise UsageError("--sign key needs --key FILE (a cosign private key)")
        if options.trust_config is not None:
            raise UsageError("--trust-config applies to --sign keyless only")
        from action.signing import password

        return Signer.with_key(password.load_private_key(options.key_path))
    if options.key_path is not None:
        raise UsageError("--key applies to --sign key only")
    token = options.token
    if token is None:
        from lockgate.signing import sign

        token = sign.ambient_token()
    return Signer.keyless(token, trust_config=options.trust_config)
