"""The highest tag in a semver range: one rule for image policies and the runner's ``--semver``.

Pure. Tags that are not strict ``X.Y.Z[-pre][+build]`` versions (an optional ``v`` kept)
are ignored, as Flux ignores them. Among tags of equal precedence (``v1.0.0`` and
``1.0.0``, or differing build metadata) the lexically smallest original wins, which is
the one Flux meets first in a registry's lexically ordered tag list, so the result does
not depend on the order of the input.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from lockgate.semver.constraints import Constraints
from lockgate.semver.version import Version, parse_tag


def highest_in_range(constraints: Constraints, tags: Iterable[str]) -> str | None:
    """The elected original tag, or None when no tag satisfies ``constraints``.

    Versions are ordered first and checked from the highest down, so a range is evaluated
    only until the first version it admits: a constraint check costs more than a sort key.
    """
    best = next(_descending(constraints, tags), None)
    return None if best is None else best.original


def in_range_descending(constraints: Constraints, tags: Iterable[str]) -> list[str]:
    """Every original tag ``constraints`` admit, the one ``highest_in_range`` elects first
    (for a caller that needs the highest one meeting a further condition)."""
    return [version.original for version in _descending(constraints, tags)]


def _descending(constraints: Constraints, tags: Iterable[str]) -> Iterator[Version]:
    parsed = sorted((v for v in map(parse_tag, tags) if v is not None), key=_original)
    # highest precedence first; among equals the lexically smallest original (the sort is stable)
    parsed.sort(key=Version.key, reverse=True)
    seen: set[object] = set()
    for version in parsed:
        if constraints.check(version) and version.key() not in seen:
            seen.add(version.key())
            yield version


def _original(version: Version) -> str:
    return version.original
