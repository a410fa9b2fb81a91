"""runner.pipeline.substitute, the pure half: one object through YAML, envsubst and back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lockgate.errors import RenderError, UsageError
from lockgate.manifests import K8sObject
from runner.pipeline import config, substitute


def _obj(data: dict[str, Any], **metadata: Any) -> K8sObject:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "app", "namespace": "team", **metadata},
        "data": data,
    }
    return K8sObject(body=body, file="a.yaml", line=1)


def test_substitutes_every_string_of_the_object() -> None:
    obj = substitute.substitute_object(
        _obj({"a": "${A}", "b": "x-${B:=d}"}, labels={"l": "${A}"}), {"A": "1v"}
    )
    assert obj.body["data"] == {"a": "1v", "b": "x-d"}
    assert obj.body["metadata"]["labels"] == {"l": "1v"}
    assert obj.origin == "a.yaml:1"


def test_values_are_parsed_again_as_flux_does() -> None:
    obj = substitute.substitute_object(_obj({"n": "${N}"}), {"N": "3"})
    assert obj.body["data"] == {"n": 3}


def test_a_long_value_with_spaces_is_not_folded_into_the_template() -> None:
    long = "${X:=" + " ".join(["word"] * 40) + "}"
    obj = substitute.substitute_object(_obj({"a": long}), {"A": ""})
    assert obj.body["data"]["a"] == " ".join(["word"] * 40)


@pytest.mark.parametrize("where", ["labels", "annotations"])
@pytest.mark.parametrize("key", ["kustomize.toolkit.fluxcd.io/substitute", "lockgate.dev/substitute"])
def test_the_opt_out_leaves_the_object(where: str, key: str) -> None:
    obj = _obj({"a": "${UNSET}"}, **{where: {key: "disabled"}})
    assert substitute.substitute_object(obj, {"A": "1"}) is obj


def test_no_variables_at_all_substitutes_nothing() -> None:
    obj = _obj({"a": "${UNSET}"})
    assert substitute.substitute_object(obj, {}) is obj


def test_strategy_always_substitutes_without_variables() -> None:
    assert substitute.substitute_object(_obj({"a": "${X:=d}"}), {}, always=True).body["data"] == {"a": "d"}
    with pytest.raises(RenderError, match='"UNSET"'):
        substitute.substitute_object(_obj({"a": "${UNSET}"}), {}, always=True)


def test_an_undefined_variable_names_the_object_and_the_variable() -> None:
    with pytest.raises(RenderError) as caught:
        substitute.substitute_object(_obj({"a": "${UNSET}"}), {"A": "1"})
    assert caught.value.message == (
        "ConfigMap/team/app (a.yaml:1): postBuild substitution failed: "
        'variable not set (strict mode): "UNSET"'
    )


def test_an_invalid_name_fails_with_fluxs_text() -> None:
    with pytest.raises(RenderError, match=r"'a-b' var name is invalid, must match"):
        substitute.substitute_object(_obj({"a": "x"}), {"a-b": "1"})


def test_the_sync_fields_decode(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: s}\n"
        "spec:\n  url: oci://registry.example.com/x:1\n  interval: 1m\n  verify: {insecureSkip: true}\n"
        "  postBuild:\n    substitute: {A: '1'}\n"
        "    substituteFrom: [{kind: ConfigMap, name: v}, {kind: Secret, name: w, optional: true}]\n"
        "    substituteStrategy: Always\n"
    )
    (options,) = config.load(path).syncs
    assert options.post_build == substitute.PostBuild(
        substitute={"A": "1"},
        substitute_from=(
            substitute.Source("ConfigMap", "v"),
            substitute.Source("Secret", "w", optional=True),
        ),
        always=True,
    )


def test_a_number_in_substitute_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: s}\n"
        "spec:\n  url: oci://registry.example.com/x:1\n  interval: 1m\n  verify: {insecureSkip: true}\n"
        "  postBuild:\n    substitute: {A: 1}\n    substituteFrom: [{kind: Map, name: v}]\n"
    )
    with pytest.raises(UsageError) as caught:
        config.load(path)
    assert "spec.postBuild.substitute.A: expected a string, got a number" in caught.value.message
    assert "expected one of ConfigMap, Secret" in caught.value.message


def test_values_a_secret_variable_went_into_are_marked_on_the_object() -> None:
    obj = substitute.substitute_object(
        _obj(
            {
                "url": "postgres://u:${PW}@db",
                "upper": "${PW^^}",
                "n": "${N}",
                "user": "${USER}",
                "ä": "ö-${PW}",
            }
        ),
        {"PW": "pa55", "N": "7", "USER": "äpp"},
        secret={"PW", "N"},
    )
    assert obj.body["data"] == {
        "url": "postgres://u:pa55@db",
        "upper": "PA55",
        "n": 7,
        "user": "äpp",
        "ä": "ö-pa55",
    }
    assert obj.secret.values == {"postgres://u:pa55@db", "PA55", "7", "ö-pa55"}
    assert obj.secret.holds(7) and not obj.secret.holds("äpp")
