"""Semantic versions, compatible with Masterminds/semver v3 (``constraints`` holds ranges).

Flux's ImagePolicy ``semver`` choice checks a constraint against every tag that
``fluxcd/pkg/version.ParseVersion`` accepts: a strict ``X.Y.Z[-pre][+build]`` with an
optional lowercase ``v`` (kept in the result). This module ports the parsers (strict and
coercing, regular expression included) and Masterminds' precedence rules. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MAX_UINT64 = 2**64 - 1
_NUM = frozenset("0123456789")
_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")


class SemverError(ValueError):
    """A version or constraint that Masterminds/semver rejects; the message is its wording."""


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: str
    metadata: str
    original: str

    def compare(self, other: Version) -> int:
        """Precedence as Masterminds ``Compare``: build metadata is ignored."""
        for mine, theirs in ((self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)):
            if mine != theirs:
                return -1 if mine < theirs else 1
        if not self.pre and not other.pre:
            return 0
        if not self.pre:
            return 1
        if not other.pre:
            return -1
        return compare_prerelease(self.pre, other.pre)

    def key(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        """A sort key with ``compare``'s order (a release above its prereleases; numeric
        identifiers below alphanumeric ones; a shorter prefix first)."""
        if not self.pre:
            return (self.major, self.minor, self.patch, 1, ())
        parts = []
        for part in self.pre.split("."):
            number = _uint(part)
            parts.append((0, number, "") if number is not None else (1, 0, part))
        return (self.major, self.minor, self.patch, 0, tuple(parts))


def _uint(text: str) -> int | None:
    """``strconv.ParseUint(text, 10, 64)``: ASCII digits only, within uint64."""
    if not text or not set(text) <= _NUM:
        return None
    value = int(text)
    return value if value <= _MAX_UINT64 else None


def _compare_pre_part(mine: str, theirs: str) -> int:
    if mine == theirs:
        return 0
    if not mine:
        return -1
    if not theirs:
        return 1
    mine_num, theirs_num = _uint(mine), _uint(theirs)
    if mine_num is None and theirs_num is None:
        return 1 if mine > theirs else -1
    if theirs_num is None:
        return -1
    if mine_num is None:
        return 1
    return 1 if mine_num > theirs_num else -1


def compare_prerelease(mine: str, theirs: str) -> int:
    mine_parts, theirs_parts = mine.split("."), theirs.split(".")
    for i in range(max(len(mine_parts), len(theirs_parts))):
        left = mine_parts[i] if i < len(mine_parts) else ""
        right = theirs_parts[i] if i < len(theirs_parts) else ""
        result = _compare_pre_part(left, right)
        if result:
            return result
    return 0


def _validate_prerelease(pre: str) -> None:
    for part in pre.split("."):
        if not part:
            raise SemverError("invalid prerelease string")
        if set(part) <= _NUM:
            if len(part) > 1 and part[0] == "0":
                raise SemverError("version segment starts with 0")
        elif not set(part) <= _ALLOWED:
            raise SemverError("invalid prerelease string")


def _validate_metadata(metadata: str) -> None:
    for part in metadata.split("."):
        if not part or not set(part) <= _ALLOWED:
            raise SemverError("invalid metadata string")


def strict_parse(text: str) -> Version:
    """Masterminds ``StrictNewVersion``: exactly three numeric segments, no ``v``."""
    if not text:
        raise SemverError("version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("invalid semantic version")
    metadata = pre = ""
    if "+" in parts[2]:
        parts[2], metadata = parts[2].split("+", 1)
        _validate_metadata(metadata)
    if "-" in parts[2]:
        parts[2], pre = parts[2].split("-", 1)
        _validate_prerelease(pre)
    for part in parts:
        if not set(part) <= _NUM:
            raise SemverError("invalid characters in version")
        if len(part) > 1 and part[0] == "0":
            raise SemverError("version segment starts with 0")
    numbers = [_uint(part) for part in parts]
    if any(number is None for number in numbers):
        raise SemverError("error parsing version segment")
    major, minor, patch = (int(number or 0) for number in numbers)
    return Version(major, minor, patch, pre, metadata, text)


_LOOSE = re.compile(
    r"v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?"
    r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
    r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
)


def coerce_parse(text: str) -> Version:
    """Masterminds ``NewVersion`` (coercing, the default): ``1.2`` is ``1.2.0``."""
    match = _LOOSE.fullmatch(text)
    if match is None:
        raise SemverError("invalid semantic version")
    numbers = [_uint(match.group(1))]
    numbers += [_uint(group[1:]) if group else 0 for group in (match.group(2), match.group(3))]
    if any(number is None for number in numbers):
        raise SemverError("error parsing version segment")
    pre, metadata = match.group(5) or "", match.group(8) or ""
    if pre:
        _validate_prerelease(pre)
    if metadata:
        _validate_metadata(metadata)
    major, minor, patch = (int(number or 0) for number in numbers)
    return Version(major, minor, patch, pre, metadata, text)


_IDENTIFIERS = r"[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*"
_TAG = re.compile(
    rf"v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-({_IDENTIFIERS}))?(?:\+({_IDENTIFIERS}))?"
)


def parse_tag(tag: str) -> Version | None:
    """Flux ``version.ParseVersion``: strict semver with one optional leading ``v``; else None.

    One regular expression instead of ``strict_parse`` then ``coerce_parse`` (what Flux
    does, and what ``parse_tag_reference`` still does): scans evaluate thousands of tags
    per repository. A property test holds the two to the same answers.
    """
    match = _TAG.fullmatch(tag)
    if match is None:
        return None
    major, minor, patch = map(int, match.group(1, 2, 3))
    if len(tag) > 20 and max(major, minor, patch) > _MAX_UINT64:  # 2**64 has 20 digits
        return None
    pre = match.group(4) or ""
    if pre:
        try:
            _validate_prerelease(pre)  # numeric identifiers must not start with 0
        except SemverError:
            return None
    return Version(major, minor, patch, pre, match.group(5) or "", tag)


def parse_tag_reference(tag: str) -> Version | None:
    """``parse_tag`` as Flux spells it: ``StrictNewVersion`` to check, ``NewVersion`` to parse."""
    try:
        strict_parse(tag.removeprefix("v"))
        return coerce_parse(tag)
    except SemverError:
        return None
