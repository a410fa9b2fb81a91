"""``lockgate adopt``'s decisions: the Kustomization's parents, suspension, the digest, refusals."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.diff.changeset import Action, Entry
from lockgate.diff.fields import ABSENT, FieldChange
from lockgate.manifests import ObjectKey
from runner.plan import adoption
from runner.plan.inventory import Member

DIGEST = "sha256:" + "c" * 64


def ks(
    name: str,
    namespace: str = "flux-system",
    *,
    suspend: bool = False,
    entries: tuple[str, ...] = (),
    owner: tuple[str, str] | None = None,
    revision: str = f"latest@{DIGEST}",
) -> dict[str, Any]:
    labels = {adoption.OWNER_NAME: owner[1], adoption.OWNER_NAMESPACE: owner[0]} if owner else {}
    return {
        "apiVersion": adoption.API_VERSION,
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"suspend": suspend},
        "status": {
            "lastAppliedRevision": revision,
            "inventory": {"entries": [{"id": e, "v": "v1"} for e in entries]},
        },
    }


def _by_ref(*objs: dict[str, Any]) -> dict[adoption.Ref, dict[str, Any]]:
    return {adoption.ref_of(o): o for o in objs}


def test_flux_s_inventory_is_lockgate_s_members() -> None:
    members = adoption.inventory_of(ks("app", entries=("apps_web_apps_Deployment", "_apps__Namespace")))
    assert members == {
        ObjectKey("apps", "Deployment", "apps", "web"): Member(
            ObjectKey("apps", "Deployment", "apps", "web"), "v1"
        ),
        ObjectKey("", "Namespace", "", "apps"): Member(ObjectKey("", "Namespace", "", "apps"), "v1"),
    }


@pytest.mark.parametrize(
    ("revision", "digest"),
    [(f"latest@{DIGEST}", DIGEST), (DIGEST, DIGEST), ("v1.2.0@sha256:short", None), ("", None)],
)
def test_the_digest_flux_applied(revision: str, digest: str | None) -> None:
    assert adoption.applied_digest(ks("app", revision=revision)) == digest


@pytest.mark.parametrize(
    ("url", "pinned"),
    [
        ("oci://registry:5000/apps/web:latest", f"oci://registry:5000/apps/web@{DIGEST}"),
        ("oci://registry:5000/apps/web", f"oci://registry:5000/apps/web@{DIGEST}"),
        ("oci://r.example.com/web@sha256:" + "a" * 64, f"oci://r.example.com/web@{DIGEST}"),
        ("oci://r.example.com/web:v1@sha256:" + "a" * 64, f"oci://r.example.com/web@{DIGEST}"),
        ("oci-layout:///mirror/web:v1", f"oci-layout:///mirror/web@{DIGEST}"),
    ],
)
def test_the_sync_is_pinned_to_flux_s_digest(url: str, pinned: str) -> None:
    assert adoption.pinned_url(url, DIGEST) == pinned


def test_parents_are_found_by_owner_labels_and_by_inventories() -> None:
    child = ks("app", owner=("flux-system", "flux-system"))
    root = ks("flux-system", entries=("flux-system_app_kustomize.toolkit.fluxcd.io_Kustomization",))
    other = ks("infra", entries=("flux-system_app_kustomize.toolkit.fluxcd.io_Kustomization",))
    assert [str(p) for p in adoption.parents(child, [child, root, other])] == [
        "Kustomization flux-system/flux-system",
        "Kustomization flux-system/infra",
    ]


def test_only_a_suspended_kustomization_under_suspended_parents_is_adopted() -> None:
    child = ks("app", suspend=True, owner=("flux-system", "apps"))
    middle = ks("apps", suspend=True, owner=("flux-system", "flux-system"))
    root = ks("flux-system", suspend=False)
    problems = adoption.suspension_problems(child, _by_ref(child, middle, root))
    assert len(problems) == 1
    assert problems[0].startswith(
        "Kustomization flux-system/flux-system, which applies Kustomization flux-system/app"
    )
    assert "flux suspend kustomization flux-system -n flux-system" in problems[0]
    root["spec"]["suspend"] = True
    assert adoption.suspension_problems(child, _by_ref(child, middle, root)) == []
    child["spec"]["suspend"] = False
    (alone,) = adoption.suspension_problems(child, _by_ref(child, middle, root))
    assert "flux suspend kustomization app -n flux-system" in alone


def test_a_parent_gone_already_is_no_problem() -> None:
    child = ks("app", suspend=True, owner=("flux-system", "deleted"))
    assert adoption.suspension_problems(child, _by_ref(child)) == []


WEB = ObjectKey("apps", "Deployment", "apps", "web")
CM = ObjectKey("", "ConfigMap", "apps", "cfg")
REF = adoption.Ref("flux-system", "app")


def _flux(*keys: ObjectKey) -> dict[ObjectKey, Member]:
    return {k: Member(k, "v1") for k in keys}


def test_ownership_changes_alone_are_adopted() -> None:
    labels = [
        FieldChange('metadata.labels["kustomize.toolkit.fluxcd.io/name"]', "app", ABSENT),
        FieldChange('metadata.labels["kustomize.toolkit.fluxcd.io/namespace"]', "flux-system", ABSENT),
        FieldChange('metadata.labels["applyset.kubernetes.io/part-of"]', ABSENT, "applyset-x-v1"),
    ]
    # the Deployment controller's annotation, written between the read and the dry run
    raced = FieldChange('metadata.annotations["deployment.kubernetes.io/revision"]', ABSENT, "1")
    entries = [Entry(WEB, Action.CONFIGURED, changes=(*labels, raced)), Entry(CM, Action.UNCHANGED)]
    assert adoption.refusals(entries, [WEB, CM], _flux(WEB, CM), REF) == []


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (Entry(WEB, Action.CREATED), "would be created"),
        (Entry(WEB, Action.CONFIGURED, "would be recreated (immutable field changed)"), "would be recreated"),
        (
            Entry(WEB, Action.CONFIGURED, changes=(FieldChange("spec.replicas", 2, 3),)),
            "would change what runs (the rendering differs from Flux's): spec.replicas: 2 -> 3",
        ),
        (
            Entry(WEB, Action.CONFIGURED, changes=(FieldChange('metadata.annotations["a"]', "1", ABSENT),)),
            'would change what runs (the rendering differs from Flux\'s): metadata.annotations["a"]',
        ),
    ],
)
def test_what_would_run_differently_is_refused(entry: Entry, why: str) -> None:
    (refusal,) = adoption.refusals([entry], [WEB], _flux(WEB), REF)
    assert refusal.key == WEB and why in refusal.why


def test_the_two_sets_must_be_the_same() -> None:
    entries = [Entry(WEB, Action.UNCHANGED)]
    extra = adoption.refusals(entries, [WEB], _flux(WEB, CM), REF)
    assert [str(r) for r in extra] == [
        f"{CM}: in the inventory of Kustomization flux-system/app but not rendered by lockgate from the "
        "revision Flux applied"
    ]
    foreign = adoption.refusals([*entries, Entry(CM, Action.UNCHANGED)], [WEB, CM], _flux(WEB), REF)
    assert [r.key for r in foreign] == [CM] and "another owner's object" in foreign[0].why
