"""``lockgate.diff.quantity``: two spellings of one quantity are no change, where a quantity lives."""

from __future__ import annotations

from fractions import Fraction

import pytest

from lockgate.diff import fields, quantity


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1k", Fraction(1000)),
        ("1000", Fraction(1000)),
        (1000, Fraction(1000)),
        ("10m", Fraction(1, 100)),
        ("1Gi", Fraction(2**30)),
        ("1024Mi", Fraction(2**30)),
        ("1e3", Fraction(1000)),
        ("0.5", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("web", None),
        ("1 k", None),
        (True, None),
        (None, None),
    ],
)
def test_values(text: object, expected: Fraction | None) -> None:
    assert quantity.value(text) == expected


def _deployment(cpu: object, memory: object = "64Mi", env: str = "1000") -> dict[str, object]:
    container = {
        "name": "web",
        "env": [{"name": "N", "value": env}],
        "resources": {"limits": {"cpu": cpu, "memory": memory}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "app"},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


def test_a_quantity_the_server_respells_is_no_change_and_no_drift() -> None:
    live, desired = _deployment("1k", "1Gi"), _deployment(1000, "1024Mi")
    assert not fields.is_drifted(live, desired)
    assert fields.field_changes(live, desired) == ()


def test_only_quantity_fields_compare_by_value() -> None:
    # an environment variable's "1k" is not its "1000": text, not a quantity
    live, desired = _deployment("1k", env="1k"), _deployment("1k", env="1000")
    assert fields.is_drifted(live, desired)
    (change,) = fields.field_changes(live, desired)
    assert change.path == "spec.template.spec.containers[name=web].env[name=N].value"


def test_the_manifest_spelling_is_shown_not_the_servers() -> None:
    """The server answers cpu "1k" for the manifest's 1000: the change reads 10m -> 1000."""
    live, answered, manifest = _deployment("10m"), _deployment("1k"), _deployment(1000)
    shown = quantity.spelled_as(answered, manifest)
    (change,) = fields.field_changes(live, shown)
    assert str(change) == 'spec.template.spec.containers[name=web].resources.limits.cpu: "10m" -> 1000'
    assert answered == _deployment("1k")  # the answer itself is left as it was
