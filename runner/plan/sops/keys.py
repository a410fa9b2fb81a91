"""age identities and the data key: what the ``*.agekey`` entries of a Secret unlock.

An entry holds an age identity file (``age-keygen`` output: ``#`` comments and one
``AGE-SECRET-KEY-1...`` per line), as Flux's kustomize-controller imports them. The data
key of a document is age-encrypted (armored) once per recipient in ``sops.age[].enc``;
``pyrage`` (the Rust ``age`` crate) decrypts it: no age cryptography is written here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyrage
from pyrage import x25519

DATA_KEY_SIZE = 32


class AgeError(Exception):
    """No identity fits, or an entry is not an identity file; never carries key material."""


@dataclass(frozen=True)
class Identities:
    """The identities of a decryption Secret and where they came from (for messages)."""

    source: str
    keys: tuple[x25519.Identity, ...]

    @property
    def recipients(self) -> list[str]:
        return [str(key.to_public()) for key in self.keys]


def parse(entries: dict[str, bytes], *, source: str) -> Identities:
    """Every identity of every entry (the caller passes the ``*.agekey`` ones)."""
    found: list[x25519.Identity] = []
    for name in sorted(entries):
        try:
            text = entries[name].decode("utf-8")
        except UnicodeDecodeError:
            raise AgeError(f"{source}: entry {name!r} is not text (expected an age identity file)") from None
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            try:
                found.append(x25519.Identity.from_str(line))
            except pyrage.IdentityError:
                raise AgeError(
                    f"{source}: entry {name!r} line {number} is not an age identity "
                    "(expected AGE-SECRET-KEY-1..., as age-keygen writes)"
                ) from None
    return Identities(source=source, keys=tuple(found))


def data_key(stanzas: Sequence[tuple[str, str]], identities: Identities) -> bytes:
    """The data key from the first ``(recipient, enc)`` stanza one of the identities opens."""
    if not stanzas:
        raise AgeError("is not encrypted for any age recipient (lockgate decrypts age only)")
    if not identities.keys:
        raise AgeError(f"{identities.source} holds no age identity (no *.agekey entry with a key)")
    for _recipient, enc in stanzas:
        try:
            key = bytes(pyrage.decrypt(enc.encode("utf-8"), list(identities.keys)))
        except pyrage.DecryptError:
            continue
        if len(key) != DATA_KEY_SIZE:
            raise AgeError(f"has a data key of {len(key)} bytes, expected {DATA_KEY_SIZE}")
        return key
    wanted = ", ".join(sorted({recipient for recipient, _ in stanzas}))
    have = ", ".join(identities.recipients)
    raise AgeError(
        f"cannot be decrypted with the age identities of {identities.source}: the file is "
        f"encrypted for {wanted}; the Secret holds identities for {have}"
    )
