"""The drift record: what a pass left, reported once while it stays the same."""

from __future__ import annotations

from lockgate.diff.changeset import Action, ChangeSet, Entry
from lockgate.diff.fields import ABSENT, FieldChange
from lockgate.manifests import ObjectKey
from runner.plan import drift, policy

A = ObjectKey("", "ConfigMap", "shop", "a")
B = ObjectKey("", "ConfigMap", "shop", "b")
EDITED = Entry(
    A, Action.UNCHANGED, drift.NOT_CORRECTED, (FieldChange("data.k", "edited", "1"),), drifted=True
)
DELETED = Entry(B, Action.SKIPPED, drift.NOT_RECREATED, drifted=True)


def test_the_message_names_each_object_and_what_a_correction_would_change() -> None:
    assert drift.message([EDITED, DELETED], revision="v1@sha256:0") == (
        "2 objects drifted from v1@sha256:0; not corrected (driftDetection.mode: warn):\n"
        'ConfigMap/shop/a:\n  data.k: "edited" -> "1"\n'
        "ConfigMap/shop/b: deleted from the cluster"
    )


def test_the_record_is_kept_while_the_drift_is_the_same_and_dropped_without_drift() -> None:
    entries = [Entry(B, Action.UNCHANGED), EDITED]
    first = drift.found(entries, revision="v1", now="2026-01-01T00:00:00Z", before=None)
    assert first is not None and (first.objects, first.time) == (1, "2026-01-01T00:00:00Z")
    assert drift.found(entries, revision="v1", now="2026-01-01T01:00:00Z", before=first) is first
    more = drift.found([*entries, DELETED], revision="v1", now="2026-01-01T02:00:00Z", before=first)
    assert more is not None and more is not first and more.objects == 2
    assert drift.found([Entry(A, Action.UNCHANGED)], revision="v1", now="x", before=first) is None
    assert drift.Record.from_json(first.to_json()) == first
    assert drift.Record.from_json({"time": "x"}) is None


def test_a_changeset_with_drift_says_so_in_its_summary_json_and_table() -> None:
    changeset = ChangeSet([EDITED, DELETED, Entry(ObjectKey("", "ConfigMap", "shop", "c"), Action.UNCHANGED)])
    assert changeset.summary() == "2 unchanged, 1 skipped; 2 drifted, not corrected"
    assert changeset.to_json()["objects"][0]["drifted"] is True
    assert "drifted" not in changeset.to_json()["objects"][2]
    table = changeset.table()
    assert f"ConfigMap/shop/a  unchanged  ({drift.NOT_CORRECTED})" in table
    assert '    data.k: "edited" -> "1"' in table and "ConfigMap/shop/c" not in table
    assert ChangeSet([Entry(A, Action.CREATED)]).summary() == "1 created"
    assert FieldChange("x", ABSENT, 1).to_json() == {"path": "x", "after": 1}


def test_objects_opt_out_with_lockgate_s_key_or_helm_s_and_lockgate_s_wins() -> None:
    def of(**metadata: dict[str, str]) -> policy.ObjectPolicy:
        return policy.policy_of({"metadata": {"name": "x", **metadata}})

    assert of().drift_detection
    assert not of(annotations={"lockgate.dev/driftDetection": "Disabled"}).drift_detection
    assert not of(labels={"helm.toolkit.fluxcd.io/driftDetection": "disabled"}).drift_detection
    assert of(annotations={"helm.toolkit.fluxcd.io/driftDetection": "enabled"}).drift_detection
    both = {"lockgate.dev/driftDetection": "enabled", "helm.toolkit.fluxcd.io/driftDetection": "disabled"}
    assert of(annotations=both).drift_detection
