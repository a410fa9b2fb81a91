"""Annotations: lockgate's keys and Flux's equivalents, case-insensitive values."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.errors import RenderError
from runner.plan.policy import ObjectPolicy, SSAMode, policy_of


def obj(annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "x", "annotations": annotations or {}, "labels": labels or {}}}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (obj(), ObjectPolicy()),
        (obj({"lockgate.dev/ssa": "IfNotPresent"}), ObjectPolicy(ssa=SSAMode.IF_NOT_PRESENT)),
        (obj({"kustomize.toolkit.fluxcd.io/ssa": "merge"}), ObjectPolicy(ssa=SSAMode.MERGE)),
        (obj(labels={"kustomize.toolkit.fluxcd.io/ssa": "IGNORE"}), ObjectPolicy(ssa=SSAMode.IGNORE)),
        (obj({"lockgate.dev/force": "Enabled"}), ObjectPolicy(force=True)),
        (obj({"kustomize.toolkit.fluxcd.io/prune": "disabled"}), ObjectPolicy(prune=False)),
        (obj({"lockgate.dev/prune": "disabled"}), ObjectPolicy(prune=False)),
        (obj({"kustomize.toolkit.fluxcd.io/reconcile": "disabled"}), ObjectPolicy(reconcile=False)),
        (
            obj({"lockgate.dev/ssa": "Merge", "kustomize.toolkit.fluxcd.io/ssa": "Ignore"}),
            ObjectPolicy(ssa=SSAMode.MERGE),
        ),
    ],
)
def test_policy_of(body: dict[str, Any], expected: ObjectPolicy) -> None:
    assert policy_of(body) == expected


def test_ignore_is_neither_applied_nor_pruned() -> None:
    ignored = policy_of(obj({"lockgate.dev/ssa": "Ignore"}))
    assert not ignored.applies and not ignored.prunable


def test_unknown_ssa_value_names_the_object() -> None:
    with pytest.raises(RenderError, match=r"ConfigMap/x.*unknown ssa annotation 'sometimes'"):
        policy_of(obj({"lockgate.dev/ssa": "sometimes"}), where="ConfigMap/x")
