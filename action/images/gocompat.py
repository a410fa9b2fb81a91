"""Go standard-library behaviours that Flux's policies inherit, ported exactly.

Flux parses numerical tags with ``strconv.ParseFloat``, expands ``filterTags.extract``
with ``regexp.Regexp.ExpandString`` and compiles patterns with RE2. Python's ``float``,
``re.Match.expand`` and ``re`` differ in each (``float("1e400")`` is ``inf`` where Go
fails; ``$1x`` means "group named 1x" in Go; RE2 has no lookaround or backreferences), so
the parts a policy can observe are reimplemented here. Pure: no I/O.
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


def _name_char(char: str) -> bool:
    return char.isalpha() or char.isdecimal() or char == "_"


def _extract(template: str) -> tuple[str, int, str] | None:
    """Go's ``extract``: a ``name`` or ``{name}`` after ``$``; (name, number or -1, rest)."""
    brace = template.startswith("{")
    body = template[1:] if brace else template
    i = 0
    while i < len(body) and _name_char(body[i]):
        i += 1
    if i == 0:
        return None
    name = body[:i]
    if brace:
        if i >= len(body) or body[i] != "}":
            return None
        i += 1
    number = 0
    for char in name:
        if not "0" <= char <= "9" or number >= 100_000_000:
            number = -1
            break
        number = number * 10 + ord(char) - ord("0")
    if name[0] == "0" and len(name) > 1:
        number = -1
    return name, number, body[i:]


def expand(template: str, match: re.Match[str]) -> str:
    """``regexp.Regexp.ExpandString``: ``$1``, ``$name``, ``${name}``, ``$$``.

    As in Go, ``$1x`` names a group called ``1x`` (empty when there is none), a group that
    did not take part expands to nothing, and a malformed ``$`` is kept literally.
    """
    out: list[str] = []
    names = match.re.groupindex
    while True:
        before, dollar, after = template.partition("$")
        if not dollar:
            break
        out.append(before)
        template = after
        if template.startswith("$"):
            out.append("$")
            template = template[1:]
            continue
        extracted = _extract(template)
        if extracted is None:
            out.append("$")
            continue
        name, number, template = extracted
        index = number if number >= 0 else names.get(name, -1)
        if 0 <= index <= match.re.groups and match.group(index) is not None:
            out.append(match.group(index))
    out.append(template)
    return "".join(out)


class GoRegexError(ValueError):
    """A pattern RE2 (and so Flux) would reject, or Python cannot compile."""


_PERL_ONLY = ("(?=", "(?!", "(?<=", "(?<!", "(?P=", "(?>", "(?#")


def compile_regexp(pattern: str) -> re.Pattern[str]:
    """Compile ``pattern`` for unanchored ``search``, refusing Perl-only syntax RE2 lacks.

    Lookaround, backreferences, atomic groups and comments compile in Python but not in
    Go, so a policy accepted here would be refused by Flux: they are rejected with Go's
    wording. Go's ``(?<name>...)`` is accepted and spelled ``(?P<name>...)`` for Python.
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            pair = pattern[i : i + 2]
            if pair[1:2] in tuple("123456789"):
                raise GoRegexError(f"error parsing regexp: invalid escape sequence: `{pair}`")
            out.append(pair)
            i += 2
            continue
        for prefix in _PERL_ONLY:
            if pattern.startswith(prefix, i):
                raise GoRegexError(f"error parsing regexp: invalid or unsupported Perl syntax: `{prefix}`")
        if pattern.startswith("(?<", i):
            out.append("(?P<")
            i += 3
            continue
        out.append(pattern[i])
        i += 1
    try:
        return re.compile("".join(out))
    except re.error as exc:
        raise GoRegexError(f"error parsing regexp: {exc}") from None
