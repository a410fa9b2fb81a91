"""Deleting a sync: each policy's fate for its members, the guard, and the record on the inventory."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.manifests import ObjectKey
from runner.plan import applyset, deletion
from runner.plan.deletion import Policy, Recorded
from runner.plan.inventory import Inventory, from_secret

SET = "applyset-ours-v1"


def key(name: str, kind: str = "ConfigMap") -> ObjectKey:
    return ObjectKey("", kind, "" if kind == "Namespace" else "ns", name)


def live(set_id: str = SET, **annotations: str) -> dict[str, Any]:
    labels = {applyset.PART_OF_LABEL: set_id} if set_id else {}
    return {"metadata": {"labels": labels, "annotations": annotations}}


@pytest.mark.parametrize(
    ("recorded", "deletes"),
    [
        (Recorded(Policy.MIRROR_PRUNE, prune=True), True),
        (Recorded(Policy.MIRROR_PRUNE, prune=False), False),
        (Recorded(Policy.DELETE, prune=False), True),
        (Recorded(Policy.WAIT_FOR_TERMINATION), True),
        (Recorded(Policy.ORPHAN, prune=True), False),
    ],
    ids=["mirror-prune-true", "mirror-prune-false", "delete", "wait", "orphan"],
)
def test_each_policy_says_whether_the_objects_go(recorded: Recorded, deletes: bool) -> None:
    assert recorded.deletes is deletes


def test_deleting_keeps_the_protected_the_foreign_and_the_unlabelled_in_reverse_order() -> None:
    members = [key("ns", "Namespace"), key("web", "Deployment"), key("a"), key("keep"), key("b"), key("c")]
    found = {
        key("ns", "Namespace"): live(),
        key("web", "Deployment"): live(),
        key("a"): live(),
        key("keep"): live(**{"kustomize.toolkit.fluxcd.io/prune": "disabled"}),
        key("b"): live(set_id="applyset-theirs-v1"),
        key("c"): live(set_id=""),
    }
    plan = deletion.plan(members, found, set_id=SET, deleting=True)
    # workloads before their config, the Namespace last
    assert plan.delete == [key("web", "Deployment"), key("a"), key("ns", "Namespace")]
    assert plan.orphan == [key("keep")]
    assert plan.foreign == {key("b"): "applyset-theirs-v1"}
    assert [k for k, _ in plan.kept] == [key("keep"), key("b"), key("c")]
    assert plan.gone == []


def test_reconcile_disabled_and_ssa_ignore_are_kept_as_flux_excludes_them() -> None:
    members = [key("r"), key("i")]
    found = {
        key("r"): live(**{"lockgate.dev/reconcile": "disabled"}),
        key("i"): live(**{"kustomize.toolkit.fluxcd.io/ssa": "Ignore"}),
    }
    plan = deletion.plan(members, found, set_id=SET, deleting=True)
    assert plan.delete == [] and plan.orphan == [key("r"), key("i")]


def test_orphaning_removes_our_label_from_every_member_and_deletes_nothing() -> None:
    members = [key("a"), key("b"), key("gone")]
    found = {key("a"): live(), key("b"): live(), key("gone"): None}
    plan = deletion.plan(members, found, set_id=SET, deleting=False, why_not="deletionPolicy Orphan")
    assert plan.delete == [] and plan.orphan == [key("a"), key("b")] and plan.gone == [key("gone")]
    assert plan.kept[0] == (key("a"), "orphaned (set label removed): deletionPolicy Orphan")


@pytest.mark.parametrize(
    ("recorded", "allow", "refused"),
    [
        (Recorded(Policy.MIRROR_PRUNE, prune=True), False, True),
        (Recorded(Policy.MIRROR_PRUNE, prune=True), True, False),
        (Recorded(Policy.MIRROR_PRUNE, prune=True, allow_mass_prune=True), False, False),
        (Recorded(Policy.DELETE), False, False),
        (Recorded(Policy.WAIT_FOR_TERMINATION), False, False),
    ],
    ids=["default-refused", "flag", "allowMassPrune", "explicit-delete", "explicit-wait"],
)
def test_the_guard_needs_an_explicit_policy_or_an_allowance(
    recorded: Recorded, allow: bool, refused: bool
) -> None:
    plan = deletion.plan(
        [key("a"), key("b")], {key("a"): live(), key("b"): live()}, set_id=SET, deleting=True
    )
    if refused:
        with pytest.raises(deletion.DeletionRefused) as caught:
            deletion.check("web", plan, 2, recorded, allow_mass_prune=allow)
        message = caught.value.message
        assert "refusing to delete every object (2) of sync web" in message
        assert "deletionPolicy: Delete" in message and "lockgate delete web --allow-mass-prune" in message
        assert caught.value.exit_code == 5
    else:
        deletion.check("web", plan, 2, recorded, allow_mass_prune=allow)


def test_the_guard_lets_a_share_through_as_for_a_pass() -> None:
    # half the members were gone already (a deletion resumed, or objects deleted by hand)
    members = [key("a"), key("b"), key("c"), key("d")]
    plan = deletion.plan(members, {key("a"): live(), key("b"): live()}, set_id=SET, deleting=True)
    deletion.check("web", plan, 4, Recorded(Policy.MIRROR_PRUNE, prune=True), allow_mass_prune=False)


def test_the_record_round_trips_through_the_inventory_and_reads_leniently() -> None:
    recorded = Recorded(Policy.WAIT_FOR_TERMINATION, prune=True, timeout=42.0, service_account_name="apply")
    inventory = Inventory(name="web", namespace="runner", deletion=recorded, served_by="lockgate-system")
    back = from_secret(inventory.body(), "web", "runner")
    assert back.deletion == recorded and back.served_by == "lockgate-system"
    assert from_secret(Inventory(name="web", namespace="runner").body(), "web", "runner").deletion is None
    assert Recorded.from_json({"policy": "Shred"}) == Recorded(Policy.ORPHAN)  # deletes nothing
    assert Recorded.from_json({"timeout": -1, "maxPruneShare": 7}) == Recorded()


def test_a_crd_helm_keeps_goes_with_the_sync_only_when_it_recorded_prune_crds() -> None:
    crd = ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets.example.com")
    body = {**live(**{"helm.sh/resource-policy": "keep"}), "kind": "CustomResourceDefinition"}
    kept = deletion.plan([crd, key("a")], {crd: body, key("a"): live()}, set_id=SET, deleting=True)
    assert kept.delete == [key("a")] and kept.orphan == [crd]
    assert dict(kept.kept)[crd].startswith("kept by Helm's helm.sh/resource-policy: keep")
    lifted = deletion.plan(
        [crd, key("a")], {crd: body, key("a"): live()}, set_id=SET, deleting=True, prune_crds=True
    )
    assert set(lifted.delete) == {crd, key("a")} and lifted.orphan == []
    recorded = Recorded(Policy.DELETE, prune_crds=True)
    assert Recorded.from_json(recorded.to_json()) == recorded
