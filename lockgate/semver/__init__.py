"""Semantic versions with Masterminds/semver v3 semantics, as Flux uses them.

Shared by the image policies (CI side: Flux ImagePolicy ``semver``) and the runner's
``--semver`` resolution (cluster side: Flux OCIRepository ``ref.semver``): one
implementation, so both sides pick the same tag.
"""

from lockgate.semver.constraints import Constraints, go_quote
from lockgate.semver.select import highest_in_range, in_range_descending
from lockgate.semver.version import (
    SemverError,
    Version,
    coerce_parse,
    compare_prerelease,
    parse_tag,
    parse_tag_reference,
    strict_parse,
)

__all__ = [
    "Constraints",
    "SemverError",
    "Version",
    "coerce_parse",
    "compare_prerelease",
    "go_quote",
    "highest_in_range",
    "in_range_descending",
    "parse_tag",
    "parse_tag_reference",
    "strict_parse",
]
