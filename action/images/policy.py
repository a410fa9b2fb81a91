"""Tag selection: which tag of an image repository a policy elects, with Flux's semantics.

This is the image-reflector-controller's ``applyPolicy`` as a pure function: exclusion
list (repository level), then ``filterTags`` (pattern and extract, mapped back to the
original tag), then exactly one of semver, alphabetical or numerical ordering. Errors use
Flux's wording so users can search for them.

Flux leaves ties to the order tags arrive in; registries list tags in lexical order, and
the tie-breaks below are what Flux elects for such a list, so the result here does not
depend on the order of the input at all:

- semver: equal precedence (``v1.0.0`` and ``1.0.0``, or differing build metadata) elects
  the lexically smallest original, the first one Flux meets;
- numerical: equal values (``1`` and ``1.0``) elect the lexically greatest, the last one
  Flux meets; NaN orders below every number;
- filterTags: two tags extracting to the same value map back to the lexically greatest.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from action.images import gocompat
from lockgate import goregex
from lockgate.errors import ResolveError, UsageError
from lockgate.semver import constraints, highest_in_range, in_range_descending
from lockgate.semver import version as semver

DEFAULT_EXCLUSION_LIST: tuple[str, ...] = (r"^.*\.sig$",)
_DEFAULT_SIG = DEFAULT_EXCLUSION_LIST[0]
Order = Literal["asc", "desc"]


class InvalidPolicyError(UsageError):
    """The policy itself is wrong (bad range, bad pattern, bad order)."""


class NoLatestError(ResolveError):
    """The policy is valid but elects no tag from the list it was given."""


@dataclass(frozen=True)
class SemverChoice:
    range: str


@dataclass(frozen=True)
class AlphabeticalChoice:
    order: Order = "asc"


@dataclass(frozen=True)
class NumericalChoice:
    order: Order = "asc"


Choice = SemverChoice | AlphabeticalChoice | NumericalChoice


@dataclass(frozen=True)
class TagFilter:
    pattern: str
    extract: str = ""


@dataclass(frozen=True)
class Selection:
    """The elected tag and what led to it."""

    tag: str
    #: tags the policy could elect (after exclusion and filter; for semver, those in the range)
    candidates: int


def describe(choice: Choice, tag_filter: TagFilter | None = None) -> str:
    """The policy in a few words, for reports: ``semver ^1.0``, ``numerical asc (filter ...)``."""
    if isinstance(choice, SemverChoice):
        text = f"semver {choice.range}"
    else:
        text = f"{'alphabetical' if isinstance(choice, AlphabeticalChoice) else 'numerical'} {choice.order}"
    if tag_filter is not None:
        extract = f" extract {tag_filter.extract}" if tag_filter.extract else ""
        text += f" of tags matching {tag_filter.pattern}{extract}"
    return text


def parse_order(value: str) -> Order:
    """Flux upper-cases the order before checking it; so do we."""
    upper = value.upper()
    if upper in ("", "ASC"):
        return "asc"
    if upper == "DESC":
        return "desc"
    raise InvalidPolicyError(
        f"invalid policy: invalid order argument provided: '{upper}', must be one of: ASC, DESC"
    )


def validate(choice: Choice, tag_filter: TagFilter | None = None) -> None:
    """Raise ``InvalidPolicyError`` for what Flux marks as an invalid policy."""
    if isinstance(choice, SemverChoice):
        try:
            constraints.Constraints.parse(choice.range)
        except semver.SemverError as exc:
            raise InvalidPolicyError(f"invalid policy: {exc}") from None
    if tag_filter is not None:
        _compile_filter(tag_filter)


def _compile_filter(tag_filter: TagFilter) -> goregex.Regexp:
    try:
        return goregex.compile(tag_filter.pattern)
    except goregex.RegexpError as exc:
        raise InvalidPolicyError(
            f"invalid policy: failed to filter tags: invalid regular expression pattern "
            f"'{tag_filter.pattern}': {exc}"
        ) from None


def exclude(tags: Iterable[str], patterns: Sequence[str] = DEFAULT_EXCLUSION_LIST) -> list[str]:
    """Drop tags matching any exclusion pattern (unanchored); an empty list means the default."""
    compiled = []
    for pattern in patterns or DEFAULT_EXCLUSION_LIST:
        try:
            compiled.append(goregex.compile(pattern))
        except goregex.RegexpError as exc:
            raise InvalidPolicyError(f"failed to compile regex {pattern}: {exc}") from None
    kept = list(tags)
    for pattern, regex in zip(patterns or DEFAULT_EXCLUSION_LIST, compiled, strict=True):
        if pattern == _DEFAULT_SIG:
            # Flux's default, on every repository: RE2's ``^.*\.sig$`` matches exactly the texts
            # that end in ".sig" and hold no newline, and a suffix test is ten times cheaper
            kept = [tag for tag in kept if not (tag.endswith(".sig") and "\n" not in tag)]
            continue
        dropped = set(regex.matching(kept))
        kept = [tag for tag in kept if tag not in dropped]
    return kept


def filter_tags(tags: Iterable[str], tag_filter: TagFilter) -> dict[str, str]:
    """Flux's ``RegexFilter``: extracted value -> original tag, for the tags that match."""
    regex = _compile_filter(tag_filter)
    result: dict[str, str] = {}
    for tag in tags:
        match = regex.search(tag)
        if match is None:
            continue
        value = match.expand(tag_filter.extract) if tag_filter.extract else tag
        if value not in result or tag > result[value]:
            result[value] = tag
    return result


def latest(choice: Choice, versions: Sequence[str]) -> str:
    """The policer's ``Latest``: the elected member of ``versions``."""
    if not versions:
        raise NoLatestError("version list argument cannot be empty")
    if isinstance(choice, SemverChoice):
        return _latest_semver(choice.range, versions)
    if isinstance(choice, AlphabeticalChoice):
        # asc elects the highest, desc the lowest; str order is UTF-8 byte order
        return max(versions) if choice.order == "asc" else min(versions)
    return _latest_numerical(choice.order, versions)


def _latest_semver(range_: str, versions: Sequence[str]) -> str:
    try:
        parsed_range = constraints.Constraints.parse(range_)
    except semver.SemverError as exc:
        raise InvalidPolicyError(f"invalid policy: {exc}") from None
    best = highest_in_range(parsed_range, versions)
    if best is None:
        raise NoLatestError("unable to determine latest version from provided list")
    return best


def _latest_numerical(order: Order, versions: Sequence[str]) -> str:
    keyed: list[tuple[float, str]] = []
    for tag in versions:
        value = gocompat.parse_float(tag)
        if value is None:
            raise NoLatestError(f"failed to parse invalid numeric value '{tag}'")
        keyed.append((-math.inf if math.isnan(value) else value, tag))
    if order == "asc":
        return max(keyed)[1]
    lowest = min(value for value, _ in keyed)
    return max(tag for value, tag in keyed if value == lowest)


def select(
    tags: Iterable[str],
    choice: Choice,
    *,
    tag_filter: TagFilter | None = None,
) -> Selection:
    """Apply ``filterTags`` then the ordering, returning the original tag (``applyPolicy``).

    ``tags`` are the repository's tags after its exclusion list. An empty input is Flux's
    "no tags in database"; a filter that leaves nothing is "version list argument cannot
    be empty"; a semver range nothing satisfies is "unable to determine latest version".
    """
    validate(choice, tag_filter)
    listed = list(tags)
    if not listed:
        raise NoLatestError("no tags in database")
    if tag_filter is None:
        return Selection(tag=latest(choice, listed), candidates=_eligible(choice, listed))
    mapping = filter_tags(listed, tag_filter)
    elected = latest(choice, sorted(mapping))
    return Selection(tag=mapping[elected], candidates=_eligible(choice, sorted(mapping)))


def _eligible(choice: Choice, versions: Sequence[str]) -> int:
    """How many of ``versions`` the policy could elect: for semver, those its range admits
    (a tag that is no version, or outside the range, is no candidate); every one otherwise."""
    if not isinstance(choice, SemverChoice):
        return len(versions)
    return len(in_range_descending(constraints.Constraints.parse(choice.range), versions))
