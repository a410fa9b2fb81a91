"""How a new value is spelled in place of an old scalar, keeping the old quoting style.

kyaml (and so Flux) keeps a scalar's style when a setter changes it, except that a plain
scalar whose new value would read as a non-string in YAML 1.1 (``1.10``, ``yes``, ``0x1F``)
is double-quoted (``FormatNonStringStyle`` with ``IsYaml1_1NonString``, which asks
``gopkg.in/yaml.v2``). This module reproduces that decision without a YAML library: the
``yaml.v2`` resolver rules are small and PyYAML's YAML 1.1 resolver differs from them
(``y``/``n`` booleans, ``1e3`` floats, timestamps). Pure: no I/O.
"""

from __future__ import annotations

import json
import re

from action.images import gocompat

_YAML11_SPECIAL = frozenset(
    [
        "~",
        "null",
        "Null",
        "NULL",
        "y",
        "Y",
        "yes",
        "Yes",
        "YES",
        "n",
        "N",
        "no",
        "No",
        "NO",
        "true",
        "True",
        "TRUE",
        "false",
        "False",
        "FALSE",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
        ".nan",
        ".NaN",
        ".NAN",
        ".inf",
        ".Inf",
        ".INF",
        "+.inf",
        "+.Inf",
        "+.INF",
        "-.inf",
        "-.Inf",
        "-.INF",
        "<<",
    ]
)
_GO_INT = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)")
_YAML_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_SAFE_PLAIN = re.compile(r"[A-Za-z0-9_./+=][A-Za-z0-9_./@:+=~-]*")


def _go_int(text: str) -> bool:
    """``strconv.ParseInt(text, 0, 64)`` or ``ParseUint`` succeeds."""
    if _GO_INT.fullmatch(text) is None:
        return False
    body = text.lstrip("+-")
    prefixed = {"0x": 16, "0b": 2, "0o": 8}.get(body[:2].lower())
    if prefixed is not None:
        base, digits = prefixed, body[2:]
    else:
        base, digits = (8 if body.startswith("0") else 10), body
    value = int(digits, base) * (-1 if text.startswith("-") else 1)
    return -(2**63) <= value <= 2**64 - 1


def is_yaml11_non_string(value: str) -> bool:
    """Would ``value``, written plain, load as something other than a string in YAML 1.1?"""
    if not value or "\n" in value:
        return False
    if value in _YAML11_SPECIAL:
        return True
    if value[0] not in "+-.0123456789":
        return False
    plain = value.replace("_", "")
    if _go_int(plain):
        return True
    if _YAML_FLOAT.fullmatch(plain) and gocompat.parse_float(plain) is not None:
        return True
    binary = plain.removeprefix("-")
    return binary.startswith("0b") and len(binary) > 2 and set(binary[2:]) <= {"0", "1"}


def needs_quotes(value: str) -> bool:
    """A value that cannot be written plain and read back as the same string."""
    return _SAFE_PLAIN.fullmatch(value) is None or value.endswith(":") or is_yaml11_non_string(value)


def render(value: str, *, style: str | None) -> str:
    """The text replacing a scalar of ``style`` (PyYAML's: None plain, '"', "'")."""
    if style == "'":
        return "'" + value.replace("'", "''") + "'"
    if style == '"' or needs_quotes(value):
        return json.dumps(value, ensure_ascii=False)
    return value
