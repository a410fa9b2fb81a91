"""Prune planning: never delete what is not ours or is protected; refuse mass prunes."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.manifests import ObjectKey
from runner.plan import applyset, prune_plan
from runner.ssa import prune

SET = "applyset-ours-v1"


def key(name: str, kind: str = "ConfigMap") -> ObjectKey:
    return ObjectKey("", kind, "ns" if kind != "Namespace" else "", name)


def live(set_id: str = SET, **annotations: str) -> dict[str, Any]:
    return {"metadata": {"labels": {applyset.PART_OF_LABEL: set_id}, "annotations": annotations}}


def test_plans_deletions_in_reverse_order_and_keeps_the_protected() -> None:
    previous = [key("ns", "Namespace"), key("a"), key("b"), key("c"), key("d"), key("e"), key("f")]
    desired = [key("a"), key("b"), key("c")]
    plan = prune_plan.plan(
        previous,
        desired,
        {
            key("ns", "Namespace"): live(),
            key("d"): live(),
            key("e"): live(**{"kustomize.toolkit.fluxcd.io/prune": "disabled"}),
            key("f"): live(set_id="applyset-other-v1"),
        },
        set_id=SET,
        options=prune_plan.PruneOptions(max_share=0.9),
    )
    assert plan.delete == [key("d"), key("ns", "Namespace")]
    assert plan.kept == [
        (key("e"), "pruning disabled by annotation; orphaned (set label removed)"),
        (key("f"), "not labelled as a member of this set"),
    ]
    assert plan.orphan == [key("e")]
    assert plan.gone == []


def test_already_gone_objects_are_not_deleted() -> None:
    plan = prune_plan.plan([key("a"), key("b"), key("c")], [key("a"), key("b")], {key("c"): None}, set_id=SET)
    assert plan.delete == [] and plan.gone == [key("c")]


@pytest.mark.parametrize(
    ("previous", "desired", "allowed"),
    [
        (4, 2, True),  # half is not more than half
        (4, 1, False),  # three quarters
        (1, 0, False),  # every object
        (10, 9, True),
    ],
)
def test_mass_prune_guard(previous: int, desired: int, allowed: bool) -> None:
    before = [key(f"c{i}") for i in range(previous)]
    after = before[:desired]
    lives = {k: live() for k in before}
    if allowed:
        prune_plan.plan(before, after, lives, set_id=SET)
        prune_plan.check_share(before, after, prune_plan.PruneOptions())
    else:
        with pytest.raises(prune_plan.MassPruneError, match="--allow-mass-prune"):
            prune_plan.plan(before, after, lives, set_id=SET)
        with pytest.raises(prune_plan.MassPruneError):
            prune_plan.check_share(before, after, prune_plan.PruneOptions())
        options = prune_plan.PruneOptions(allow_mass_prune=True)
        assert (
            len(prune_plan.plan(before, after, lives, set_id=SET, options=options).delete)
            == previous - desired
        )


def test_the_orphan_patch_removes_only_our_label() -> None:
    path = "/metadata/labels/applyset.kubernetes.io~1part-of"
    assert prune.orphan_patch(SET) == [
        {"op": "test", "path": path, "value": SET},
        {"op": "remove", "path": path},
    ]


def test_released_members_are_orphaned_never_deleted() -> None:
    previous = [key("a"), key("ignored"), key("foreign")]
    plan = prune_plan.plan(
        previous,
        [key("a"), key("ignored"), key("foreign")],
        {key("ignored"): live(), key("foreign"): live(set_id="applyset-other-v1")},
        set_id=SET,
        released=[key("ignored"), key("foreign")],
    )
    assert (plan.delete, plan.kept, plan.orphan) == ([], [], [key("ignored")])


def crd(name: str, **annotations: str) -> tuple[ObjectKey, dict[str, Any]]:
    body = live(**annotations)
    body["kind"] = "CustomResourceDefinition"
    return ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", "", name), body


@pytest.mark.parametrize(
    ("prune_crds", "deleted"), [(False, False), (True, True)], ids=["kept-as-helm-keeps", "pruneCRDs"]
)
def test_a_crd_helm_keeps_is_pruned_only_when_the_sync_opts_in(prune_crds: bool, deleted: bool) -> None:
    keep = {"helm.sh/resource-policy": "keep"}
    chart_crd, chart_body = crd("widgets.example.com", **keep)
    frozen, frozen_body = crd("frozen.example.com", **keep, **{"lockgate.dev/prune": "disabled"})
    pvc = key("data", "PersistentVolumeClaim")
    previous = [key("a"), chart_crd, frozen, pvc] + [key(f"k{i}") for i in range(6)]
    plan = prune_plan.plan(
        previous,
        [key("a")] + [key(f"k{i}") for i in range(6)],
        {chart_crd: chart_body, frozen: frozen_body, pvc: live(**keep)},
        set_id=SET,
        options=prune_plan.PruneOptions(prune_crds=prune_crds),
    )
    # pruneCRDs lifts Helm's keep on CRDs only: never prune: disabled, never another kind
    assert plan.delete == ([chart_crd] if deleted else [])
    kept = dict(plan.kept)
    assert kept[pvc].startswith("kept by Helm's helm.sh/resource-policy: keep")
    assert kept[frozen] == "pruning disabled by annotation; orphaned (set label removed)"
    assert (chart_crd in kept) is not deleted
    assert set(plan.orphan) == ({frozen, pvc} if deleted else {frozen, pvc, chart_crd})
