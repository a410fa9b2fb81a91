"""The secret strings of a pass, shared by all its objects before placement.

Pure. Decryption and substitution mark each object's own values that are secret by
origin (``K8sObject.secret``, see ``lockgate.diff.secret_values``); this last step before
placement adds what is secret across the pass: the values of the variables read from a
Secret, every decrypted string, and every entry of every v1 Secret of the pass. Each
object's diff then masks those strings wherever they appear (a secret moved to another
field or object, or still held by the live object after the manifest stopped using it).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Any

from lockgate.diff import secret_values
from lockgate.manifests import K8sObject


def secret_entries(body: dict[str, Any]) -> list[str]:
    """The entries of a v1 Secret as text (``data`` decoded); binary entries are left out."""
    if body.get("kind") != "Secret" or body.get("apiVersion") != "v1":
        return []
    found: list[str] = []
    for field in ("data", "stringData"):
        entries = body.get(field)
        for value in entries.values() if isinstance(entries, dict) else ():
            if not isinstance(value, str):
                continue
            if field == "stringData":
                found.append(value)
                continue
            try:
                found.append(base64.b64decode(value, validate=True).decode("utf-8"))
            except (binascii.Error, UnicodeDecodeError):
                continue
    return found


def share(objects: list[K8sObject], secret_variables: Iterable[str] = ()) -> list[K8sObject]:
    """``objects``, each looking for the pass's secret strings in its diffs."""
    strings = {v for v in secret_variables if len(v) >= secret_values.MIN_SHARED}
    for obj in objects:
        strings |= obj.secret.shareable()
        strings.update(v for v in secret_entries(obj.body) if len(v) >= secret_values.MIN_SHARED)
    if not strings:
        return objects
    shared = frozenset(strings)
    return [K8sObject(obj.body, obj.file, obj.line, obj.secret.sharing(shared)) for obj in objects]
