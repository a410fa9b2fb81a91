"""Go's ``strconv.ParseFloat``, which Flux's numerical policies and YAML quoting inherit.

Flux parses numerical tags with ``strconv.ParseFloat``; Python's ``float`` differs where a
policy can observe it (``float("1e400")`` is ``inf`` where Go fails, ``"1_000"`` and
hexadecimal floats are Go's rules, not Python's), so it is ported here. ``policy`` elects
numerical tags with it and ``yamlvalues`` asks it whether a plain scalar reads as a
number. Go's regular expressions live in ``lockgate.goregex``. Pure: no I/O.
"""

from __future__ import annotations

import math
import re

_DEC = re.compile(r"[+-]?(?:[0-9_]+(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][+-]?[0-9_]+)?")
_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F_]+(?:\.[0-9a-fA-F_]*)?|\.[0-9a-fA-F_]+)[pP][+-]?[0-9_]+")
_SPECIAL = re.compile(r"[+-]?(?:inf|infinity)|nan", re.IGNORECASE)


def _underscore_ok(text: str) -> bool:
    """Go's ``underscoreOK``: an underscore only between digits or after a base prefix."""
    saw = "^"
    i = 0
    if text[:1] in ("+", "-"):
        text = text[1:]
    hex_digits = False
    if len(text) >= 2 and text[0] == "0" and text[1].lower() in "box":
        i, saw, hex_digits = 2, "0", text[1].lower() == "x"
    while i < len(text):
        char = text[i]
        if (char.isdigit() and char.isascii()) or (hex_digits and char.lower() in "abcdef"):
            saw = "0"
        elif char == "_":
            if saw != "0":
                return False
            saw = "_"
        else:
            if saw == "_":
                return False
            saw = "!"
        i += 1
    return saw != "_"


def parse_float(text: str) -> float | None:
    """``strconv.ParseFloat(text, 64)``; None where Go returns an error (including overflow)."""
    if _SPECIAL.fullmatch(text):
        lowered = text.lower().lstrip("+-")
        if lowered == "nan":
            return math.nan
        return -math.inf if text.startswith("-") else math.inf
    is_hex = _HEX.fullmatch(text) is not None
    if not is_hex and _DEC.fullmatch(text) is None:
        return None
    if "_" in text and not _underscore_ok(text):
        return None
    digits = text.replace("_", "")
    body = digits.lstrip("+-")
    mantissa = body[2:].split("p")[0].split("P")[0] if is_hex else re.split("[eE]", body)[0]
    if not mantissa.replace(".", ""):
        return None
    try:
        value = float.fromhex(digits) if is_hex else float(digits)
    except (OverflowError, ValueError):
        return None
    return None if math.isinf(value) else value
