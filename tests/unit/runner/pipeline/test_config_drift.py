"""``spec.ignore`` and ``spec.driftDetection`` in Sync documents: read as Flux and HelmRelease
write them, and every bad value refused at load naming file:line, the document and the field."""

from __future__ import annotations

import pytest

from lockgate.errors import UsageError
from runner.pipeline import config
from runner.plan import drift

HEAD = (
    "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
    "spec:\n  url: oci://127.0.0.1:5000/web\n  interval: 5m\n  verify: {insecureSkip: true}\n"
)


def test_rules_and_mode_become_options() -> None:
    text = HEAD + (
        "  ignore:\n"
        "    - paths: [/spec/replicas]\n"
        "      target: {kind: Deployment, labelSelector: 'app in (web)'}\n"
        "    - paths: ['/metadata/annotations/example.com~1owner', /data/k]\n"
        "  driftDetection: {mode: warn}\n"
    )
    [sync] = config.parse(text.encode(), "lockgate.yaml").syncs
    first, second = sync.ignore
    assert [p.tokens for p in first.paths] == [("spec", "replicas")]
    assert first.target is not None and first.target.kind == "Deployment"
    assert second.target is None and second.paths[0].tokens[-1] == "example.com/owner"
    assert sync.drift_detection is drift.Mode.WARN
    [default] = config.parse(HEAD.encode(), "lockgate.yaml").syncs
    assert default.ignore == () and default.drift_detection is drift.Mode.ENABLED


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        (
            "    - paths: [/spec/replicas, spec/template]\n",
            "lockgate.yaml:9: Sync/web: spec.ignore[0].paths[1]: 'spec/template' is not a JSON pointer: "
            "a JSON pointer (RFC 6901) starts with '/'",
        ),
        (
            "    - paths: ['/metadata/annotations/a~2b']\n",
            "lockgate.yaml:9: Sync/web: spec.ignore[0].paths[0]: '/metadata/annotations/a~2b': "
            "'~' must be followed by 0 or 1",
        ),
        (
            "    - paths: [/spec/replicas]\n      target:\n        kind: 'Deploy(ment'\n",
            "lockgate.yaml:11: Sync/web: spec.ignore[0].target.kind: error parsing regexp: "
            "missing closing ): `Deploy(ment`",
        ),
        (
            "    - paths: [/spec/replicas]\n      target:\n        labelSelector: 'app in web'\n",
            "lockgate.yaml:11: Sync/web: spec.ignore[0].target.labelSelector: 'app in web': "
            "expected '(' after in or notin",
        ),
        ("    - paths: []\n", "lockgate.yaml:9: Sync/web: spec.ignore[0].paths: name at least one field"),
        ("    - target: {kind: Deployment}\n", "spec.ignore[0].paths: required field is missing"),
    ],
)
def test_a_bad_rule_is_refused_at_load_naming_file_line_and_field(rules: str, expected: str) -> None:
    with pytest.raises(UsageError) as caught:
        config.parse((HEAD + "  ignore:\n" + rules).encode(), "lockgate.yaml")
    assert expected in caught.value.message, caught.value.message


def test_an_unknown_mode_is_refused_with_the_choices() -> None:
    with pytest.raises(UsageError) as caught:
        config.parse((HEAD + "  driftDetection: {mode: correct}\n").encode(), "lockgate.yaml")
    assert "lockgate.yaml:8: Sync/web: spec.driftDetection.mode: expected one of enabled, warn, disabled" in (
        caught.value.message
    )
