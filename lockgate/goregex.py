"""Go's regular expressions, for the patterns users write for Flux and cosign.

Users write image policies' ``filterTags.pattern`` and ``exclusionList`` for Flux, and
keyless identity and issuer expressions for cosign, in Go's ``regexp`` syntax (RE2).
Python's ``re`` reads many of them differently without a word (``[[:digit:]]`` is a
character set, ``\\d`` matches every script's digits, ``a++`` is possessive) and refuses
others (``\\pL``), so such a pattern would select other tags or admit other signers here
than in Flux or cosign. Patterns are therefore compiled by RE2 itself (google-re2), whose
syntax and matching Go's ``regexp`` reimplements, after ``_translate`` settles where Go
and the C++ library disagree: group names follow Go's rule (``[A-Za-z0-9_]+``, repeats
allowed) and are kept here, ``\\C`` (any byte) is refused as Go refuses it, and
``\\Q...\\E`` is quoted here. Errors carry Go's wording (``error parsing regexp: ...``)
so users can search for them; ``Match.expand`` is Go's ``Regexp.ExpandString``.

Shared core: ``action.images`` (policies) and ``lockgate.signing.policy`` (keyless
``Match``, used by ``verify`` and by the runner's Sync documents) both compile here. The
RE2 binding is imported on the first compile, so commands that never compile a user
pattern do not load its shared library. Matching calls the binding's core (``re2._re2``)
directly: the public wrapper re-computes character offsets on every call, which tripled
the cost of filtering a few thousand tags, and group text is cut from the UTF-8 bytes
instead. Known differences left: Go 1.25's long and case-insensitive Unicode class names
(``\\p{Letter}``) and patterns too large for RE2's default memory budget (``\\pL{1000}``)
are refused here, with Go-worded errors, rather than matched differently; groups nested
more than 1,000 deep, which Go refuses, compile here.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, cast

from lockgate.errors import UsageError

HINT = "Go's RE2 syntax: no lookaround, backreferences or possessive repetition"

#: RE2's error texts and the ``regexp/syntax.ErrorCode`` Go reports for the same fault
_GO_CODES = {
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid UTF-8": "invalid UTF-8",
    "invalid named capture group": "invalid named capture",
    "pattern too large - compile failed": "expression too large",
    "pattern too large - reverse compile failed": "expression too large",
}
#: codes for which Go names the whole expression (RE2 names its translation of it)
_WHOLE = {"missing closing )", "unexpected )", "expression too large", "invalid UTF-8"}
_METACHARACTERS = frozenset("\\.+*?()|[]{}^$")


class RegexpError(UsageError):
    """A pattern Go's ``regexp.Compile`` refuses; ``go_error`` is Go's own message.

    ``within`` puts where the pattern came from (a flag, a file's field) in front.
    """

    def __init__(self, pattern: str, code: str, expr: str, *, context: str = "") -> None:
        self.pattern, self.code, self.expr, self.context = pattern, code, expr, context
        self.go_error = f"error parsing regexp: {code}: `{expr}`"
        super().__init__((f"{context}: " if context else "") + f"{self.go_error} ({HINT})")

    def within(self, context: str) -> RegexpError:
        """The same error said of ``context``: ``<context>: <message>``."""
        outer = f"{context}: {self.context}" if self.context else context
        return RegexpError(self.pattern, self.code, self.expr, context=outer)


class _Core(Protocol):
    """The part of ``re2._re2.RE2`` used here (the binding ships no type hints)."""

    def ok(self) -> bool: ...

    def error(self) -> bytes: ...

    def Match(self, anchor: object, text: bytes, pos: int, endpos: int) -> list[tuple[int, int]]: ...


class _Binding:
    """The RE2 extension module, loaded once: its constructor, options and anchors."""

    def __init__(self) -> None:
        from re2 import _re2  # the C++ library: about 2.5 ms and 2.7 MB the first time

        module: Any = _re2
        self.options = module.RE2.Options()
        self.options.log_errors = False  # RE2 would print each refused pattern on stderr
        self.new = module.RE2
        self.unanchored: object = module.RE2.Anchor.UNANCHORED
        self.both: object = module.RE2.Anchor.ANCHOR_BOTH

    def compile(self, pattern: bytes) -> _Core:
        return cast(_Core, self.new(pattern, self.options))


@functools.cache
def _binding() -> _Binding:
    return _Binding()


class Match:
    """One match: group text by number, and Go's ``ExpandString``."""

    __slots__ = ("_data", "_spans", "regexp")

    def __init__(self, regexp: Regexp, data: bytes, spans: Sequence[tuple[int, int]]) -> None:
        self.regexp = regexp
        self._data = data
        self._spans = spans

    def group(self, index: int = 0) -> str | None:
        """The text group ``index`` matched, or None when it did not take part."""
        start, end = self._spans[index]
        return None if start < 0 else self._data[start:end].decode("utf-8")

    def expand(self, template: str) -> str:
        """``regexp.Regexp.ExpandString``: ``$1``, ``$name``, ``${name}``, ``$$``.

        As in Go, ``$1x`` names a group called ``1x`` (empty when there is none), a group
        that did not take part expands to nothing, a name used by several groups means the
        first of them that took part, and a malformed ``$`` is kept literally.
        """
        out: list[str] = []
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
            reference = _reference(template)
            if reference is None:
                out.append("$")
                continue
            name, number, template = reference
            candidates = (
                [number] if number >= 0 else [i for i, n in enumerate(self.regexp.names) if n == name]
            )
            for index in candidates:
                text = self.group(index) if index < len(self._spans) else None
                if text is not None:
                    out.append(text)
                    break
        out.append(template)
        return "".join(out)


class Regexp:
    """A compiled Go regular expression; ``names`` is Go's ``SubexpNames()``."""

    __slots__ = ("_both", "_core", "_unanchored", "names", "pattern")

    def __init__(self, pattern: str, core: _Core, names: tuple[str, ...]) -> None:
        self.pattern = pattern
        self.names = names
        self._core = core
        self._unanchored, self._both = _binding().unanchored, _binding().both

    def search(self, text: str) -> Match | None:
        """The leftmost match anywhere in ``text`` (Go's ``FindStringSubmatch``)."""
        data = _utf8(text)
        spans = self._core.Match(self._unanchored, data, 0, len(data))
        return None if spans[0][0] < 0 else Match(self, data, spans)

    def fullmatch(self, text: str) -> Match | None:
        """A match of the whole of ``text``."""
        data = _utf8(text)
        spans = self._core.Match(self._both, data, 0, len(data))
        return None if spans[0][0] < 0 else Match(self, data, spans)

    def matches(self, text: str) -> bool:
        """Go's ``MatchString``: the pattern matches somewhere in ``text``."""
        data = _utf8(text)
        return self._core.Match(self._unanchored, data, 0, len(data))[0][0] >= 0

    def matching(self, texts: Iterable[str]) -> list[str]:
        """The ``texts`` that ``matches`` accepts, in order.

        One loop with the binding's call held in locals: an exclusion list tests every
        tag of a repository, and per-call overhead is most of the cost.
        """
        match, anchor = self._core.Match, self._unanchored
        found = []
        for text in texts:
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError:
                data = _utf8(text)
            if match(anchor, data, 0, len(data))[0][0] >= 0:
                found.append(text)
        return found


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # a lone surrogate: Go reads an invalid UTF-8 sequence as U+FFFD, one per byte
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text).encode("utf-8")


@functools.lru_cache(maxsize=512)
def compile(pattern: str) -> Regexp:
    """Compile ``pattern`` with Go's syntax and semantics; raises ``RegexpError``."""
    translated, names = _translate(pattern)
    try:
        encoded = translated.encode("utf-8")
    except UnicodeEncodeError:
        raise RegexpError(pattern, "invalid UTF-8", pattern) from None
    core = _binding().compile(encoded)
    if not core.ok():
        text = core.error().decode("utf-8", errors="replace")
        fault, _, expr = text.partition(": ")
        code = _GO_CODES.get(fault)
        if code is None:
            raise RegexpError(pattern, text, pattern)
        raise RegexpError(pattern, code, pattern if code in _WHOLE else expr)
    return Regexp(pattern, core, tuple(names))


def _translate(pattern: str) -> tuple[str, list[str]]:
    """The pattern for RE2, and Go's group names (index 0 is the whole match).

    Named groups become plain groups, numbered as before, once their names pass Go's
    rule; text in classes and in ``\\Q...\\E`` is never a group. Everything else is left
    to RE2, whose grammar is Go's.
    """
    out: list[str] = []
    names = [""]
    i, size = 0, len(pattern)
    while i < size:
        char = pattern[i]
        if char == "\\":
            escape = pattern[i + 1 : i + 2]
            if escape == "Q":
                literal, closer, _ = pattern[i + 2 :].partition("\\E")
                out.append("".join("\\" + c if c in _METACHARACTERS else c for c in literal))
                i += 2 + len(literal) + len(closer)
                continue
            if escape == "C":
                raise RegexpError(pattern, "invalid escape sequence", "\\C")
            out.append(pattern[i : i + 2])
            i += 2
        elif char == "[":
            end = _class_end(pattern, i)
            out.append(pattern[i:end])
            i = end
        elif char == "(" and pattern.startswith("(?", i):
            named = _group_name(pattern, i)
            if named is None:
                out.append("(?")
                i += 2
                continue
            name, length = named
            names.append(name)
            out.append("(")
            i += length
        else:
            if char == "(":
                names.append("")
            out.append(char)
            i += 1
    return "".join(out), names


def _group_name(pattern: str, start: int) -> tuple[str, int] | None:
    """``(?P<name>`` or ``(?<name>`` at ``start``: the name and the opener's length."""
    rest = pattern[start:]
    if len(rest) > 4 and rest.startswith("(?P<"):
        offset = 4
    elif len(rest) > 3 and rest.startswith("(?<"):
        offset = 3
    else:
        return None
    end = rest.find(">")
    if end < 0:
        raise RegexpError(pattern, "invalid named capture", rest)
    name = rest[offset:end]
    if not name or not all(c == "_" or (c.isascii() and c.isalnum()) for c in name):
        raise RegexpError(pattern, "invalid named capture", rest[: end + 1])
    return name, end + 1


def _class_end(pattern: str, start: int) -> int:
    """Where the character class opened at ``start`` ends (past ``]``), as Go's parser reads it."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    first = True  # a ']' right after '[' or '[^' is a member, not the end
    while i < len(pattern) and (pattern[i] != "]" or first):
        first = False
        if pattern.startswith("[:", i) and (close := pattern.find(":]", i + 2)) >= 0:
            i = close + 2
        elif pattern[i] == "\\":
            i += 2
        else:
            i += 1
    return min(i + 1, len(pattern))


def _is_name_char(char: str) -> bool:
    return char.isalpha() or char.isdecimal() or char == "_"  # Go: unicode.IsLetter, IsDigit


def _reference(template: str) -> tuple[str, int, str] | None:
    """Go's ``extract``: a ``name`` or ``{name}`` after ``$``; (name, number or -1, rest)."""
    brace = template.startswith("{")
    body = template[1:] if brace else template
    i = 0
    while i < len(body) and _is_name_char(body[i]):
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
