"""A comparison's result as a value: one entry per object, with Flux's fixed set of actions.

The runner's pass and ``lockgate diff`` both produce a ``ChangeSet`` (Flux
``ssa/changeset.go``); the summary table, the ``--output json`` document and the
Kubernetes Events are all rendered from it, never from log lines. ``compare`` builds one
from two sets of objects (a pushed artifact against local manifests). An entry may be
marked ``drifted``: the runner found the object changed in the cluster and left it so. Pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from lockgate.diff.fields import FieldChange, field_changes
from lockgate.manifests import K8sObject, ObjectKey


class Action(Enum):
    CREATED = "created"
    CONFIGURED = "configured"
    UNCHANGED = "unchanged"
    SKIPPED = "skipped"
    DELETED = "deleted"


@dataclass(frozen=True)
class Entry:
    key: ObjectKey
    action: Action
    reason: str = ""
    changes: tuple[FieldChange, ...] = ()
    #: the object differs from what was last applied and the pass left it so (``changes``: what
    #: a correction would change); the runner's ``driftDetection.mode: warn``
    drifted: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "object": str(self.key),
            "group": self.key.group,
            "kind": self.key.kind,
            "namespace": self.key.namespace,
            "name": self.key.name,
            "action": self.action.value,
        }
        if self.reason:
            data["reason"] = self.reason
        if self.changes:
            data["changes"] = [change.to_json() for change in self.changes]
        if self.drifted:
            data["drifted"] = True
        return data


@dataclass
class ChangeSet:
    entries: list[Entry] = field(default_factory=list)

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)

    def extend(self, other: ChangeSet) -> None:
        self.entries.extend(other.entries)

    def counts(self) -> dict[str, int]:
        counted = Counter(entry.action for entry in self.entries)
        return {action.value: counted.get(action, 0) for action in Action}

    def of(self, *actions: Action) -> list[Entry]:
        return [entry for entry in self.entries if entry.action in actions]

    @property
    def drifted(self) -> list[Entry]:
        """The objects left drifted (``Entry.drifted``)."""
        return [entry for entry in self.entries if entry.drifted]

    @property
    def changed(self) -> bool:
        return bool(self.of(Action.CREATED, Action.CONFIGURED, Action.DELETED))

    def summary(self) -> str:
        """One line, for Events and logs: ``2 created, 1 configured, 5 unchanged``, and how many
        of them were left drifted (``; 1 drifted, not corrected``)."""
        parts = [f"{count} {action}" for action, count in self.counts().items() if count]
        drifted = len(self.drifted)
        return (", ".join(parts) or "no objects") + (f"; {drifted} drifted, not corrected" if drifted else "")

    def to_json(self) -> dict[str, Any]:
        return {"counts": self.counts(), "objects": [entry.to_json() for entry in self.entries]}

    def table(self, *, show_unchanged: bool = False) -> str:
        """A human table: one row per object that changed (all with ``show_unchanged``), then diffs."""
        rows = [e for e in self.entries if show_unchanged or e.action is not Action.UNCHANGED or e.drifted]
        lines: list[str] = []
        if rows:
            width = max(len(str(e.key)) for e in rows)
            lines.append(f"{'OBJECT'.ljust(width)}  ACTION")
            for entry in rows:
                reason = f"  ({entry.reason})" if entry.reason else ""
                lines.append(f"{str(entry.key).ljust(width)}  {entry.action.value}{reason}")
                lines.extend(f"    {change}" for change in entry.changes)
        lines.append(self.summary())
        return "\n".join(lines)


def compare(before: Sequence[K8sObject], after: Sequence[K8sObject]) -> ChangeSet:
    """Object by object, matched by group, kind, namespace and name, in a stable order.

    An object only in ``after`` is created, only in ``before`` deleted, in both with
    field changes configured, else unchanged.
    """
    old = {o.key: o for o in before}
    new = {o.key: o for o in after}
    result = ChangeSet()
    for key in sorted(old.keys() | new.keys(), key=str):
        if key not in old:
            result.add(Entry(key, Action.CREATED))
        elif key not in new:
            result.add(Entry(key, Action.DELETED))
        else:
            changes = field_changes(old[key].body, new[key].body)
            result.add(Entry(key, Action.CONFIGURED if changes else Action.UNCHANGED, changes=changes))
    return result
