"""Tag selection with Flux's semantics: orderings, filterTags, exclusions, errors."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from action.images import gocompat, policy
from action.images.policy import AlphabeticalChoice, NumericalChoice, SemverChoice, TagFilter

SELECTIONS: dict[str, tuple[policy.Choice, TagFilter | None, list[str], str]] = {
    # name: (choice, filter, tags, expected)
    "semver_patch_range": (
        SemverChoice("1.0.x"),
        None,
        ["1.0.0", "1.0.0.1", "1.0.0p", "1.0.1", "1.2.0"],
        "1.0.1",
    ),
    "semver_keeps_v_prefix": (SemverChoice("1.0.x"), None, ["v1.2.3", "v1.0.0", "v0.1.0"], "v1.0.0"),
    "semver_ignores_non_semver": (SemverChoice(">=1"), None, ["latest", "main-abc", "1.4", "1.3.0"], "1.3.0"),
    "semver_skips_prereleases": (SemverChoice(">=1.0.0"), None, ["1.0.0", "1.1.0-rc.1"], "1.0.0"),
    "semver_prerelease_range": (SemverChoice(">=1.0.0-0"), None, ["1.0.0", "1.1.0-rc.1"], "1.1.0-rc.1"),
    "semver_tie_prefers_first_listed": (SemverChoice("*"), None, ["v1.0.0", "1.0.0"], "1.0.0"),
    "alphabetical_asc_picks_highest": (AlphabeticalChoice("asc"), None, ["a", "c", "b"], "c"),
    "alphabetical_desc_picks_lowest": (AlphabeticalChoice("desc"), None, ["b", "a", "c"], "a"),
    "alphabetical_byte_order": (AlphabeticalChoice("asc"), None, ["Zebra", "apple"], "apple"),
    "alphabetical_timestamps": (
        AlphabeticalChoice("asc"),
        None,
        ["RELEASE.2021-01-02", "RELEASE.2020-12-31"],
        "RELEASE.2021-01-02",
    ),
    "numerical_asc": (NumericalChoice("asc"), None, ["1", "10", "9", "-3", "2.5"], "10"),
    "numerical_desc": (NumericalChoice("desc"), None, ["1", "10", "9", "-3", "2.5"], "-3"),
    "numerical_exponent": (NumericalChoice("asc"), None, ["1e3", "999"], "1e3"),
    "filter_then_semver": (
        SemverChoice("*"),
        TagFilter(r"^main-(?P<v>.*)", "$v"),
        ["main-1.0.0", "main-2.0.0", "3.0.0"],
        "main-2.0.0",
    ),
    "filter_extract_numerical": (
        NumericalChoice("asc"),
        TagFilter(r"^main-[a-f0-9]+-(?P<ts>[0-9]+)", "$ts"),
        ["main-abc1-100", "main-def2-99", "feature-x-1000"],
        "main-abc1-100",
    ),
    "filter_is_unanchored": (AlphabeticalChoice("asc"), TagFilter("rc"), ["1-rc", "2", "0-rc"], "1-rc"),
    "filter_without_extract_keeps_tag": (
        AlphabeticalChoice("asc"),
        TagFilter(r"^v(\d+)"),
        ["v1", "v2", "x9"],
        "v2",
    ),
    "filter_numbered_group": (
        NumericalChoice("asc"),
        TagFilter(r"build-(\d+)", "$1"),
        ["build-7", "build-12"],
        "build-12",
    ),
}


@pytest.mark.parametrize("name", sorted(SELECTIONS))
def test_select(name: str) -> None:
    choice, tag_filter, tags, expected = SELECTIONS[name]
    assert policy.select(tags, choice, tag_filter=tag_filter).tag == expected


ERRORS: dict[str, tuple[policy.Choice, TagFilter | None, list[str], type[Exception], str]] = {
    "empty_list": (SemverChoice("*"), None, [], policy.NoLatestError, "no tags in database"),
    "nothing_matches_range": (
        SemverChoice("1.0.x"),
        None,
        ["1.2.0"],
        policy.NoLatestError,
        "unable to determine latest version from provided list",
    ),
    "filter_leaves_nothing": (
        AlphabeticalChoice(),
        TagFilter("^nope"),
        ["a"],
        policy.NoLatestError,
        "version list argument cannot be empty",
    ),
    "non_number": (
        NumericalChoice(),
        None,
        ["1", "latest"],
        policy.NoLatestError,
        "failed to parse invalid numeric value 'latest'",
    ),
    "invalid_range": (
        SemverChoice(">= bar"),
        None,
        ["1.0.0"],
        policy.InvalidPolicyError,
        'invalid policy: improper constraint: ">= bar"',
    ),
    "invalid_pattern": (
        AlphabeticalChoice(),
        TagFilter("(unclosed"),
        ["a"],
        policy.InvalidPolicyError,
        "invalid policy: failed to filter tags: invalid regular expression pattern '(unclosed'",
    ),
    "perl_only_pattern": (
        AlphabeticalChoice(),
        TagFilter("(?=a)"),
        ["a"],
        policy.InvalidPolicyError,
        "unsupported Perl syntax",
    ),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_use_flux_wording(name: str) -> None:
    choice, tag_filter, tags, error, message = ERRORS[name]
    with pytest.raises(error, match=re.escape(message)):
        policy.select(tags, choice, tag_filter=tag_filter)


def test_invalid_order_is_reported_upper_cased() -> None:
    with pytest.raises(
        policy.InvalidPolicyError, match="invalid order argument provided: 'UP', must be one of: ASC, DESC"
    ):
        policy.parse_order("up")
    assert policy.parse_order("DeSc") == "desc"
    assert policy.parse_order("") == "asc"


def test_exclusion_list_defaults_to_signatures() -> None:
    tags = ["1.0.0", "sha256-abc.sig", "sha256-abc.att"]
    assert policy.exclude(tags, []) == ["1.0.0", "sha256-abc.att"]
    assert policy.exclude(tags, ["att$"]) == ["1.0.0", "sha256-abc.sig"]


FLOATS = {
    "1": 1.0,
    "-2.5": -2.5,
    "1e3": 1000.0,
    ".5": 0.5,
    "5.": 5.0,
    "1_000": 1000.0,
    "0x1p-2": 0.25,
    "0xep1": 28.0,
    "Inf": float("inf"),
    "-infinity": float("-inf"),
    "1__0": None,
    "_1": None,
    "1_": None,
    "0x1": None,
    "1e400": None,
    " 1": None,
    "+nan": None,
    "abc": None,
    "": None,
    ".": None,
    "1e": None,
    "0x.p1": None,
}


@pytest.mark.parametrize("text", sorted(FLOATS))
def test_parse_float_matches_go(text: str) -> None:
    assert gocompat.parse_float(text) == FLOATS[text]


tag_text = st.text(alphabet="0123456789abcv.-_xyz", min_size=1, max_size=12)
semver_tags = st.builds(
    lambda prefix, major, minor, patch, pre: f"{prefix}{major}.{minor}.{patch}{pre}",
    st.sampled_from(["", "v"]),
    st.integers(0, 5),
    st.integers(0, 5),
    st.integers(0, 5),
    st.sampled_from(["", "-rc.1", "-alpha", "+build.1", "-rc.2+b"]),
)
any_tags = st.lists(st.one_of(tag_text, semver_tags), min_size=1, max_size=30)
choices = st.one_of(
    st.sampled_from(
        [SemverChoice(r) for r in ["*", ">=1.0.0", "^2", "~1.2", "<3.0.0-0", ">=0.0.0-0", "1.x || 4.x"]]
    ),
    st.sampled_from([AlphabeticalChoice("asc"), AlphabeticalChoice("desc")]),
)
filters = st.sampled_from([None, TagFilter("^v"), TagFilter(r"(\d+)\.(\d+)", "$2.$1.0"), TagFilter("[a-c]")])


def _outcome(tags: list[str], choice: policy.Choice, tag_filter: TagFilter | None) -> str:
    try:
        return policy.select(tags, choice, tag_filter=tag_filter).tag
    except policy.NoLatestError as exc:
        return f"error: {exc}"


@given(tags=any_tags, choice=choices, tag_filter=filters, data=st.data())
def test_result_does_not_depend_on_tag_order(
    tags: list[str], choice: policy.Choice, tag_filter: TagFilter | None, data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(tags))
    assert _outcome(tags, choice, tag_filter) == _outcome(list(shuffled), choice, tag_filter)


@given(tags=any_tags, choice=choices, tag_filter=filters)
def test_result_is_always_an_original_tag(
    tags: list[str], choice: policy.Choice, tag_filter: TagFilter | None
) -> None:
    outcome = _outcome(tags, choice, tag_filter)
    assert outcome.startswith("error: ") or outcome in tags


numeric_tags = st.lists(
    st.one_of(st.integers(-1000, 1000).map(str), st.floats(-1e6, 1e6, allow_nan=False).map(repr)),
    min_size=1,
    max_size=20,
)


@given(tags=numeric_tags, order=st.sampled_from(["asc", "desc"]), data=st.data())
def test_numerical_is_order_independent_and_extreme(
    tags: list[str], order: policy.Order, data: st.DataObject
) -> None:
    shuffled = list(data.draw(st.permutations(tags)))
    chosen = policy.select(tags, NumericalChoice(order)).tag
    assert chosen == policy.select(shuffled, NumericalChoice(order)).tag
    values = [float(tag) for tag in tags]
    assert float(chosen) == (max(values) if order == "asc" else min(values))


def test_candidates_are_the_tags_the_policy_could_elect() -> None:
    """``images scan`` said "5 candidates of 5 tags" for a range only 3 tags satisfy (issue 36)."""
    tags = ["1.0.0", "1.1.0", "1.2.0", "2.0.0", "latest"]
    assert policy.select(tags, policy.SemverChoice("^1.0")).candidates == 3
    assert policy.select(tags, policy.AlphabeticalChoice()).candidates == 5
    filtered = policy.select(
        ["main-1", "main-2", "v1.0.0", "v3.0.0"],
        policy.SemverChoice("<2"),
        tag_filter=policy.TagFilter(r"^v(?P<v>.*)$", "$v"),
    )
    assert (filtered.tag, filtered.candidates) == ("v1.0.0", 1)
