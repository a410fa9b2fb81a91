"""The preview's plan of a pass, from two revisions' objects: table-driven, no I/O."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.manifests import K8sObject
from runner.plan import prune_plan
from runner.plan.desired import Desired, prepare
from runner.plan.preview import immutable
from runner.plan.preview.model import HazardKind
from runner.plan.preview.plan import Settings, plan

SET = "applyset-test-v1"


def obj(kind: str, name: str, *, api: str = "v1", ns: str | None = "apps", **fields: Any) -> Desired:
    metadata: dict[str, Any] = {"name": name}
    if ns:
        metadata["namespace"] = ns
    annotations = fields.pop("annotations", None)
    if annotations:
        metadata["annotations"] = annotations
    return prepare(
        K8sObject({"apiVersion": api, "kind": kind, "metadata": metadata, **fields}, "f.yaml", 1), SET
    )


def cm(name: str, **data: str) -> Desired:
    return obj("ConfigMap", name, data=data)


def settings(**changes: Any) -> Settings:
    base: dict[str, Any] = {
        "prune": True,
        "prune_options": prune_plan.PruneOptions(),
        "force": False,
        "set_id": SET,
        "installing": False,
    }
    return Settings(**{**base, **changes})


def actions(planned: Any) -> dict[str, str]:
    return {str(e.key): e.action.value for e in planned.changeset.entries}


def test_creates_configures_prunes_and_leaves_the_unchanged() -> None:
    old = [cm("a", x="1"), cm("b", x="1"), cm("c", x="1")]
    new = [cm("a", x="2"), cm("b", x="1"), cm("d", x="1")]
    planned = plan(old, new, settings())
    assert actions(planned) == {
        "ConfigMap/apps/a": "configured",
        "ConfigMap/apps/b": "unchanged",
        "ConfigMap/apps/d": "created",
        "ConfigMap/apps/c": "deleted",
    }
    (configured,) = [e for e in planned.changeset.entries if e.action.value == "configured"]
    assert [(c.path, c.before, c.after) for c in configured.changes] == [("data.x", "1", "2")]
    assert not planned.refused and not planned.hazards


def test_without_prune_what_leaves_stays_and_is_said() -> None:
    planned = plan([cm("a"), cm("b")], [cm("a")], settings(prune=False))
    assert actions(planned) == {"ConfigMap/apps/a": "unchanged"}
    assert "1 objects leave the artifact and stay in the cluster" in planned.notes[0]


def test_a_prune_above_the_guard_refuses_the_pass() -> None:
    old = [cm(f"c{i}") for i in range(4)]
    planned = plan(old, old[:1], settings())
    assert "refusing to prune 3 of 4 objects" in planned.refused
    assert [h.kind for h in planned.hazards] == [HazardKind.MASS_PRUNE]
    allowed = plan(old, old[:1], settings(prune_options=prune_plan.PruneOptions(allow_mass_prune=True)))
    assert not allowed.refused and list(actions(allowed).values()).count("deleted") == 3


def test_crd_and_namespace_deletions_are_hazards() -> None:
    crd = obj("CustomResourceDefinition", "widgets.example.com", api="apiextensions.k8s.io/v1", ns=None)
    space = obj("Namespace", "team", ns=None)
    keep = [cm(f"k{i}") for i in range(6)]
    planned = plan([crd, space, *keep], keep, settings())
    assert {h.kind for h in planned.hazards} == {HazardKind.CRD_DELETION, HazardKind.NAMESPACE_DELETION}


def selector(app: str) -> dict[str, Any]:
    return {"selector": {"matchLabels": {"app": app}}, "template": {"metadata": {"labels": {"app": app}}}}


@pytest.mark.parametrize(
    ("annotations", "force", "recreated"),
    [({}, False, False), ({"lockgate.dev/force": "enabled"}, False, True), ({}, True, True)],
    ids=["refused", "forced-by-annotation", "forced-by-sync"],
)
def test_an_immutable_change_is_recreated_when_forced_else_refused(
    annotations: dict[str, str], force: bool, recreated: bool
) -> None:
    old = [obj("Deployment", "web", api="apps/v1", spec=selector("web"), annotations=annotations)]
    new = [obj("Deployment", "web", api="apps/v1", spec=selector("api"), annotations=annotations)]
    planned = plan(old, new, settings(force=force))
    (entry,) = planned.changeset.entries
    assert entry.action.value == "configured"
    if recreated:
        assert [h.kind for h in planned.hazards] == [HazardKind.RECREATE] and not planned.refused
    else:
        assert [h.kind for h in planned.hazards] == [HazardKind.IMMUTABLE]
        assert "spec.selector.matchLabels.app" in planned.refused


def test_a_role_ref_is_refused_even_forced_as_a_pass_refuses_it() -> None:
    def binding(role: str) -> Desired:
        ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}
        return obj(
            "RoleBinding",
            "b",
            api="rbac.authorization.k8s.io/v1",
            roleRef=ref,
            annotations={"lockgate.dev/force": "enabled"},
        )

    planned = plan([binding("view")], [binding("edit")], settings())
    assert "does not recreate it even forced" in planned.refused


def test_hooks_run_again_for_a_new_revision_and_waves_are_told() -> None:
    hook = obj("Job", "migrate", api="batch/v1", annotations={"lockgate.dev/hook": "pre-apply"}, spec={})
    first = obj("ConfigMap", "first", annotations={"lockgate.dev/wave": "-1"}, data={})
    planned = plan([hook, first, cm("a")], [hook, first, cm("a")], settings())
    assert [(h.object, h.phases) for h in planned.hooks] == [("Job.batch/apps/migrate", ("pre-apply",))]
    assert planned.waves == ((-1, 1), (0, 1))
    assert {h.kind for h in planned.hazards} == {HazardKind.HOOKS, HazardKind.WAVES}
    # no object changes, yet the pass runs the hook: a new revision runs every hook of its event
    assert all(e.action.value == "unchanged" for e in planned.changeset.entries)


def test_policies_skip_as_a_pass_skips() -> None:
    once = {"lockgate.dev/ssa": "IfNotPresent"}
    ignored = {"lockgate.dev/ssa": "Ignore"}
    old = [obj("ConfigMap", "once", annotations=once, data={"v": "1"}), cm("gone")]
    new = [
        obj("ConfigMap", "once", annotations=once, data={"v": "2"}),
        obj("ConfigMap", "gone", annotations=ignored, data={}),
    ]
    planned = plan(old, new, settings())
    reasons = {str(e.key): (e.action.value, e.reason) for e in planned.changeset.entries}
    assert reasons["ConfigMap/apps/once"] == ("skipped", "exists; ssa: IfNotPresent")
    assert reasons["ConfigMap/apps/gone"] == ("skipped", "ssa: Ignore")


def test_secret_values_are_masked_as_a_pass_masks_them() -> None:
    def secret(value: str) -> Desired:
        return obj("Secret", "db", data={"password": value})

    planned = plan([secret("b2xk")], [secret("bmV3")], settings())
    (entry,) = planned.changeset.entries
    assert [(c.path, c.before, c.after) for c in entry.changes] == [
        ("data.password", "*** (before)", "*** (after)")
    ]


def test_immutable_configmap_data_and_paths_inside_a_prefix() -> None:
    assert immutable.under("spec.selector.matchLabels.app", "spec.selector")
    assert immutable.under("spec.template.spec.containers[name=web].image", "spec.template")
    assert not immutable.under("spec.selectorx", "spec.selector")
    old = obj("ConfigMap", "frozen", data={"v": "1"}, immutable=True)
    new = obj("ConfigMap", "frozen", data={"v": "2"}, immutable=True)
    planned = plan([old], [new], settings(force=True))
    assert [h.kind for h in planned.hazards] == [HazardKind.RECREATE]
