"""A Sync's overlay edits the artifact's kustomization as Flux's generator does; commonMetadata is
set on the built objects; the marker patches say which targeted patch selected nothing."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.manifests import K8sObject
from runner.plan import overlay
from runner.plan.overlay import CommonMetadata, Image, Overlay, Patch, Selector

SMP = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: any}\nspec: {replicas: 3}\n"


def test_the_overlay_is_added_after_the_files_own_fields_as_flux_does() -> None:
    document = {
        "resources": ["app.yaml"],
        "namePrefix": "file-",
        "patches": [{"path": "own.yaml"}],
        "components": ["../own"],
        "images": [
            {"name": "web", "newName": "mirror/web", "newTag": "1.0", "digest": "sha256:old"},
            {"name": "db", "newTag": "5"},
        ],
    }
    spec = Overlay(
        patches=(Patch(SMP, Selector(kind="Deployment", label_selector="tier=web")), Patch(SMP)),
        images=(
            Image("web", new_tag="2.0"),
            Image("db", new_name="mirror/db"),
            Image("cache", digest="sha256:c"),
        ),
        name_prefix="stg-",
        name_suffix="-eu",
        components=("../extra",),
    )
    edited = overlay.edit(document, spec)
    assert edited["resources"] == ["app.yaml"]
    assert (edited["namePrefix"], edited["nameSuffix"]) == ("stg-", "-eu")
    target = {"kind": "Deployment", "labelSelector": "tier=web"}
    assert edited["patches"] == [
        {"path": "own.yaml"},
        overlay._marker(0, Selector(kind="Deployment", label_selector="tier=web")),
        {"patch": SMP, "target": target},
        {"patch": SMP},  # no target: kustomize itself fails when the named object is missing
    ]
    assert edited["components"] == ["../own", "../extra"]
    assert edited["images"] == [
        # newTag and digest are replaced together, so a stale digest cannot win over the new tag
        {"name": "web", "newName": "mirror/web", "newTag": "2.0"},
        {"name": "db", "newTag": "5", "newName": "mirror/db"},
        {"name": "cache", "digest": "sha256:c"},
    ]
    assert document["patches"] == [{"path": "own.yaml"}]  # the input is left as it was


def test_a_patch_that_deletes_gets_no_marker() -> None:
    deleting = Patch(
        "$patch: delete\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", Selector(kind="ConfigMap")
    )
    assert not overlay.marked(deleting)
    assert overlay.edit({}, Overlay(patches=(deleting,)))["patches"] == [
        {"patch": deleting.patch, "target": {"kind": "ConfigMap"}}
    ]


def test_a_generated_kustomization_lists_the_manifests_or_is_a_placeholder_when_there_are_none() -> None:
    assert overlay.generated(["./a.yaml", "./sub"]) == {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["./a.yaml", "./sub"],
    }
    assert overlay.generated([])["namespace"] == "_placeholder"


def _obj(name: str, annotations: dict[str, str] | None = None, **metadata: Any) -> K8sObject:
    meta: dict[str, Any] = {"name": name, **metadata}
    if annotations is not None:
        meta["annotations"] = annotations
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": "b"}}
    return K8sObject(body, "kustomize build .", 1)


def test_markers_are_removed_and_a_targeted_patch_that_selected_nothing_is_named() -> None:
    spec = Overlay(
        patches=(
            Patch(SMP, Selector(kind="ConfigMap")),
            Patch(SMP, Selector(kind="Deployment", name="nothing")),
            Patch(SMP),
        )
    )
    built = [
        _obj("a", {f"{overlay.MARKER}0": "", "kept": "yes"}),
        _obj("b", {f"{overlay.MARKER}0": ""}),
        _obj("c"),
    ]
    cleaned, notes = overlay.unmatched(built, spec)
    assert [o.body["metadata"] for o in cleaned] == [
        {"name": "a", "annotations": {"kept": "yes"}},
        {"name": "b"},
        {"name": "c"},
    ]
    assert notes == [
        "spec.patches[1]: its target {kind: Deployment, name: nothing} selects no object, so it patched "
        "nothing (not an error, as in Flux and kustomize)"
    ]


def test_common_metadata_overwrites_labels_and_annotations_of_every_object_and_nothing_else() -> None:
    deployment = K8sObject(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"team": "file", "app": "web"}},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}},
            },
        },
        "a.yaml",
        1,
    )
    common = CommonMetadata(labels={"team": "platform"}, annotations={"owner": "${not_substituted}"})
    placed, cm = overlay.with_common_metadata([deployment, _obj("c")], common)
    assert placed.body["metadata"] == {
        "name": "web",
        "labels": {"team": "platform", "app": "web"},
        "annotations": {"owner": "${not_substituted}"},
    }
    assert placed.body["spec"] == deployment.body["spec"]
    assert deployment.body["metadata"]["labels"] == {"team": "file", "app": "web"}  # not changed in place
    assert cm.body["metadata"]["labels"] == {"team": "platform"}


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("https://github.com/org/repo//components/x", "is a remote reference"),
        ("github.com/org/repo/components/x", "is a remote reference"),
        ("git@github.com:org/repo", "is a remote reference"),
        ("/etc/components", "is an absolute path"),
        ("file:///etc/components", "is an absolute path"),
        ("../components/tls", ""),
        ("components/tls", ""),
    ],
)
def test_a_component_is_a_local_relative_path_as_flux_requires(path: str, problem: str) -> None:
    found = overlay.component_problem(path)
    assert found.startswith(problem) if problem else found == ""
