"""The highest tag in a semver range: one rule for image policies and the runner's ``--semver``.

Pure. Tags that are not strict ``X.Y.Z[-pre][+build]`` versions (an optional ``v`` kept)
are ignored, as Flux ignores them. Among tags of equal precedence (``v1.0.0`` and
``1.0.0``, or differing build metadata) the lexically smallest original wins, which is
the one Flux meets first in a registry's lexically ordered tag list, so the result does
not depend on the order of the input.
"""

from __future__ import annotations

from collections.abc import Iterable

from lockgate.semver.constraints import Constraints
from lockgate.semver.version import Version, parse_tag


def highest_in_range(constraints: Constraints, tags: Iterable[str]) -> str | None:
    """The elected original tag, or None when no tag satisfies ``constraints``."""
    best: Version | None = None
    for tag in tags:
        version = parse_tag(tag)
        if version is None or not constraints.check(version):
            continue
        order = 1 if best is None else version.compare(best)
        if order > 0 or (best is not None and order == 0 and version.original < best.original):
            best = version
    return None if best is None else best.original
