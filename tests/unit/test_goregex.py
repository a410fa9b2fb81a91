"""Go's regular expressions: compiled by RE2 with Go's syntax rules, errors and ExpandString."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lockgate import goregex


def test_search_is_unanchored_leftmost_first_and_fullmatch_anchors_both_ends() -> None:
    regexp = goregex.compile(r"a|ab")
    found = regexp.search("xaby")
    assert found is not None and found.group() == "a"
    assert regexp.fullmatch("ab") is not None and regexp.fullmatch("xab") is None
    assert regexp.matches("xab") and not regexp.matches("b")


def test_groups_are_numbered_and_named_as_go_numbers_and_names_them() -> None:
    regexp = goregex.compile(r"(?P<major>\d+)\.(\d+)(?:\.(?<patch>\d+))?(?i:X)?")
    assert regexp.names == ("", "major", "", "patch")
    found = regexp.search("v1.22")
    assert found is not None
    assert [found.group(i) for i in range(4)] == ["1.22", "1", "22", None]


def test_group_text_is_the_matched_characters_for_non_ascii_input() -> None:
    found = goregex.compile(r"(\pL+)-(\d+)").search("ça-va-été-12")
    assert found is not None and (found.group(1), found.group(2)) == ("été", "12")


def test_parentheses_in_classes_and_quoted_text_are_not_groups() -> None:
    regexp = goregex.compile(r"[(](x)\Q(?<y>\E(z)")
    assert regexp.names == ("", "", "")
    found = regexp.search("(x(?<y>z")
    assert found is not None and found.group(2) == "z"


def test_text_that_is_not_valid_unicode_is_matched_as_replacement_characters() -> None:
    found = goregex.compile(r"a(.)b").search("a\udc80b")
    assert found is not None and found.group(1) == "\ufffd"


def test_compiled_patterns_are_shared() -> None:
    assert goregex.compile("^v[0-9]+$") is goregex.compile("^v[0-9]+$")


#: template: expected for (?P<name>[a-z]+)-(\d+)(x)? on "abc-42", as Go's ExpandString
EXPANSIONS = {
    "$1": "abc",
    "$2": "42",
    "${2}": "42",
    "$name": "abc",
    "${name}-x": "abc-x",
    "$1x": "",
    "${1}x": "abcx",
    "$3": "",
    "$$1": "$1",
    "$": "$",
    "$-": "$-",
    "${name": "${name",
    "$01": "",
    "$9": "",
    "$nope": "",
    "plain": "plain",
}


@pytest.mark.parametrize("template", sorted(EXPANSIONS))
def test_expand_is_gos_expand_string(template: str) -> None:
    found = goregex.compile(r"(?P<name>[a-z]+)-(\d+)(x)?").search("abc-42")
    assert found is not None
    assert found.expand(template) == EXPANSIONS[template]


def test_expand_with_a_repeated_name_takes_the_first_group_that_matched() -> None:
    regexp = goregex.compile(r"^(?P<v>[0-9]+)$|^v(?P<v>[0-9]+)$")
    assert regexp.names == ("", "v", "v")
    found = regexp.search("v7")
    assert found is not None and found.expand("$v") == "7"


#: pattern: Go's regexp.Compile error
ERRORS = {
    "a++": "error parsing regexp: invalid nested repetition operator: `++`",
    "x{2}{3}": "error parsing regexp: invalid nested repetition operator: `{2}{3}`",
    "*": "error parsing regexp: missing argument to repetition operator: `*`",
    "a{1001}": "error parsing regexp: invalid repeat count: `{1001}`",
    "(a{100}){100}": "error parsing regexp: invalid repeat count: `{100}`",
    "(?=a)": "error parsing regexp: invalid or unsupported Perl syntax: `(?=`",
    "(?i": "error parsing regexp: invalid or unsupported Perl syntax: `(?i`",
    "(?<=a)b": "error parsing regexp: invalid named capture: `(?<=a)b`",
    "(?P<>a)": "error parsing regexp: invalid named capture: `(?P<>`",
    "(?P<a-b>x)": "error parsing regexp: invalid named capture: `(?P<a-b>`",
    "(?<n": "error parsing regexp: invalid named capture: `(?<n`",
    r"(a)\1": "error parsing regexp: invalid escape sequence: `\\1`",
    r"\C": "error parsing regexp: invalid escape sequence: `\\C`",
    r"[\b]": "error parsing regexp: invalid escape sequence: `\\b`",
    "(": "error parsing regexp: missing closing ): `(`",
    "(?P<v>x|(y)": "error parsing regexp: missing closing ): `(?P<v>x|(y)`",
    "x)": "error parsing regexp: unexpected ): `x)`",
    "[a": "error parsing regexp: missing closing ]: `[a`",
    "[z-a]": "error parsing regexp: invalid character class range: `z-a`",
    "[[:word:][:nope:]]": "error parsing regexp: invalid character class range: `[:nope:]`",
    r"\pX": "error parsing regexp: invalid character class range: `\\pX`",
    "a\\": "error parsing regexp: trailing backslash at end of expression: ``",
}


@pytest.mark.parametrize("pattern", sorted(ERRORS))
def test_errors_are_gos(pattern: str) -> None:
    with pytest.raises(goregex.RegexpError) as caught:
        goregex.compile(pattern)
    assert caught.value.go_error == ERRORS[pattern]
    assert caught.value.pattern == pattern
    assert caught.value.message.startswith(ERRORS[pattern])
    assert "RE2 syntax" in caught.value.message


@pytest.mark.parametrize(
    "pattern",
    ["", "(?i)abc", "(?U)a+", "(?m)^a$", "(?s:.)", "(?)", "\\Q*\\E+", r"\x{10FFFF}\101\_", "a{,5}", "[]a]"],
)
def test_go_accepts(pattern: str) -> None:
    goregex.compile(pattern)


def test_a_pattern_too_large_for_re2_is_refused_not_slow() -> None:
    with pytest.raises(goregex.RegexpError, match="expression too large"):
        goregex.compile(r"\pL{1000}")


def test_the_re2_library_is_loaded_only_when_a_pattern_is_compiled() -> None:
    probe = (
        "import sys\n"
        "import action.images.cli, action.images.config, action.signing.cli\n"
        "import lockgate.signing.policy, runner.cli\n"
        "assert 're2' not in sys.modules, 'imported at start-up'\n"
        "from lockgate import goregex\n"
        "goregex.compile('x')\n"
        "assert 're2' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True)
