"""The change set renders the same facts as a table and as JSON."""

from __future__ import annotations

from lockgate.diff.changeset import Action, ChangeSet, Entry
from lockgate.diff.fields import FieldChange
from lockgate.manifests import ObjectKey


def test_table_and_json_come_from_the_same_entries() -> None:
    changes = ChangeSet()
    changes.add(Entry(ObjectKey("", "ConfigMap", "ns", "a"), Action.CREATED))
    changes.add(
        Entry(
            ObjectKey("", "ConfigMap", "ns", "b"),
            Action.CONFIGURED,
            changes=(FieldChange("data.k", "1", "2"),),
        )
    )
    changes.add(Entry(ObjectKey("", "ConfigMap", "ns", "c"), Action.UNCHANGED))
    changes.add(Entry(ObjectKey("apps", "Deployment", "ns", "d"), Action.DELETED))
    assert changes.summary() == "1 created, 1 configured, 1 unchanged, 1 deleted"
    assert changes.table().splitlines() == [
        "OBJECT                ACTION",
        "ConfigMap/ns/a        created",
        "ConfigMap/ns/b        configured",
        '    data.k: "1" -> "2"',
        "Deployment.apps/ns/d  deleted",
        "1 created, 1 configured, 1 unchanged, 1 deleted",
    ]
    doc = changes.to_json()
    assert doc["counts"] == {"created": 1, "configured": 1, "unchanged": 1, "skipped": 0, "deleted": 1}
    assert doc["objects"][1]["changes"] == [{"path": "data.k", "before": "1", "after": "2"}]
    assert changes.changed
