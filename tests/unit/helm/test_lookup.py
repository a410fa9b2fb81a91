"""Which lookup calls are rendered: in templates, in defines they reach, across subcharts."""

from __future__ import annotations

from lockgate.helm import lookup
from lockgate.helm.chartfiles import ChartFile


def chart(**files: str) -> list[ChartFile]:
    """``templates__x_yaml`` style names: ``__`` is a slash."""
    found = []
    for key, text in files.items():
        name = (
            key.replace("__", "/").replace("_yaml", ".yaml").replace("_tpl", ".tpl").replace("_txt", ".txt")
        )
        found.append(ChartFile(name, name, "", text.encode()))
    return found


def shown(files: list[ChartFile]) -> list[str]:
    return [str(f) for f in lookup.find(files)]


SECRET = '{{ (lookup "v1" "Secret" .Release.Namespace "db").data }}'


def test_a_call_in_a_rendered_template_is_found_with_its_line() -> None:
    assert shown(chart(templates__secret_yaml=f"a: 1\nb: {SECRET}\n")) == ["templates/secret.yaml:2: lookup"]


def test_a_define_reached_through_another_define_names_the_template_that_uses_it() -> None:
    helpers = (
        '{{- define "app.password" -}}\n'
        f"{SECRET}\n"
        "{{- end }}\n"
        '{{- define "app.env" -}}\n'
        'PASSWORD: {{ include "app.password" . }}\n'
        "{{- end }}\n"
    )
    files = chart(
        templates___helpers_tpl=helpers,
        templates__cm_yaml='x: 1\ndata:\n  {{- include "app.env" . | nindent 2 }}\n',
    )
    assert shown(files) == [
        'templates/_helpers.tpl:2: lookup, in define "app.password", used by templates/cm.yaml:3'
    ]


def test_a_define_nobody_uses_and_notes_do_not_count() -> None:
    files = chart(
        templates___helpers_tpl=f'{{{{ define "unused" }}}}{SECRET}{{{{ end }}}}',
        templates__NOTES_txt=SECRET,
        templates__cm_yaml="a: {{ .Values.lookup }}  # lookup\n{{/* lookup */}}",
    )
    assert shown(files) == []


def test_a_define_in_a_subchart_used_by_the_parent_counts() -> None:
    sub = ChartFile(
        "templates/_db.tpl",
        "charts/db/templates/_db.tpl",
        "charts/db",
        f'{{{{- define "db.pw" -}}}}\n{SECRET}\n{{{{- end -}}}}'.encode(),
    )
    files = [*chart(templates__s_yaml='pw: {{ template "db.pw" . }}'), sub]
    assert shown(files) == [
        'charts/db/templates/_db.tpl:2: lookup, in define "db.pw", used by templates/s.yaml:1'
    ]


def test_an_include_of_a_computed_name_reaches_every_define() -> None:
    files = chart(
        templates___h_tpl=f'{{{{ define "a" }}}}{SECRET}{{{{ end }}}}',
        templates__x_yaml='{{ include (printf "%s" .Values.which) . }}',
    )
    assert shown(files) == ['templates/_h.tpl:1: lookup, in define "a", used by templates/x.yaml:1']


def test_a_block_defines_and_uses_its_body() -> None:
    files = chart(
        templates__x_yaml=f'{{{{ block "b" . }}}}\n{SECRET}\n{{{{ end }}}}\n{{{{ if true }}}}{{{{ end }}}}'
    )
    assert shown(files) == ['templates/x.yaml:2: lookup, in define "b", used by templates/x.yaml:1']


def test_values_rendered_by_tpl_count_once_a_rendered_template_calls_tpl() -> None:
    values = (
        'db:\n  # a comment: {{ lookup "v1" "Secret" "" "x" }}\n'
        '  password: \'{{ (lookup "v1" "Secret" "" "x").data }}\'\n'
    )
    files = [*chart(templates__s_yaml="a: 1\n"), ChartFile("values.yaml", "values.yaml", "", values.encode())]
    assert shown(files) == []  # nothing renders a value as a template
    files[0] = chart(templates__s_yaml="pw: {{ tpl .Values.db.password . }}\n")[0]
    assert shown(files) == [
        "values.yaml:3: lookup, in the value db.password, rendered by tpl at templates/s.yaml:1"
    ]
    found = lookup.find(
        files[:1],
        values=[("prod.yaml", "x: '{{ lookup }}'\ny: plain\n")],
        set_values=["z={{ lookup }}", "w=1"],
    )
    assert [str(f) for f in found] == [
        "--set: lookup, in the value z, rendered by tpl at templates/s.yaml:1",
        "prod.yaml:1: lookup, in the value x, rendered by tpl at templates/s.yaml:1",
    ]
