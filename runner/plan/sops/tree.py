"""A SOPS document's metadata, the walk that decrypts it, and the MAC check (sops' ``sops.go``).

The walk visits every leaf in document order; a list item has its list's path (sops adds
no index). Which leaves are encrypted is decided from the path as sops decides it: one
rule of ``unencrypted_suffix`` (the default, ``_unencrypted``), ``encrypted_suffix``,
``unencrypted_regex`` or ``encrypted_regex`` (Go regular expressions, matched anywhere in
any key of the path). The MAC is SHA-512 over the plaintext leaves in that order (only
the encrypted ones under ``mac_only_encrypted``, after a fixed 32-byte prefix), upper-case
hex, stored encrypted with the data key and ``lastmodified`` (RFC 3339, as Go formats it)
as additional data. A document decrypts completely or not at all.

Not supported, with a clear error: several key groups (Shamir's secret sharing) and the
comment rules (``*_comment_regex``): comments are not part of a parsed object, as in Flux,
which decrypts objects as JSON.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lockgate import goregex
from lockgate.errors import UsageError
from runner.plan.sops import cipher, keys

METADATA_KEY = "sops"
DEFAULT_UNENCRYPTED_SUFFIX = "_unencrypted"
MAC_ONLY_ENCRYPTED_PREFIX = bytes.fromhex("8a3fd2ad54ce66527b1034f3d147be0b0b975b3bf44f72c6fdadec8176f27d69")
_RULES = ("unencrypted_suffix", "encrypted_suffix", "unencrypted_regex", "encrypted_regex")
_COMMENT_RULES = ("unencrypted_comment_regex", "encrypted_comment_regex")


class SopsError(Exception):
    """The document cannot be decrypted; says why, never with a value."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Metadata:
    #: (recipient, armored encrypted data key) per age recipient
    age: tuple[tuple[str, str], ...]
    last_modified: str
    mac: str
    rule: str
    pattern: str
    mac_only_encrypted: bool = False

    def encrypted(self, path: list[str]) -> bool:
        """sops' ``shouldBeEncrypted`` for one rule."""
        if self.rule == "unencrypted_suffix":
            return not any(part.endswith(self.pattern) for part in path)
        if self.rule == "encrypted_suffix":
            return any(part.endswith(self.pattern) for part in path)
        regexp = goregex.compile(self.pattern)
        matched = any(regexp.search(part) is not None for part in path)
        return not matched if self.rule == "unencrypted_regex" else matched


def _flag(value: object) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "t", "true")


def go_rfc3339(value: object) -> str:
    """``lastmodified`` as Go's ``time.Format(time.RFC3339)`` writes it back (the MAC's AAD)."""
    if isinstance(value, dt.datetime):
        moment = value
    else:
        try:
            moment = dt.datetime.fromisoformat(str(value))
        except ValueError:
            raise SopsError("sops.lastmodified is not an RFC 3339 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    offset = moment.utcoffset() or dt.timedelta()
    text = moment.replace(microsecond=0, tzinfo=None).isoformat()
    if not offset:
        return text + "Z"
    sign = "-" if offset < dt.timedelta() else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{text}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _age(entries: object) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, Mapping) and isinstance(entry.get("enc"), str):
            found.append((str(entry.get("recipient") or "?"), entry["enc"]))
    return found


def metadata(block: object) -> Metadata:
    """The ``sops`` mapping of a document (nested, as the YAML and JSON stores write it)."""
    if not isinstance(block, Mapping):
        raise SopsError("sops is not a mapping")
    for name in _COMMENT_RULES:
        if block.get(name):
            raise SopsError(f"sops.{name} is not supported (comments are not part of a parsed object)")
    groups = block.get("key_groups")
    if isinstance(groups, list) and len(groups) > 1:
        raise SopsError(
            f"has {len(groups)} key groups (Shamir's secret sharing), which lockgate cannot combine"
        )
    age = _age(block.get("age"))
    if isinstance(groups, list) and groups and isinstance(groups[0], Mapping):
        age += _age(groups[0].get("age"))
    rules = [(name, str(block[name])) for name in _RULES if block.get(name)]
    if len(rules) > 1:
        raise SopsError(f"sops sets {' and '.join(n for n, _ in rules)}: sops allows only one of them")
    rule, pattern = rules[0] if rules else ("unencrypted_suffix", DEFAULT_UNENCRYPTED_SUFFIX)
    if rule.endswith("_regex"):
        try:
            goregex.compile(pattern)
        except UsageError as exc:
            raise SopsError(f"sops.{rule}: {exc.message}") from None
    if "lastmodified" not in block:
        raise SopsError("sops has no lastmodified")
    mac = block.get("mac")
    if not isinstance(mac, str) or not mac:
        raise SopsError("sops has no mac: the document cannot be checked, so it is not decrypted")
    return Metadata(
        age=tuple(age),
        last_modified=go_rfc3339(block["lastmodified"]),
        mac=mac,
        rule=rule,
        pattern=pattern,
        mac_only_encrypted=_flag(block.get("mac_only_encrypted", False)),
    )


def _key(key: object) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


class _Walk:
    def __init__(self, meta: Metadata, data_key: bytes) -> None:
        self.meta, self.key = meta, data_key
        self.hash = hashlib.sha512()
        if meta.mac_only_encrypted:
            self.hash.update(MAC_ONLY_ENCRYPTED_PREFIX)

    def value(self, value: Any, path: list[str]) -> Any:
        if isinstance(value, Mapping):
            return {key: self.value(item, [*path, _key(key)]) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item, path) for item in value]
        if value is None:
            return None
        return self.leaf(value, path)

    def leaf(self, value: Any, path: list[str]) -> Any:
        shown = ".".join(path)
        encrypted = self.meta.encrypted(path)
        try:
            if encrypted:
                if not isinstance(value, str):
                    found = type(value).__name__
                    raise SopsError(f"the value at {shown} should be encrypted but is a {found}")
                plain = cipher.decrypt(value, self.key, ":".join(path) + ":")
            else:
                plain = value
            if not self.meta.mac_only_encrypted or encrypted:
                self.hash.update(cipher.mac_bytes(plain))
        except cipher.CipherError as exc:
            raise SopsError(f"the value at {shown} {exc}") from None
        return plain


def decrypt(
    branches: list[Any], meta: Metadata, identities: keys.Identities, *, check_mac: bool = True
) -> list[Any]:
    """The plaintext of every branch (document) after the MAC matched; raises ``SopsError``.

    ``check_mac=False`` is Flux's behaviour, for objects that kustomize rebuilt (it sorts
    keys, so the order the MAC covers is gone); every encrypted value is still authenticated
    by AES-GCM with its path.
    """
    try:
        data_key = keys.data_key(meta.age, identities)
    except keys.AgeError as exc:
        raise SopsError(str(exc)) from None
    walk = _Walk(meta, data_key)
    plain = [walk.value(branch, []) for branch in branches]
    if not check_mac:
        return plain
    computed = walk.hash.hexdigest().upper()
    try:
        stored = cipher.decrypt(meta.mac, data_key, meta.last_modified)
    except cipher.CipherError:
        raise SopsError("its MAC does not authenticate: sops.mac or sops.lastmodified was changed") from None
    if not isinstance(stored, str) or not hmac.compare_digest(stored.encode(), computed.encode()):
        raise SopsError(
            "MAC mismatch: the document was changed after sops encrypted it (a value, key or "
            "order differs from what the MAC covers; kustomize sorts keys: an object it built "
            "needs spec.decryption.checkMAC: false, as Flux never checks the MAC)"
        )
    return plain
