"""One SOPS value: ``ENC[AES256_GCM,data:...,iv:...,tag:...,type:...]``, and the bytes the MAC hashes.

As sops' ``aes/cipher.go``: AES-256-GCM with the value's own nonce (32 bytes when sops
wrote it), its path (``key:key:``) as additional data, and a type (``str``, ``int``,
``float``, ``bool``, ``bytes``, ``time``, ``comment``) that says what the plaintext is. An
empty string is not encrypted (sops leaves it empty). ``mac_bytes`` is sops' ``ToBytes``:
what a value contributes to the MAC. Errors never carry the value or the plaintext.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import math
import re
from decimal import Decimal
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_ENC = re.compile(r"^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]")
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


class CipherError(Exception):
    """A value that cannot be decrypted; the message names no plaintext and no ciphertext."""


def is_encrypted(value: object) -> bool:
    return isinstance(value, str) and _ENC.match(value) is not None


def decrypt(value: str, key: bytes, aad: str) -> Any:
    """The plaintext of one value, typed as its ``type`` says."""
    if value == "":
        return ""
    found = _ENC.match(value)
    if found is None:
        raise CipherError("is not a sops-encrypted value (expected ENC[AES256_GCM,...])")
    try:
        data, iv, tag = (base64.b64decode(found.group(i), validate=True) for i in (1, 2, 3))
    except binascii.Error:
        raise CipherError("has a part that is not base64") from None
    if not iv:
        raise CipherError("has an empty iv")
    try:
        plain = AESGCM(key).decrypt(iv, data + tag, aad.encode("utf-8"))
    except InvalidTag:
        raise CipherError(
            "does not authenticate: the value was changed, or moved, after sops encrypted it"
        ) from None
    return typed(plain, found.group(4))


def typed(plain: bytes, kind: str) -> Any:
    text = plain.decode("utf-8", "surrogateescape")
    if kind in ("str", "comment", "time"):
        return text
    if kind == "bytes":
        return text
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise CipherError("has type int but its plaintext is not an integer") from None
    if kind == "float":
        try:
            return float(text)
        except ValueError:
            raise CipherError("has type float but its plaintext is not a number") from None
    if kind == "bool":
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise CipherError("has type bool but its plaintext is not a boolean")
    raise CipherError(f"has the unknown type {kind!r}")


def go_float(value: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'f', -1, 64)``: shortest round-trip digits, never an exponent."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = format(Decimal(repr(value)).normalize(), "f")
    return text


def mac_bytes(value: Any) -> bytes:
    """sops' ``ToBytes``: what one (plaintext) leaf contributes to the MAC."""
    if isinstance(value, bool):
        return b"True" if value else b"False"
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, float):
        return go_float(value).encode()
    if isinstance(value, bytes):
        return value
    if isinstance(value, dt.datetime):
        return value.isoformat().replace("+00:00", "Z").encode()
    if isinstance(value, dt.date):
        return value.isoformat().encode()
    raise CipherError(f"has a value of type {type(value).__name__}, which sops cannot hold")
