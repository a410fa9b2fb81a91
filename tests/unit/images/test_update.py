"""Scoping policies to an automation, and commit messages from Flux's template language."""

from __future__ import annotations

import pytest

from action.images import message, policy, setters, update
from action.images.fields import LabelSelector
from action.images.model import Automation, Config, ImagePolicy, NamespacedName
from action.images.setters import ProblemKind

A, B, C = NamespacedName("apps", "a"), NamespacedName("apps", "b"), NamespacedName("other", "c")
CONFIG = Config(
    policies={
        A: ImagePolicy(A, A, policy.AlphabeticalChoice(), labels={"team": "web"}),
        B: ImagePolicy(B, B, policy.AlphabeticalChoice(), labels={"team": "ops"}),
        C: ImagePolicy(C, C, policy.AlphabeticalChoice()),
    }
)
RESULTS = {key: update.PolicyResult(key, update.LatestRef(f"img/{key.name}", "2.0")) for key in (A, B, C)}


def test_only_policies_in_namespace_and_selector_are_setters() -> None:
    automation = Automation(
        NamespacedName("apps", "auto"), "", "e@x", policy_selector=LabelSelector({"team": "web"})
    )
    table = update.setters_for(CONFIG, automation, RESULTS)
    assert table.values == {"apps:a": "img/a:2.0", "apps:a:tag": "2.0", "apps:a:name": "img/a"}
    assert table.skipped["apps:b"][0] is ProblemKind.OUT_OF_SCOPE
    assert table.namespace == "apps"  # other:c is out of scope through the namespace


MARKED = (
    b'a: img/a:1.0 # {"$imagepolicy": "apps:a"}\n'
    b'b: img/b:1.0 # {"$imagepolicy": "apps:b"}\n'
    b'c: img/c:1.0 # {"$imagepolicy": "other:c"}\n'
    b'd: "1.0" # {"$imagepolicy": "web:undefined:tag"}\n'
)


def test_markers_outside_the_scope_are_notices_whether_or_not_their_policy_is_defined() -> None:
    automation = Automation(
        NamespacedName("apps", "auto"), "", "e@x", policy_selector=LabelSelector({"team": "web"})
    )
    result = setters.rewrite("x.yaml", MARKED, update.setters_for(CONFIG, automation, RESULTS))
    assert result.updated == MARKED.replace(b"img/a:1.0", b"img/a:2.0")
    assert [(p.kind, p.setter) for p in result.problems] == [
        (ProblemKind.OUT_OF_SCOPE, "apps:b"),
        (ProblemKind.OUT_OF_SCOPE, "other:c"),
        (ProblemKind.OUT_OF_SCOPE, "web:undefined:tag"),
    ]
    assert result.problems[2].message == (
        "marker 'web:undefined:tag' skipped: policy web:undefined is outside the automation's "
        "namespace 'apps'; left for an automation in 'web', as Flux leaves it"
    )


def test_unknown_policy_in_the_automations_namespace_keeps_the_file_untouched() -> None:
    automation = Automation(NamespacedName("apps", "auto"), "", "e@x")
    data = MARKED + b'e: img/e:1.0 # {"$imagepolicy": "apps:missing"}\n'
    result = setters.rewrite("x.yaml", data, update.setters_for(CONFIG, automation, RESULTS))
    assert not result.changed
    assert [p.setter for p in result.problems if p.kind is ProblemKind.UNKNOWN_POLICY] == ["apps:missing"]


def test_policy_without_result_is_reported_not_applied() -> None:
    automation = Automation(NamespacedName("apps", "auto"), "", "e@x")
    results = {**RESULTS, A: update.PolicyResult(A, None, "no tags in database")}
    table = update.setters_for(CONFIG, automation, results)
    assert table.skipped["apps:a"] == (
        ProblemKind.NO_VALUE,
        "policy apps:a has no latest image: no tags in database",
    )


def _tree() -> update.TreeResult:
    data = b'x: img/a:1.0 # {"$imagepolicy": "apps:a"}\n'
    table = setters.Setters(setters.Setters.for_policy("apps:a", image="img/a", tag="2.0"))
    return update.TreeResult((setters.rewrite("deploy/x.yaml", data, table),))


TEMPLATES = {
    "": "Update from image update automation",
    "{{ .AutomationObject }}": "apps/auto",
    "{{ range .Changed.Changes }}{{ .OldValue }} -> {{ .NewValue }}{{ end }}": "img/a:1.0 -> img/a:2.0",
    "{{- range $f, $_ := .Changed.FileChanges }}\n  {{ $f }}\n{{- end }}": "\n  deploy/x.yaml",
    "{{ len .Changed.Changes }} change{{ if .Values.plural }}s{{ else }}!{{ end }}": "1 change!",
    "{{/* comment */}}{{ with .Values.team }}team {{ . }}{{ end }}": "",
    "{{ range $obj, $c := .Changed.Objects }}{{ $obj.Kind }}{{ else }}none{{ end }}": "",
    "{{ .AutomationObject.Namespace }}:{{ .AutomationObject.Name }} {{ .Values.cluster }}": "apps:auto prod",
    "{{ range .Changed.Changes }}{{ . }}{{ end }}": "{img/a:1.0 img/a:2.0 apps:a}",
    "{{ with $.Values }}{{ len . }}{{ end }}": "3",
}
#: messageTemplateValues of the automation the templates above render for
VALUES = {"cluster": "prod", "plural": "", "team": ""}


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_message_templates(template: str) -> None:
    automation = Automation(
        NamespacedName("apps", "auto"), "", "e@x", message_template=template, template_values=VALUES
    )
    assert update.commit_message(automation, _tree()) == TEMPLATES[template]


@pytest.mark.parametrize("template", ["{{ .Updated }}", '{{ printf "%s" .X }}', "{{ if .X }}", "{{ end }}"])
def test_unsupported_or_wrong_templates_fail_loudly(template: str) -> None:
    automation = Automation(NamespacedName("apps", "auto"), "", "e@x", message_template=template)
    with pytest.raises(message.TemplateError):
        update.commit_message(automation, _tree())


#: templates reaching for what they were not handed, and the field each error must name
BEYOND_THE_DATA = {
    "{{ .Values.__class__ }}": ".Values.__class__",
    "{{ with .__class__.__init__.__globals__.os.environ }}{{ .GITHUB_TOKEN }}{{ end }}": ".__class__",
    "{{ .AutomationObject.__str__ }}": ".AutomationObject.__str__",
    "{{ range .Changed.Changes }}{{ .__dict__ }}{{ end }}": ".__dict__",
    "{{ range $o, $c := .Changed.Objects }}{{ $o.__hash__ }}{{ end }}": "$o.__hash__",
    "{{ .Changed.Changes.__len__ }}": ".Changed.Changes.__len__",
    "{{ .Values.missing }}": ".Values.missing",
    "{{ .Changed.FileChanges.items }}": ".Changed.FileChanges.items",
    "{{ .AutomationObject.Name.upper }}": ".AutomationObject.Name.upper",
}


@pytest.mark.parametrize("template", sorted(BEYOND_THE_DATA))
def test_templates_reach_only_the_documented_data(template: str) -> None:
    automation = Automation(
        NamespacedName("apps", "auto"), "", "e@x", message_template=template, template_values={"a": "b"}
    )
    with pytest.raises(message.TemplateError) as caught:
        update.commit_message(automation, _tree())
    assert BEYOND_THE_DATA[template] in str(caught.value)
