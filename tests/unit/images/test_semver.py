"""Masterminds/semver v3 behaviour as Flux's semver policy sees it."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lockgate.semver import constraints
from lockgate.semver import version as semver

CHECKS = {
    # name: (range, version, expected)
    "patch_wildcard_matches": ("1.0.x", "1.0.7", True),
    "patch_wildcard_other_minor": ("1.0.x", "1.1.0", False),
    "caret_same_major": ("^1.0", "1.9.3", True),
    "caret_next_major": ("^1.0", "2.0.0", False),
    "caret_zero_major_pins_minor": ("^0.2.3", "0.3.0", False),
    "caret_zero_zero_pins_patch": ("^0.0.3", "0.0.4", False),
    "tilde_minor": ("~1.2", "1.2.9", True),
    "tilde_minor_next": ("~1.2", "1.3.0", False),
    "tilde_major_only": ("~1", "1.8.0", True),
    "and_space": (">=1.0 <2.0", "1.5.0", True),
    "and_space_upper_bound": (">=1.0 <2.0", "2.0.0", False),
    "and_comma": (">= 1.0, < 2.0", "1.0.0", True),
    "or_second_branch": ("<1.0 || >=3.0", "3.1.0", True),
    "or_neither": ("<1.0 || >=3.0", "2.0.0", False),
    "star_any_release": ("*", "99.1.0", True),
    "star_no_prerelease": ("*", "1.0.0-rc.1", False),
    "bare_x": ("x", "3.0.0", True),
    "hyphen_range_inside": ("1.2 - 1.4.5", "1.4.5", True),
    "hyphen_range_above": ("1.2 - 1.4.5", "1.4.6", False),
    "hyphen_range_dirty_upper": ("1.2 - 1.4", "1.4.9", True),
    "prerelease_needs_prerelease_comparator": (">=1.0.0", "1.1.0-beta.1", False),
    "prerelease_with_prerelease_comparator": (">=1.0.0-0", "1.1.0-beta.1", True),
    "prerelease_branch_scoped": (">=1.0.0-0 || >=2.0.0", "2.1.0-rc.1", True),
    "prerelease_other_branch_only": ("<1.0.0 || >=2.0.0", "2.1.0-rc.1", False),
    "equal_coerces_minor": ("2.0", "2.0.5", True),
    "not_equal_dirty": ("!=4.1", "4.1.3", False),
    "greater_dirty_minor": (">1", "1.9.0", False),
    "greater_dirty_patch": (">1.1", "1.2.0", True),
    "less_equal_dirty": ("<=1.2", "1.2.99", True),
    "v_prefix_in_range": (">=v1.2.0", "1.3.0", True),
    "build_metadata_ignored": ("=1.0.0", "1.0.0+build.7", True),
    "tilde_arrow": ("~>2.1", "2.1.4", True),
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_constraint_check(name: str) -> None:
    range_, version, expected = CHECKS[name]
    assert constraints.Constraints.parse(range_).check(semver.coerce_parse(version)) is expected


INVALID_RANGES = {
    "word": ">= bar",
    "four_segments": "12.3.4.1234",
    "operator_after_version": "12.3.34~ 1.2.3",
    "leading_zero_prerelease": "v1.2.3-beta.01",
    "empty": "",
    "single_pipe": "1.0 | 2.0",
}


@pytest.mark.parametrize("name", sorted(INVALID_RANGES))
def test_invalid_ranges_are_rejected(name: str) -> None:
    with pytest.raises(semver.SemverError):
        constraints.Constraints.parse(INVALID_RANGES[name])


def test_improper_constraint_message_quotes_like_go() -> None:
    with pytest.raises(semver.SemverError, match=r'^improper constraint: ">= bar"$'):
        constraints.Constraints.parse(">= bar")


def test_many_whitespace_separated_comparators_parse_quickly() -> None:
    text = "  ".join([">=1.0.0"] * 60) + " !"
    with pytest.raises(semver.SemverError):
        constraints.Constraints.parse(text)


TAGS = {
    # tag: parses as Flux's version.ParseVersion?
    "1.2.3": True,
    "v1.2.3": True,
    "1.2.3-rc.1+build.5": True,
    "v1.2.0-x.Y.0+metadata-width-hypen": True,
    "V1.2.3": False,
    "vv1.2.3": False,
    "1.2": False,
    "v1": False,
    "1.2.3.4": False,
    "01.2.3": False,
    "1.2.3-01": False,
    "1.2.3-": False,
    "1.2.3+": False,
    "18446744073709551616.0.0": False,
    "18446744073709551615.0.0": True,
    "latest": False,
    "": False,
}


@pytest.mark.parametrize("tag", sorted(TAGS))
def test_tag_parsing_is_strict_with_optional_v(tag: str) -> None:
    assert (semver.parse_tag(tag) is not None) is TAGS[tag]


def test_parse_tag_keeps_the_original() -> None:
    version = semver.parse_tag("v1.2.3")
    assert version is not None and version.original == "v1.2.3" and version.major == 1


ORDER = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1",
    "1.1.0",
    "2.0.0",
]


def test_precedence_follows_semver_spec() -> None:
    versions = [semver.strict_parse(text) for text in ORDER]
    for low, high in itertools.pairwise(versions):
        assert low.compare(high) == -1 and high.compare(low) == 1


def test_build_metadata_does_not_affect_precedence() -> None:
    assert semver.strict_parse("1.0.0+a").compare(semver.strict_parse("1.0.0+b")) == 0


def test_coercion_fills_missing_segments() -> None:
    version = semver.coerce_parse("v2.1")
    assert (version.major, version.minor, version.patch) == (2, 1, 0)


@given(
    st.one_of(
        st.text(alphabet="0123456789v.-+aZ", max_size=16),
        st.from_regex(
            r"v?[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}(-[0-9a-z.-]{0,6})?(\+[0-9a-z.-]{0,4})?", fullmatch=True
        ),
        st.just("18446744073709551616.0.0"),
    )
)
def test_fast_tag_parser_agrees_with_the_reference(tag: str) -> None:
    assert semver.parse_tag(tag) == semver.parse_tag_reference(tag)


_VERSIONS = st.from_regex(r"v?[0-2]\.[0-2]\.[0-2](-(rc|0|1|a-b)(\.(0|1|x)){0,2})?(\+b[0-9])?", fullmatch=True)


@given(_VERSIONS, _VERSIONS)
def test_sort_key_orders_as_compare(one: str, other: str) -> None:
    left, right = semver.parse_tag(one), semver.parse_tag(other)
    assert left is not None and right is not None
    by_key = (left.key() > right.key()) - (left.key() < right.key())
    assert by_key == left.compare(right)
