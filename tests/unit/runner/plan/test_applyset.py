"""The ApplySet ID is kubectl's, byte for byte; the parent's annotations follow the standard."""

from __future__ import annotations

from lockgate.manifests import ObjectKey
from runner.plan import applyset


def test_id_matches_kubectls_documented_example() -> None:
    assert (
        applyset.applyset_id("my-set", "default") == "applyset-kdySOVBWs584aaOTmku9Ul1xDuN7LXBjs-R96jQcisk-v1"
    )


def test_parent_metadata_lists_group_kinds_and_other_namespaces() -> None:
    members = [
        ObjectKey("apps", "Deployment", "app", "web"),
        ObjectKey("", "ConfigMap", "app", "cfg"),
        ObjectKey("", "ConfigMap", "lockgate-system", "x"),
        ObjectKey("", "Namespace", "", "app"),
    ]
    labels, annotations = applyset.parent_metadata("lockgate-web", "lockgate-system", members)
    assert labels == {applyset.ID_LABEL: applyset.applyset_id("lockgate-web", "lockgate-system")}
    assert annotations[applyset.GROUP_KINDS_ANNOTATION] == "ConfigMap,Deployment.apps,Namespace"
    assert annotations[applyset.NAMESPACES_ANNOTATION] == "app"
    assert annotations[applyset.TOOLING_ANNOTATION].startswith("lockgate/")


def test_membership_is_read_from_the_part_of_label() -> None:
    body = {"metadata": {"labels": {applyset.PART_OF_LABEL: "applyset-a-v1"}}}
    assert applyset.is_member(body, "applyset-a-v1")
    assert not applyset.is_member(body, "applyset-b-v1")
    assert not applyset.is_member({"metadata": {}}, "applyset-a-v1")
