"""lockgate.envsubst on the shared table (the same rows the flux CLI is checked against), plus
what the CLI cannot show: multi-line templates, non-strict mode, the name check, newlines."""

from __future__ import annotations

import pytest

from lockgate import envsubst
from tests.envsubst_cases import Case, cases


@pytest.mark.parametrize("case", cases(), ids=lambda case: case.name)
def test_table(case: Case) -> None:
    if case.error is None:
        assert envsubst.evaluate(case.template, case.vars) == case.out
    else:
        with pytest.raises(envsubst.SubstitutionError) as caught:
            envsubst.evaluate(case.template, case.vars)
        assert str(caught.value) == case.error


def test_the_table_covers_every_operator() -> None:
    templates = " ".join(case.template for case in cases())
    for operator in (
        ":=",
        ":-",
        "=",
        ":?",
        ":+",
        "#",
        "##",
        "%",
        "%%",
        "^",
        "^^",
        ",",
        ",,",
        "/",
        "//",
        "/#",
        "/%",
    ):
        assert any(operator in case.template for case in cases()), operator
    assert "$$" in templates


def test_strict_error_names_the_variable() -> None:
    with pytest.raises(envsubst.SubstitutionError) as caught:
        envsubst.evaluate("a: ${A}\nb: ${GONE}\n", {"A": "x"})
    assert caught.value.variable == "GONE"


def test_non_strict_treats_unset_as_empty() -> None:
    assert envsubst.evaluate("a: [${GONE}] ${GONE:-d}", {}, strict=False) == "a: [] d"


def test_a_whole_document_with_a_default_across_lines() -> None:
    text = "metadata:\n  name: ${NAME}\ndata:\n  k: ${X:=one\n    two}\n"
    assert envsubst.evaluate(text, {"NAME": "app"}) == "metadata:\n  name: app\ndata:\n  k: one\n    two\n"


@pytest.mark.parametrize("name", ["1A", "a-b", "a.b", "é", ""])
def test_invalid_names_fail_with_fluxs_text(name: str) -> None:
    with pytest.raises(envsubst.SubstitutionError) as caught:
        envsubst.check_names({"OK": "1", name: "v"})
    assert str(caught.value) == (
        f"'{name}' var name is invalid, must match '^[_[:alpha:]][_[:alpha:][:digit:]]*$'"
    )


def test_valid_names_pass() -> None:
    envsubst.check_names({"_a": "", "A1": "", "cluster_NAME_2": ""})


def test_newlines_are_stripped_from_values() -> None:
    assert envsubst.clean_value("a\nb\n") == "ab"


def test_go_case_mapping_keeps_characters_without_a_single_rune_mapping() -> None:
    assert envsubst.evaluate("${A^^}", {"A": "straße"}) == "STRAßE"


def test_substr_counts_bytes_as_go() -> None:
    assert envsubst.evaluate("${A:-3}", {"A": "abcdef"}) == "abcdef"  # ":-" is the default operator
    assert envsubst.evaluate("${A: -3}", {"A": "abcdef"}) == "abcdef"  # " -3" is not a number
    assert envsubst.evaluate("${A:1:2}", {"A": "héllo"}) == "é"


@pytest.mark.parametrize("case", [c for c in cases() if c.error is None], ids=lambda case: case.name)
def test_marked_evaluation_renders_as_evaluation(case: Case) -> None:
    output, _ = envsubst.evaluate_marked(case.template, case.vars, set(case.vars))
    assert output == case.out


def test_marked_evaluation_says_where_a_secret_variable_went_whole_derived_or_nested() -> None:
    template = "a: ${USER}\nb: postgres://${USER}:${PW}@db\nc: ${PW^^}\nd: ${MISSING:-${PW}}\ne: $${PW}\n"
    output, spans = envsubst.evaluate_marked(template, {"USER": "app", "PW": "pa55"}, {"PW"})
    assert output == "a: app\nb: postgres://app:pa55@db\nc: PA55\nd: pa55\ne: ${PW}\n"
    assert [output[start:end] for start, end in spans] == ["pa55", "PA55", "pa55"]
