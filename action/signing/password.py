"""Reading a cosign private key for the CLI: the file, and its password from the environment or a prompt.

Shared by ``lockgate sign --key`` and ``lockgate push --sign key`` so both load the key (and
fail on a wrong password) the same way, before anything is written to the registry.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from lockgate.errors import UsageError

if TYPE_CHECKING:
    from lockgate.signing.keys import PrivateKey


def key_password(*, confirm: bool) -> bytes:
    """The key password: LOCKGATE_PASSWORD, COSIGN_PASSWORD, else a prompt on a terminal."""
    from lockgate.signing import keys

    found = keys.password_from_env()
    if found is not None:
        return found
    if not sys.stdin.isatty():
        raise UsageError("no key password: set LOCKGATE_PASSWORD (or COSIGN_PASSWORD), or run on a terminal")
    text: str = click.prompt(
        "Password for the private key",
        hide_input=True,
        confirmation_prompt=confirm,
        default="",
        show_default=False,
        err=True,
    )
    return text.encode()


def read_key_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def load_private_key(path: Path) -> PrivateKey:
    """The decrypted private key in ``path``; a wrong password is an error naming the file."""
    from lockgate.signing import keys

    return keys.load_private_key(read_key_file(path), key_password(confirm=False), source=str(path))
