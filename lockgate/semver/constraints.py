"""Range constraints, compatible with Masterminds/semver v3 ``NewConstraint`` and ``Check``.

Flux's ImagePolicy ``semver`` choice is ``semver.NewConstraint(range)`` checked against
each parsed tag (``semver.parse_tag``). This module ports the constraint grammar, regular
expressions included, so ``1.0.x``, ``^1.0``, ``~1.0``, ``>=1.0 <2.0``, ``a || b``, ``*``,
``1.2 - 1.4`` and the prerelease rule (a prerelease version matches only an ``||`` branch
that names a prerelease) behave exactly as in Flux, with the same error wording. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from lockgate.semver import version as semver

_WS = r"[\t\n\f\r ]"  # Go's \s: ASCII only, without \v


_CV = (
    r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?"
    r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
    r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
)
_OPS = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^"
_CONSTRAINT = re.compile(rf"{_WS}*({_OPS}){_WS}*({_CV}){_WS}*")
_RANGE = re.compile(rf"{_WS}*({_CV}){_WS}+-{_WS}+({_CV}){_WS}*")
_FIND = re.compile(rf"({_OPS}){_WS}*({_CV})")
_VALID = re.compile(rf"({_WS}*({_OPS}){_WS}*({_CV}){_WS}*)((?:{_WS}+|,{_WS}*)({_OPS}){_WS}*({_CV}){_WS}*)*")
_WS_RUN = re.compile(rf"{_WS}+")


@dataclass(frozen=True)
class _Comparator:
    op: str
    con: semver.Version
    dirty: bool = False
    minor_dirty: bool = False
    patch_dirty: bool = False


def _is_x(text: str) -> bool:
    return text in ("x", "X", "*")


def _parse_comparator(text: str) -> _Comparator:
    if not text:
        return _Comparator("", semver.Version(0, 0, 0, "", "", "0.0.0"), dirty=True)
    match = _CONSTRAINT.fullmatch(text)
    if match is None:
        raise semver.SemverError(f"improper constraint: {go_quote(text)}")
    op, major, minor, patch, pre = (
        match.group(1),
        match.group(3),
        match.group(4),
        match.group(5),
        match.group(6),
    )
    pre = pre or ""
    dirty = minor_dirty = patch_dirty = False
    version_text = match.group(2)
    if _is_x(major):
        version_text, dirty = f"0.0.0{pre}", True
    elif minor is None or _is_x(minor[1:]):
        version_text, dirty, minor_dirty = f"{major}.0.0{pre}", True, True
    elif patch is None or _is_x(patch[1:]):
        version_text, dirty, patch_dirty = f"{major}{minor}.0{pre}", True, True
    try:
        con = semver.coerce_parse(version_text)
    except semver.SemverError:
        raise semver.SemverError("constraint parser error") from None
    return _Comparator(op, con, dirty, minor_dirty, patch_dirty)


def _not_equal(v: semver.Version, c: _Comparator) -> bool:
    if c.dirty:
        if c.con.major != v.major:
            return True
        if c.con.minor != v.minor and not c.minor_dirty:
            return True
        if c.minor_dirty:
            return False
        if c.con.patch != v.patch and not c.patch_dirty:
            return True
        if c.patch_dirty:
            if v.pre or c.con.pre:
                return semver.compare_prerelease(v.pre, c.con.pre) != 0
            return False
    return v.compare(c.con) != 0


def _greater(v: semver.Version, c: _Comparator) -> bool:
    if not c.dirty:
        return v.compare(c.con) == 1
    if v.major != c.con.major:
        return v.major > c.con.major
    if c.minor_dirty:
        return False
    if c.patch_dirty:
        return v.minor > c.con.minor
    return v.compare(c.con) == 1


def _less_equal(v: semver.Version, c: _Comparator) -> bool:
    if not c.dirty:
        return v.compare(c.con) <= 0
    if v.major > c.con.major:
        return False
    return not (v.major == c.con.major and v.minor > c.con.minor and not c.minor_dirty)


def _tilde(v: semver.Version, c: _Comparator) -> bool:
    if v.compare(c.con) < 0:
        return False
    con = c.con
    if con.major == 0 and con.minor == 0 and con.patch == 0 and not c.minor_dirty and not c.patch_dirty:
        return True
    if v.major != con.major:
        return False
    return not (v.minor != con.minor and not c.minor_dirty)


def _tilde_or_equal(v: semver.Version, c: _Comparator) -> bool:
    return _tilde(v, c) if c.dirty else v.compare(c.con) == 0


def _caret(v: semver.Version, c: _Comparator) -> bool:
    con = c.con
    if v.compare(con) < 0:
        return False
    if con.major > 0 or c.minor_dirty:
        return v.major == con.major
    if v.major > 0:
        return False
    if con.minor > 0 or c.patch_dirty:
        return v.minor == con.minor
    if v.minor > 0:
        return False
    return con.patch == v.patch


_OPERATIONS: dict[str, Callable[[semver.Version, _Comparator], bool]] = {
    "": _tilde_or_equal,
    "=": _tilde_or_equal,
    "!=": _not_equal,
    ">": _greater,
    "<": lambda v, c: v.compare(c.con) < 0,
    ">=": lambda v, c: v.compare(c.con) >= 0,
    "=>": lambda v, c: v.compare(c.con) >= 0,
    "<=": _less_equal,
    "=<": _less_equal,
    "~": _tilde,
    "~>": _tilde,
    "^": _caret,
}


def _rewrite_range(text: str) -> str:
    result = text
    for match in _RANGE.finditer(text):
        result = result.replace(match.group(0), f">= {match.group(1)}, <= {match.group(11)} ", 1)
    return result


@dataclass(frozen=True)
class Constraints:
    """A parsed range: ``||`` branches of comparators that must all hold."""

    text: str
    branches: tuple[tuple[_Comparator, ...], ...]

    @classmethod
    def parse(cls, text: str) -> Constraints:
        """Masterminds ``NewConstraint``; raises ``semver.SemverError`` with its message."""
        branches = []
        for branch in _rewrite_range(text).split("||"):
            # Whitespace runs are equivalent to one space for validity, and collapsing them
            # keeps Python's backtracking linear where RE2 is linear by construction.
            if _VALID.fullmatch(_WS_RUN.sub(" ", branch)) is None:
                raise semver.SemverError(f"improper constraint: {go_quote(branch)}")
            found = [m.group(0) for m in _FIND.finditer(branch)] or [branch]
            branches.append(tuple(_parse_comparator(item) for item in found))
        return cls(text, tuple(branches))

    def check(self, version: semver.Version) -> bool:
        for branch in self.branches:
            include_pre = any(c.con.pre for c in branch)
            if version.pre and not include_pre:
                continue
            if all(_OPERATIONS[c.op](version, c) for c in branch):
                return True
        return False


def go_quote(text: str) -> str:
    """Go's ``%q`` for the printable ASCII that constraints and tags are made of."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif char.isprintable():
            out.append(char)
        else:
            out.append(f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'
