"""``spec.ignore``: JSON pointers, targets, what the drift comparison sees and what is sent."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from runner.plan import applyset, ignore


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("/spec/replicas", ("spec", "replicas")),
        ("/metadata/annotations/example.com~1owner", ("metadata", "annotations", "example.com/owner")),
        ("/data/a~0b", ("data", "a~b")),
        ("/data/~01", ("data", "~1")),  # ~0 first: "~01" is "~1", not "/"
        (
            "/spec/template/spec/containers/0/resources",
            ("spec", "template", "spec", "containers", "0", "resources"),
        ),
        ("/metadata/labels", ("metadata", "labels")),
    ],
)
def test_pointers_unescape_as_rfc_6901_says(text: str, tokens: tuple[str, ...]) -> None:
    assert ignore.pointer(text).tokens == tokens


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("spec/replicas", "is not a JSON pointer: a JSON pointer (RFC 6901) starts with '/'"),
        ("", "is not a JSON pointer"),
        ("$.spec.replicas", "is not a JSON pointer"),
        ("/metadata/annotations/a~2b", "'~' must be followed by 0 or 1"),
        ("/data/~", "'~' must be followed by 0 or 1"),
        ("/spec/containers/-", "'-' (after the last list item) names no field"),
        ("/", "names the object's identity"),
        ("/metadata", "names the object's identity"),
        ("/metadata/name", "names the object's identity"),
        ("/kind", "names the object's identity"),
    ],
)
def test_what_is_not_a_pointer_to_a_field_is_refused_saying_how_to_write_one(text: str, says: str) -> None:
    with pytest.raises(ignore.RuleError, match=None) as caught:
        ignore.pointer(text)
    assert says in str(caught.value)


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "web-1",
        "namespace": "shop",
        "labels": {"team": "a"},
        "annotations": {"owner": "ops"},
    },
}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-1", "namespace": "shop"}}


@pytest.mark.parametrize(
    ("target", "deployment", "configmap"),
    [
        ({}, True, True),
        ({"kind": "Deployment"}, True, False),
        ({"kind": "Deploy"}, False, False),  # matched whole, as Flux anchors it
        ({"kind": "Deploy.*|ConfigMap"}, True, True),
        ({"group": "apps"}, True, False),
        ({"group": ""}, True, True),  # empty: any
        ({"version": "v1"}, True, True),
        ({"name": "web-[0-9]+", "namespace": "shop"}, True, True),
        ({"name": "web"}, False, False),
        ({"label_selector": "team=a"}, True, False),
        ({"label_selector": "team!=a"}, False, True),  # != matches where the label is absent
        ({"annotation_selector": "owner in (ops,sre)"}, True, False),
        ({"kind": "Deployment", "label_selector": "team=b"}, False, False),
    ],
)
def test_targets_match_whole_regexes_and_selectors(
    target: dict[str, str], deployment: bool, configmap: bool
) -> None:
    selected = ignore.Target(**target)
    assert (selected.matches(DEPLOYMENT), selected.matches(CONFIGMAP)) == (deployment, configmap)


@pytest.mark.parametrize(
    ("target", "field", "says"),
    [
        ({"kind": "Deploy(ment"}, "kind", "error parsing regexp: missing closing ): `Deploy(ment`"),
        ({"name": "(?<=a)b"}, "name", "error parsing regexp"),
        ({"label_selector": "team in (a"}, "labelSelector", "expected ',' or ')'"),
        ({"annotation_selector": "a b"}, "annotationSelector", "expected =, ==, !=, in, notin, > or <"),
    ],
)
def test_a_bad_target_is_refused_naming_its_field(target: dict[str, str], field: str, says: str) -> None:
    with pytest.raises(ignore.RuleError) as caught:
        ignore.Target(**target)
    assert caught.value.field == field and says in str(caught.value)


def test_paths_for_an_object_come_from_every_matching_rule_once() -> None:
    replicas, owner = ignore.pointer("/spec/replicas"), ignore.pointer("/metadata/annotations/owner")
    rules = [
        ignore.Rule((replicas,), ignore.Target(kind="Deployment")),
        ignore.Rule((owner, replicas)),
        ignore.Rule((ignore.pointer("/data"),), ignore.Target(kind="ConfigMap")),
    ]
    assert ignore.paths_for(rules, DEPLOYMENT) == (replicas, owner)
    assert [p.text for p in ignore.paths_for(rules, CONFIGMAP)] == [
        "/metadata/annotations/owner",
        "/spec/replicas",
        "/data",
    ]


def test_without_drops_the_paths_and_keeps_the_rest_untouched() -> None:
    body = {
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "a", "resources": {"x": 1}}]}}}
    }
    before = copy.deepcopy(body)
    paths = [ignore.pointer("/spec/replicas"), ignore.pointer("/spec/template/spec/containers/0/resources")]
    assert ignore.without(body, paths) == {"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}}
    assert ignore.without({"spec": {"replicas": 3}}, paths) == {}  # emptied maps go too
    assert body == before
    assert (
        ignore.without(body, [ignore.pointer("/spec/absent/deeper"), ignore.pointer("/spec/replicas/0")])
        == body
    )


# ---- what is sent for an existing object --------------------------------------------
MEMBER = {applyset.PART_OF_LABEL: "applyset-x"}
REPLICAS = ignore.pointer("/spec/replicas")
STAMP = ignore.pointer("/metadata/annotations/policy.example~1tier")
RESOURCES = ignore.pointer("/spec/template/spec/containers/0/resources")


def entry(
    manager: str, fields: dict[str, Any], operation: str = "Apply", subresource: str = ""
) -> dict[str, Any]:
    found = {"manager": manager, "operation": operation, "fieldsV1": fields}
    return found | ({"subresource": subresource} if subresource else {})


def deployment(
    replicas: int, cpu: str, annotations: dict[str, str] | None = None, **managed: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "web", "labels": dict(MEMBER)}
    if annotations:
        metadata["annotations"] = annotations
    if managed:
        metadata["managedFields"] = list(managed.values())
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": cpu}}}]}},
        },
    }


CONTAINER: dict[str, Any] = {
    'k:{"name":"app"}': {".": {}, "f:name": {}, "f:resources": {"f:limits": {"f:cpu": {}}}}
}
OURS = entry(
    "lockgate",
    {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": CONTAINER}}}},
)
OURS_WITHOUT_REPLICAS = entry("lockgate", {"f:spec": {"f:template": {"f:spec": {"f:containers": CONTAINER}}}})
HPA = entry("kube-controller-manager", {"f:spec": {"f:replicas": {}}}, "Update", "scale")


def send(
    body: dict[str, Any], live: dict[str, Any], *paths: ignore.Pointer, takes_over: bool = True
) -> dict[str, Any]:
    return ignore.payload(body, live, paths, manager="lockgate", takes_over=takes_over)


def test_the_hpa_s_replicas_are_not_sent_when_the_hpa_owns_them() -> None:
    desired = deployment(1, "1")
    live = deployment(3, "1", ours=OURS_WITHOUT_REPLICAS, hpa=HPA)
    sent = send(desired, live, REPLICAS)
    assert "replicas" not in sent["spec"] and sent["spec"]["template"] == desired["spec"]["template"]


def test_a_field_only_lockgate_owns_is_sent_with_its_live_value_so_it_is_not_deleted() -> None:
    desired = deployment(1, "1")
    live = deployment(1, "2", ours=OURS)  # a VPA-like Update changed it, lockgate still owns it
    sent = send(desired, live, RESOURCES)
    assert sent["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "2"}}
    assert sent["spec"]["replicas"] == 1


def test_a_field_another_apply_manager_owns_is_left_to_it_even_when_lockgate_owns_it_too() -> None:
    other = entry("vpa-recommender", {"f:spec": {"f:template": {"f:spec": {"f:containers": CONTAINER}}}})
    live = deployment(1, "2", ours=OURS, other=other)
    sent = send(deployment(1, "1"), live, RESOURCES)
    assert "resources" not in sent["spec"]["template"]["spec"]["containers"][0]


def test_a_kubectl_edit_of_an_ignored_field_is_kept_as_the_takeover_makes_it_ours() -> None:
    edit = entry("kubectl-edit", {"f:metadata": {"f:annotations": {"f:policy.example/tier": {}}}}, "Update")
    live = deployment(1, "1", {"policy.example/tier": "gold"}, ours=OURS, edit=edit)
    desired = deployment(1, "1", {"policy.example/tier": "standard"})
    assert send(desired, live, STAMP)["metadata"]["annotations"] == {"policy.example/tier": "gold"}
    # ssa: Merge takes nothing over: kubectl keeps it, lockgate does not send it
    assert "annotations" not in send(desired, live, STAMP, takes_over=False)["metadata"]  # no empty map


def test_a_field_lockgate_sent_and_an_admission_rewrote_is_kept() -> None:
    stamp = entry("lockgate", {"f:metadata": {"f:annotations": {"f:policy.example/tier": {}}}})
    live = deployment(1, "1", {"policy.example/tier": "gold"}, ours=stamp)
    desired = deployment(1, "1", {"policy.example/tier": "standard"})
    assert send(desired, live, STAMP)["metadata"]["annotations"] == {"policy.example/tier": "gold"}


def test_a_field_removed_in_the_cluster_is_not_sent_back() -> None:
    live = deployment(1, "1", ours=OURS)
    del live["spec"]["replicas"]
    assert "replicas" not in send(deployment(2, "1"), live, REPLICAS)["spec"]


def test_an_ignored_field_equal_to_the_live_one_is_sent_unchanged() -> None:
    desired = deployment(3, "1")
    assert send(desired, deployment(3, "1", ours=OURS, hpa=HPA), REPLICAS) == desired


def test_the_member_label_is_always_sent_even_under_an_ignored_labels_map() -> None:
    labels = ignore.pointer("/metadata/labels")
    live = deployment(1, "1", ours=entry("lockgate", {"f:metadata": {"f:labels": {"f:x": {}}}}))
    live["metadata"]["labels"] = {"x": "y"}  # someone took the member label away
    sent = send(deployment(1, "1"), live, labels)
    assert sent["metadata"]["labels"] == {"x": "y", **MEMBER}


def test_an_atomic_field_above_the_path_counts_as_owning_it() -> None:
    selector = ignore.pointer("/spec/selector/matchLabels/app")
    live = deployment(1, "1", ours=entry("lockgate", {"f:spec": {"f:selector": {}}}))
    assert ignore.keeps_ours(live, selector, manager="lockgate", takes_over=True)
    assert not ignore.keeps_ours(live, REPLICAS, manager="lockgate", takes_over=True)


def test_ignored_paths_are_out_of_the_fast_path_and_the_classification() -> None:
    from lockgate.manifests import K8sObject
    from runner.plan import classify, desired

    body = deployment(1, "1")
    del body["metadata"]["labels"]
    obj = K8sObject(body, "app.yaml", 1)
    plain = desired.prepare(obj, "applyset-x")
    ignoring = desired.prepare(
        obj, "applyset-x", [ignore.Rule((REPLICAS,), ignore.Target(kind="Deployment"))]
    )
    assert ignoring.ignored == (REPLICAS,) and ignoring.hash == plain.hash  # what is recorded stays the same
    scaled = deployment(3, "1", ours=OURS_WITHOUT_REPLICAS, hpa=HPA)
    assert not classify.fast_unchanged(plain, scaled, recorded_hash=plain.hash, manager="lockgate")
    assert classify.fast_unchanged(ignoring, scaled, recorded_hash=plain.hash, manager="lockgate")
    found = classify.compare(deployment(3, "1"), deployment(1, "2"), took_over=False, ignored=(REPLICAS,))
    assert [str(c) for c in found.changes] == [
        'spec.template.spec.containers[name=app].resources.limits.cpu: "1" -> "2"'
    ]


def test_without_removes_list_items_from_the_last_and_shares_the_rest() -> None:
    items = [{"name": str(i)} for i in range(12)]
    body = {"spec": {"items": items}, "data": {"big": "x"}}
    paths = [ignore.pointer("/spec/items/9"), ignore.pointer("/spec/items/10")]
    left = ignore.without(body, paths)
    assert [i["name"] for i in left["spec"]["items"]] == ["0", "1", "2", "3", "4", "5", "6", "7", "8", "11"]
    assert left["data"] is body["data"] and len(items) == 12
