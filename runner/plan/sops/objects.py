"""What the decryption step does to each object of a pass (Flux's ``DecryptResource``).

An object with a top-level ``sops`` mapping is a SOPS document as a whole: it is
decrypted, its MAC checked, and the ``sops`` block dropped. Otherwise a v1 Secret's
``data`` entries (base64) and ``stringData`` entries (text; Flux decrypts ``data`` only)
that hold an encrypted YAML, JSON, dotenv or INI document are decrypted one by one and
written in the format the entry's name says. An object annotated
``kustomize.toolkit.fluxcd.io/decrypt: Disabled`` (any case, as Flux) is left as it is.
A pass without decryption refuses objects with a ``sops`` block rather than apply
ciphertext. The values that were ciphertext go with the object as secret by origin
(``K8sObject.secret``), so its diffs mask them whatever its kind. Errors name the object,
the file and line it came from and, for a Secret entry, the entry; never a value.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from lockgate.diff.secret_values import SecretValues
from lockgate.manifests import K8sObject
from runner.plan.sops import cipher, keys, stores, tree

OPT_OUT = "kustomize.toolkit.fluxcd.io/decrypt"
DISABLED = "disabled"


class DecryptionFailed(Exception):
    """One object could not be decrypted; ``message`` names it and its file, never a value."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _where(obj: K8sObject) -> str:
    """The object as far as it is readable before decryption (its name may be encrypted too)."""
    metadata = obj.body.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    parts = [str(p) for p in (obj.body.get("kind"), metadata.get("namespace"), metadata.get("name")) if p]
    if not parts or any(p.startswith("ENC[") for p in parts):
        return f"an encrypted object ({obj.origin})"
    return f"{'/'.join(parts)} ({obj.origin})"


def disabled(obj: K8sObject) -> bool:
    annotations = (obj.body.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(OPT_OUT) if isinstance(annotations, dict) else None
    return isinstance(value, str) and value.lower() == DISABLED


def is_document(obj: K8sObject) -> bool:
    """A SOPS document as a whole (a top-level ``sops`` mapping)."""
    return isinstance(obj.body.get(tree.METADATA_KEY), dict)


def _is_secret(obj: K8sObject) -> bool:
    return obj.body.get("kind") == "Secret" and obj.body.get("apiVersion") == "v1"


def _whole(obj: K8sObject, identities: keys.Identities, check_mac: bool) -> tuple[dict[str, Any], list[Any]]:
    """The plaintext, and the values that were encrypted (secret wherever they land)."""
    body = dict(obj.body)
    block = body.pop(tree.METADATA_KEY)
    meta = tree.metadata(block)
    (plain,) = tree.decrypt([body], meta, identities, check_mac=check_mac)
    decrypted: list[Any] = []
    _decrypted(body, plain, decrypted)
    return dict(plain), decrypted


def _decrypted(encrypted: Any, plain: Any, out: list[Any]) -> None:
    """The leaves of ``plain`` whose counterpart in ``encrypted`` was ciphertext (same shape)."""
    if cipher.is_encrypted(encrypted):
        out.append(plain)
    elif isinstance(encrypted, dict) and isinstance(plain, dict):
        for key, value in encrypted.items():
            if key in plain:
                _decrypted(value, plain[key], out)
    elif isinstance(encrypted, list) and isinstance(plain, list):
        for old, new in zip(encrypted, plain, strict=False):
            _decrypted(old, new, out)


def _entry(data: bytes, key: str, identities: keys.Identities) -> bytes | None:
    fmt = stores.detect(data)
    if fmt is None:
        return None
    branches, block = stores.load(data, fmt)
    plain = tree.decrypt(branches, tree.metadata(block), identities)
    return stores.emit(plain, stores.output_format(key))


def _secret(obj: K8sObject, identities: keys.Identities) -> dict[str, Any] | None:
    body = dict(obj.body)
    changed = False
    for field in ("data", "stringData"):
        values = body.get(field)
        if not isinstance(values, dict):
            continue
        out = dict(values)
        for key, value in values.items():
            if not isinstance(value, str):
                continue
            if field == "data":
                try:
                    raw = base64.b64decode(value, validate=True)
                except binascii.Error:
                    continue  # as Flux: a user error the API server reports
            else:
                raw = value.encode("utf-8", "surrogateescape")
            try:
                plain = _entry(raw, str(key), identities)
            except tree.SopsError as exc:
                raise DecryptionFailed(f"{_where(obj)}: {field}.{key}: {exc.message}") from None
            if plain is None:
                continue
            changed = True
            text = plain.decode("utf-8", "replace")
            out[key] = base64.b64encode(plain).decode() if field == "data" else text
        body[field] = out
    return body if changed else None


def decrypt(obj: K8sObject, identities: keys.Identities, *, check_mac: bool = True) -> K8sObject:
    """``obj`` with what Flux would decrypt decrypted; raises ``DecryptionFailed``.

    ``check_mac`` applies to whole objects (which kustomize may have rebuilt); a Secret
    entry is a document as sops wrote it, so its MAC is always checked.
    """
    if disabled(obj):
        return obj
    if is_document(obj):
        try:
            body, decrypted = _whole(obj, identities, check_mac)
        except tree.SopsError as exc:
            raise DecryptionFailed(f"{_where(obj)}: {exc.message}") from None
        secret = obj.secret.union(SecretValues.of(decrypted))
        return K8sObject(body=body, file=obj.file, line=obj.line, secret=secret)
    if _is_secret(obj):
        # a Secret's entries are secret by their own origin (runner.plan.secret_origin)
        decrypted_secret = _secret(obj, identities)
        if decrypted_secret is not None:
            return K8sObject(body=decrypted_secret, file=obj.file, line=obj.line, secret=obj.secret)
    return obj


def refuse_encrypted(objects: list[K8sObject]) -> None:
    """Without decryption, an object with a ``sops`` block is refused, never applied as ciphertext."""
    for obj in objects:
        if is_document(obj) and not disabled(obj):
            raise DecryptionFailed(
                f"{_where(obj)}: is SOPS-encrypted (it has a sops block) but the sync has no decryption: "
                "set spec.decryption (provider: sops, secretRef) or --decryption-secret"
            )
