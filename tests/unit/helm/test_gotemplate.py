"""Go template actions as Go's lexer splits them: strings, raw strings, comments and trim markers."""

from __future__ import annotations

import pytest

from lockgate.helm import gotemplate
from lockgate.helm.gotemplate import Kind


def tokens(text: str) -> list[list[tuple[str, str]]]:
    return [[(t.kind.value, t.value) for t in a.tokens] for a in gotemplate.actions(text, "t.yaml")]


def test_fields_variables_strings_and_identifiers_are_told_apart() -> None:
    assert tokens('{{ .Values.lookup }}{{ $lookup := "lookup" }}{{ lookup "v1" }}') == [
        [("field", "Values"), ("field", "lookup")],
        [("variable", "lookup"), ("other", ":"), ("other", "="), ("string", "lookup")],
        [("identifier", "lookup"), ("string", "v1")],
    ]


@pytest.mark.parametrize(
    "text",
    [
        '{{/* lookup "v1" "Secret" */}}',
        "{{- /* lookup */ -}}",
        "{{/* a\nmultiline lookup\n*/}}",
        "# lookup in a YAML comment, outside any action\n",
        '{{ "}} lookup" }}',
        "{{ `raw }} lookup` }}",
        "{{ '}' }} lookup",
    ],
)
def test_comments_strings_and_text_never_hold_a_call(text: str) -> None:
    found = [t for a in gotemplate.actions(text, "t.yaml") for t in a.tokens]
    assert not [t for t in found if t.kind is Kind.IDENTIFIER and t.value == "lookup"]


def test_lines_count_text_comments_and_multiline_actions() -> None:
    text = 'a: 1\n{{/*\ncomment\n*/}}\nb: {{ include\n  "x" . }}\nc: {{ `one\ntwo` }} {{ lookup }}\n'
    found = gotemplate.actions(text, "t.yaml")
    assert [(a.line, a.tokens[0].value) for a in found] == [(5, "include"), (7, "one\ntwo"), (8, "lookup")]
    assert found[0].tokens[1].line == 6  # the name is on the action's second line


def test_trim_markers_are_not_minus_signs() -> None:
    assert tokens("{{- lookup -}}{{-3}}") == [[("identifier", "lookup")], [("other", "-"), ("other", "3")]]


@pytest.mark.parametrize(
    ("text", "problem", "line"),
    [
        ("a\n{{ lookup", "unclosed action", 2),
        ('{{ "open }}', "unterminated quoted string", 1),
        ("x\n\n{{/* open", "unclosed comment", 3),
        ("{{/* c */ x }}", "comment ends before closing delimiter", 1),
        ("{{ `raw }}", "unterminated raw quoted string", 1),
    ],
)
def test_what_go_refuses_is_refused_with_file_and_line(text: str, problem: str, line: int) -> None:
    with pytest.raises(gotemplate.TemplateSyntaxError) as caught:
        gotemplate.actions(text, "templates/x.yaml")
    assert str(caught.value) == f"templates/x.yaml:{line}: {problem}"
