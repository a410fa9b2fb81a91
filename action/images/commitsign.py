"""How an image-update commit is signed: Flux's ``git.commit.signingKey``, mapped to CI.

Flux keeps an OpenPGP private key in a Secret and signs in-process. In CI the key is
already in the job's git/gpg/ssh setup, so lockgate asks git to sign (``git commit -S``,
through the ``lockgate.git`` seam) and only chooses the key and its format:

- ``--signing-key PATH`` to an SSH key (private, or ``.pub`` with the private half in
  ``ssh-agent``), or ``key::ssh-ed25519 AAAA...``: ``gpg.format=ssh``;
- ``--signing-key ID`` (a GPG key id, fingerprint or e-mail): ``gpg.format=openpgp``;
- no ``--signing-key`` but the automation sets ``signingKey``: whatever the job's git
  config says (``user.signingkey``, ``gpg.format``); git's error is reported if nothing
  is configured.

Nothing here reads key material beyond the first line of a key file, to tell its kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

_SSH_PREFIXES = ("ssh-", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-", "-----BEGIN OPENSSH PRIVATE KEY-----")


@dataclass(frozen=True)
class Signing:
    """Sign with ``key`` in ``format`` (both None: the job's git configuration decides)."""

    key: str | None = None
    format: str | None = None  #: "ssh" or "openpgp"

    @classmethod
    def from_key(cls, key: str) -> Signing:
        """A ``--signing-key`` value: an SSH key file or literal, else a GPG key id."""
        if key.startswith("key::"):
            return cls(key, "ssh")
        path = Path(key).expanduser()
        if path.is_file():
            with path.open("rb") as handle:
                first = handle.readline(200).decode("ascii", errors="replace").strip()
            if first.startswith(_SSH_PREFIXES):
                return cls(str(path.resolve()), "ssh")
        return cls(key, "openpgp")

    def git_config(self) -> dict[str, str]:
        """The git configuration ``commit -S`` runs with (empty: the job's own decides)."""
        config: dict[str, str] = {}
        if self.format is not None:
            config["gpg.format"] = self.format
        if self.key is not None:
            config["user.signingkey"] = self.key
        return config

    def describe(self) -> str:
        if self.key is None:
            return "the job's git signing configuration"
        return f"{self.format} key {self.key}"
