"""Normalisation, drift and field changes: Flux's rules, readable paths, Secrets masked."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from lockgate.diff import fields
from lockgate.diff.fields import ABSENT, FieldChange
from lockgate.diff.normalize import normalise
from lockgate.diff.secret_values import SecretValues


def svc(ports: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", **meta},
        "spec": {"ports": ports},
    }


def deployment(*containers: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "n"},
        "spec": {"template": {"spec": {"containers": list(containers)}}},
    }


def secret(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": data}


@pytest.mark.parametrize(
    ("name", "live", "desired", "drifted"),
    [
        ("defaultProtocolTCP", svc([{"port": 80, "protocol": "TCP"}]), svc([{"port": 80}]), False),
        ("portChanged", svc([{"port": 80, "protocol": "TCP"}]), svc([{"port": 81}]), True),
        (
            "serverMetadataIgnored",
            svc([{"port": 80}], resourceVersion="5", uid="u", managedFields=[{}], creationTimestamp="t"),
            svc([{"port": 80}]),
            False,
        ),
        ("labelAdded", svc([{"port": 80}]), svc([{"port": 80}], labels={"a": "b"}), True),
        (
            "statusIgnored",
            {**svc([{"port": 80}]), "status": {"loadBalancer": {}}},
            svc([{"port": 80}]),
            False,
        ),
        (
            "stringDataFoldedIntoData",
            secret(p="c2VjcmV0"),
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"p": "secret"}},
            False,
        ),
        (
            "containerPortDefaultsToTCP",
            deployment({"name": "web", "ports": [{"containerPort": 80, "protocol": "TCP"}]}),
            deployment({"name": "web", "ports": [{"containerPort": 80}]}),
            False,
        ),
    ],
)
def test_drift(name: str, live: dict[str, Any], desired: dict[str, Any], drifted: bool) -> None:
    assert fields.is_drifted(live, desired) is drifted


def test_normalise_never_changes_its_input() -> None:
    body = deployment({"name": "web", "ports": [{"containerPort": 80}]})
    body["status"] = {"replicas": 1}
    body["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    before = copy.deepcopy(body)
    normalised = normalise(body)
    assert body == before
    assert normalised["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] == "TCP"
    assert "status" not in normalised and "annotations" not in normalised["metadata"]


def test_field_changes_are_readable_paths() -> None:
    live = {
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "1", "app.kubernetes.io/name": "x"}},
        "data": {"k": "1", "gone": "x"},
    }
    desired = {
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "2", "app.kubernetes.io/name": "y"}},
        "data": {"k": "2"},
    }
    assert [str(c) for c in fields.field_changes(live, desired)] == [
        'metadata.labels.a: "1" -> "2"',
        'metadata.labels["app.kubernetes.io/name"]: "x" -> "y"',
        'data.gone: "x" -> <absent>',
        'data.k: "1" -> "2"',
    ]


def test_named_list_items_are_matched_by_name_not_position() -> None:
    before = deployment({"name": "web", "image": "web:1"}, {"name": "side", "image": "side:1"})
    after = deployment(
        {"name": "init", "image": "init:1"},
        {"name": "web", "image": "web:2"},
        {"name": "side", "image": "side:1"},
    )
    changes = {c.path: (c.before, c.after) for c in fields.field_changes(before, after)}
    assert changes == {
        "spec.template.spec.containers[name=init]": (ABSENT, {"name": "init", "image": "init:1"}),
        "spec.template.spec.containers[name=web].image": ("web:1", "web:2"),
    }


def test_items_without_a_unique_name_fall_back_to_positions() -> None:
    before = {"kind": "X", "spec": {"args": ["a", "b"], "rules": [{"host": "x"}, {"host": "y"}]}}
    after = {"kind": "X", "spec": {"args": ["a", "c"], "rules": [{"host": "x"}, {"host": "z"}]}}
    assert [c.path for c in fields.field_changes(before, after)] == ["spec.args[1]", "spec.rules[1].host"]


def test_secret_values_are_masked_in_diffs() -> None:
    before = secret(same="c2VjcmV0", changed="b2xk", gone="eA==")
    after = {**secret(same="c2VjcmV0", changed="bmV3", added="eQ=="), "type": "Opaque"}
    changes = fields.field_changes(before, after)
    shown = repr(changes) + "".join(str(c) for c in changes) + json.dumps([c.to_json() for c in changes])
    for value in ("c2VjcmV0", "b2xk", "bmV3", "eA==", "eQ=="):
        assert value not in shown
    by_path = {c.path: (c.before, c.after) for c in changes}
    assert by_path == {
        "data.added": (ABSENT, fields.MASK_AFTER),
        "data.changed": (fields.MASK_BEFORE, fields.MASK_AFTER),
        "data.gone": (fields.MASK_BEFORE, ABSENT),
        "type": (ABSENT, "Opaque"),
    }


def test_a_secret_data_map_added_whole_is_masked_key_by_key() -> None:
    before = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    changes = fields.field_changes(before, secret(token="dG9r"))
    assert [str(c) for c in changes] == ['data.token: <absent> -> "*** (after)"']


def test_absent_is_left_out_of_json_and_null_is_kept() -> None:
    assert FieldChange("a", ABSENT, 1).to_json() == {"path": "a", "after": 1}
    assert FieldChange("a", None, 1).to_json() == {"path": "a", "before": None, "after": 1}
    assert str(FieldChange("a", ABSENT, None)) == "a: <absent> -> null"


def test_long_values_are_cut_in_text() -> None:
    change = FieldChange("data.big", "x" * 500, "y")
    assert len(str(change)) < 160 and str(change).endswith('-> "y"')


def test_a_map_of_plain_values_that_appears_reads_key_by_key() -> None:
    before = {"kind": "ConfigMap", "metadata": {"name": "c"}}
    after = {"kind": "ConfigMap", "metadata": {"name": "c", "labels": {"team": "web"}}, "data": {"k": "v"}}
    assert [str(c) for c in fields.field_changes(before, after)] == [
        'metadata.labels.team: <absent> -> "web"',
        'data.k: <absent> -> "v"',
    ]


# -- secret by origin (issue 21 item 5): masked whatever the kind ------------------------------


def _env(value: str, *, url: str = "") -> dict[str, Any]:
    env = [{"name": "PASSWORD", "value": value}, {"name": "LEVEL", "value": "info"}]
    if url:
        env.append({"name": "DB_URL", "value": url})
    return deployment({"name": "app", "image": "app:1", "env": env})


def test_a_value_secret_by_origin_is_masked_in_any_kind_and_still_shows_it_changed() -> None:
    secret = SecretValues.of(["n3w-pa55", "postgres://u:n3w-pa55@db"])
    before = _env("0ld-pa55", url="postgres://u:0ld-pa55@db")
    after = _env("n3w-pa55", url="postgres://u:n3w-pa55@db")
    after["spec"]["template"]["spec"]["containers"][0]["env"][1]["value"] = "debug"
    changes = fields.field_changes(before, after, secret=secret)
    containers = "spec.template.spec.containers[name=app]"
    assert changes == (
        FieldChange(f"{containers}.env[name=PASSWORD].value", fields.MASK_BEFORE, fields.MASK_AFTER),
        FieldChange(f"{containers}.env[name=LEVEL].value", "info", "debug"),
        FieldChange(f"{containers}.env[name=DB_URL].value", fields.MASK_BEFORE, fields.MASK_AFTER),
    )
    text = json.dumps([c.to_json() for c in changes]) + "".join(str(c) for c in changes)
    assert "pa55" not in text


def test_a_secret_that_only_the_live_object_still_holds_is_masked_by_the_shared_strings() -> None:
    """The manifest stopped substituting the Secret's value: the old value is still one of the pass's."""
    secret = SecretValues().sharing(frozenset({"still-the-secret-1"}))
    before = _env("still-the-secret-1", url="postgres://u:still-the-secret-1@db")
    after = _env("plain", url="postgres://u:plain@db")
    changes = fields.field_changes(before, after, secret=secret)
    assert [(c.before, c.after) for c in changes] == [(fields.MASK_BEFORE, fields.MASK_AFTER)] * 2
    assert "still-the" not in json.dumps([c.to_json() for c in changes])


def test_a_list_item_holding_a_secret_is_masked_whole_and_absent_stays_absent() -> None:
    secret = SecretValues.of(["pw-1"])
    before = deployment({"name": "app", "image": "app:1"})
    after = deployment({"name": "app", "image": "app:1"}, {"name": "side", "image": "s:1", "args": ["pw-1"]})
    (change,) = fields.field_changes(before, after, secret=secret)
    assert change == FieldChange("spec.template.spec.containers[name=side]", ABSENT, fields.MASK_AFTER)


def test_without_secret_values_nothing_but_secrets_is_masked() -> None:
    """``lockgate diff`` (CI) knows no secret values: v1 Secrets by kind, the rest in clear."""
    changes = fields.field_changes(_env("a"), _env("b"))
    assert [(c.before, c.after) for c in changes] == [("a", "b")]


def test_numbers_and_booleans_from_a_secret_origin_are_masked_too() -> None:
    secret = SecretValues.of([5, True])
    before = {"apiVersion": "x/v1", "kind": "Db", "metadata": {"name": "d"}, "spec": {"n": 3, "on": False}}
    after = {"apiVersion": "x/v1", "kind": "Db", "metadata": {"name": "d"}, "spec": {"n": 5, "on": True}}
    changes = fields.field_changes(before, after, secret=secret)
    assert [(c.before, c.after) for c in changes] == [(fields.MASK_BEFORE, fields.MASK_AFTER)] * 2
