"""Flux's patterns are Go regular expressions: filterTags and exclusionList mean what Go means.

The first table holds the cases where Python's ``re`` and Go's RE2 disagree; the second
the patterns Flux documents, with the tag each elects; the last tests check that syntax
Go refuses is a configuration error naming file, document and field, as ``lockgate
images scan`` prints it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from action.images import policy
from action.images.policy import AlphabeticalChoice, NumericalChoice, SemverChoice, TagFilter
from lockgate import cli, goregex
from lockgate.errors import ExitCode

#: name: (pattern, tags, the tags Go's MatchString accepts)
GO_SEMANTICS: dict[str, tuple[str, list[str], list[str]]] = {
    "posix_class_matches_ascii_digits": (r"^[[:digit:]]+$", ["123", "v1", "12a"], ["123"]),
    "unicode_letter_class_is_supported": (r"^\pL+$", ["abc", "été", "a1", "12"], ["abc", "été"]),
    "perl_digit_class_is_ascii_only": (r"^\d+$", ["123", "١٢٣", "12३"], ["123"]),
    "word_class_is_ascii_only": (r"^\w+$", ["build_1", "été"], ["build_1"]),
    "duplicate_group_names_are_allowed": (
        r"^(?P<n>[0-9]+)$|^v(?P<n>[0-9]+)$",
        ["1", "v2", "x3"],
        ["1", "v2"],
    ),
    "go_named_group_syntax": (r"^build-(?<num>[0-9]+)$", ["build-7", "build-x"], ["build-7"]),
    "quoted_literal_text": (r"^\Q1.0(rc)\E$", ["1.0(rc)", "1x0(rc)"], ["1.0(rc)"]),
}


@pytest.mark.parametrize("name", sorted(GO_SEMANTICS))
def test_patterns_match_as_in_go(name: str) -> None:
    pattern, tags, matching = GO_SEMANTICS[name]
    assert sorted(policy.filter_tags(tags, TagFilter(pattern)).values()) == sorted(matching)


#: name: (pattern, Go's error), each refused by Go's regexp.Compile
GO_REFUSES: dict[str, tuple[str, str]] = {
    "possessive_repetition": ("a++", "error parsing regexp: invalid nested repetition operator: `++`"),
    "nested_repetition": ("a**", "error parsing regexp: invalid nested repetition operator: `**`"),
    "lookahead": ("^v(?=1)", "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"),
    "lookbehind": ("(?<=v)1", "error parsing regexp: invalid named capture: `(?<=v)1`"),
    "backreference": (r"(a)\1", "error parsing regexp: invalid escape sequence: `\\1`"),
    "named_backreference": (
        "(?P<a>x)(?P=a)",
        "error parsing regexp: invalid or unsupported Perl syntax: `(?P`",
    ),
    "any_byte_escape": (r"a\C", "error parsing regexp: invalid escape sequence: `\\C`"),
    "non_ascii_group_name": ("(?P<été>x)", "error parsing regexp: invalid named capture: `(?P<été>`"),
    "repeat_count_over_1000": ("a{1001}", "error parsing regexp: invalid repeat count: `{1001}`"),
    "unclosed_group": ("(?P<v>x", "error parsing regexp: missing closing ): `(?P<v>x`"),
}


@pytest.mark.parametrize("name", sorted(GO_REFUSES))
def test_patterns_go_refuses_are_invalid_policies(name: str) -> None:
    pattern, message = GO_REFUSES[name]
    with pytest.raises(policy.InvalidPolicyError) as caught:
        policy.validate(AlphabeticalChoice(), TagFilter(pattern))
    assert caught.value.message.startswith(
        f"invalid policy: failed to filter tags: invalid regular expression pattern '{pattern}': {message}"
    )


#: name: (choice, filter, tags, elected tag): patterns from Flux's ImagePolicy documentation
FLUX_DOCUMENTED: dict[str, tuple[policy.Choice, TagFilter, list[str], str]] = {
    "branch_sha_timestamp": (
        NumericalChoice("asc"),
        TagFilter(r"^main-[a-fA-F0-9]+-(?P<ts>.*)", "$ts"),
        ["main-9a1B2c-1611000000", "main-77ffee-1612000000", "dev-abcdef-1699000000", "main-xyz-1700000000"],
        "main-77ffee-1612000000",
    ),
    "sha_timestamp": (
        NumericalChoice("asc"),
        TagFilter(r"^[a-f0-9]+-(?P<ts>[0-9]+)", "$ts"),
        ["4f2ba1-1611", "0c0ffe-1612", "zz-9999", "abc-12x"],
        "0c0ffe-1612",
    ),
    "semver_extracted_from_prefixed_tags": (
        SemverChoice(">=1.0.0"),
        TagFilter(r"^v?(?P<semver>[0-9]+\.[0-9]+\.[0-9]+)$", "$semver"),
        ["v1.2.3", "v1.10.0", "1.9.0", "latest", "v2.0.0-rc.1"],
        "v1.10.0",
    ),
    "braced_group_reference": (
        AlphabeticalChoice("desc"),
        TagFilter(r"^RELEASE\.(?P<stamp>[0-9T-]+)Z$", "${stamp}"),
        ["RELEASE.2023-01-31T08-42-01Z", "RELEASE.2022-12-01T10-00-00Z", "latest"],
        "RELEASE.2022-12-01T10-00-00Z",
    ),
    "go_named_group_extracted": (
        NumericalChoice("asc"),
        TagFilter(r"^build-(?<num>[0-9]+)$", "$num"),
        ["build-9", "build-10", "build-x"],
        "build-10",
    ),
}


@pytest.mark.parametrize("name", sorted(FLUX_DOCUMENTED))
def test_flux_documented_patterns(name: str) -> None:
    choice, tag_filter, tags, expected = FLUX_DOCUMENTED[name]
    assert policy.select(tags, choice, tag_filter=tag_filter).tag == expected


def test_default_exclusion_drops_signature_tags_only() -> None:
    tags = ["1.0.0", "sha256-3b1c.sig", "sig", "1.0.0.sig.bak", "sha256-3b1c.att"]
    assert policy.exclude(tags, policy.DEFAULT_EXCLUSION_LIST) == [
        "1.0.0",
        "sig",
        "1.0.0.sig.bak",
        "sha256-3b1c.att",
    ]


def test_exclusion_patterns_are_go_patterns() -> None:
    assert policy.exclude(["1.0.0", "١٢٣", "123"], [r"^\d+$"]) == ["1.0.0", "١٢٣"]
    assert policy.exclude(["abc", "1.0"], [r"^[[:alpha:]]+$"]) == ["1.0"]


FLUX_KINDS = (
    "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\n"
    "metadata: {name: app, namespace: apps}\n"
    "spec:\n  image: 127.0.0.1:1/app\n  exclusionList: ['^.*\\.sig$', '(a)\\1']\n"
    "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\n"
    "metadata: {name: app, namespace: apps}\n"
    "spec:\n  imageRepositoryRef: {name: app}\n  policy: {alphabetical: {}}\n"
    "  filterTags: {pattern: '^v(?=1)', extract: '$0'}\n"
)
NATIVE = (
    "apiVersion: lockgate.dev/v1alpha1\nkind: ImageAutomation\nmetadata: {name: web, namespace: apps}\n"
    "spec:\n  git: {author: {email: bot@example.com}}\n  images:\n"
    "    - {name: a, image: 127.0.0.1:1/a, alphabetical: asc, exclude: ['a++'],\n"
    "       filterTags: {pattern: '(?<!x)y'}}\n"
)


def test_scan_refuses_perl_syntax_naming_file_document_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "flux.yaml").write_text(FLUX_KINDS)
    (tmp_path / "native.yaml").write_text(NATIVE)
    code = cli.main(["images", "scan", "--path", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE, err
    assert (
        "flux.yaml:6: document 1: spec.exclusionList[1]: invalid regular expression '(a)\\1': "
        "error parsing regexp: invalid escape sequence: `\\1`"
    ) in err
    assert (
        "flux.yaml:14: document 2: spec.filterTags.pattern: invalid policy: failed to filter tags: "
        "invalid regular expression pattern '^v(?=1)': "
        "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"
    ) in err
    assert (
        "native.yaml:7: document 1: spec.images[0].exclude[0]: invalid regular expression 'a++': "
        "error parsing regexp: invalid nested repetition operator: `++`"
    ) in err
    assert (
        "native.yaml:8: document 1: spec.images[0].filterTags.pattern: invalid policy: failed to filter "
        "tags: invalid regular expression pattern '(?<!x)y': "
        "error parsing regexp: invalid named capture: `(?<!x)y`"
    ) in err
    assert "RE2 syntax" in err  # and it says what to do


#: tags built from pieces that matter to ``^.*\.sig$``: the suffix, newlines, non-ASCII text
_PIECES = st.sampled_from(["a", "1", ".", "s", "i", "g", ".sig", "sig", "\n", "é", "-"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(_PIECES, max_size=8).map("".join), max_size=20))
def test_the_default_exclusion_shortcut_is_exactly_re2(tags: list[str]) -> None:
    """Flux's default exclusion is a suffix test in ``exclude``; it must agree with RE2 on any text."""
    by_re2 = [t for t in tags if not goregex.compile(policy.DEFAULT_EXCLUSION_LIST[0]).matches(t)]
    assert policy.exclude(tags) == by_re2
