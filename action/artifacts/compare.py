"""Object-by-object comparison of two manifest sets: the pure half of ``lockgate diff``.

Objects are matched by group, kind, namespace and name; changed objects list field-level
changes from deepdiff with readable paths (``spec.template.spec.containers[0].image``).
Secret ``data``/``stringData`` values are replaced by masks before comparing, so a change
shows that a value changed, never the value.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from lockgate.manifests import K8sObject, ObjectKey

MASK = "*** (masked)"
MASK_BEFORE = "*** (masked, before)"
MASK_AFTER = "*** (masked, after)"


class Action(Enum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


@dataclass(frozen=True)
class FieldChange:
    path: str
    before: Any
    after: Any


@dataclass(frozen=True)
class ObjectDiff:
    key: ObjectKey
    action: Action
    changes: tuple[FieldChange, ...] = ()

    def to_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {"object": str(self.key), "action": self.action.value}
        if self.action is Action.CHANGED:
            value["changes"] = [{"path": c.path, "before": c.before, "after": c.after} for c in self.changes]
        return value


@dataclass(frozen=True)
class DiffResult:
    objects: tuple[ObjectDiff, ...]
    unchanged: int

    @property
    def equal(self) -> bool:
        return not self.objects

    def count(self, action: Action) -> int:
        return sum(1 for o in self.objects if o.action is action)

    def summary(self) -> str:
        if self.equal:
            return f"no differences ({self.unchanged} objects unchanged)"
        return (
            f"{len(self.objects)} objects differ: {self.count(Action.ADDED)} added, "
            f"{self.count(Action.REMOVED)} removed, {self.count(Action.CHANGED)} changed; "
            f"{self.unchanged} unchanged"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "equal": self.equal,
            "added": self.count(Action.ADDED),
            "removed": self.count(Action.REMOVED),
            "changed": self.count(Action.CHANGED),
            "unchanged": self.unchanged,
            "objects": [o.to_json() for o in self.objects],
        }


def mask_secrets(before: dict[str, Any], after: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Copies of two Secret bodies with every value masked; differing values get distinct masks."""
    b, a = copy.deepcopy(before), copy.deepcopy(after)
    for section in ("data", "stringData"):
        old: dict[str, Any] = b[section] if isinstance(b.get(section), dict) else {}
        new: dict[str, Any] = a[section] if isinstance(a.get(section), dict) else {}
        for key in set(old) | set(new):
            same = key in old and key in new and old[key] == new[key]
            if key in old:
                old[key] = MASK if same else MASK_BEFORE
            if key in new:
                new[key] = MASK if same else MASK_AFTER
    return b, a


def _path(parts: Sequence[Any]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif (
            isinstance(part, str)
            and part.replace("-", "_").replace(".", "_").replace("/", "_").isidentifier()
        ):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text or "(root)"


_MISSING = "<absent>"


def field_changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[FieldChange, ...]:
    from deepdiff import DeepDiff  # imported here: it costs ~0.3 s of start-up that push and pull do not need

    tree = DeepDiff(before, after, view="tree", verbose_level=2, threshold_to_diff_deeper=0)
    changes: list[FieldChange] = []
    for report in tree.values():
        for item in report:
            t1 = _MISSING if type(item.t1).__name__ == "NotPresent" else item.t1
            t2 = _MISSING if type(item.t2).__name__ == "NotPresent" else item.t2
            changes.append(FieldChange(_path(item.path(output_format="list")), t1, t2))
    return tuple(sorted(changes, key=lambda c: c.path))


def compare(before: Sequence[K8sObject], after: Sequence[K8sObject]) -> DiffResult:
    """``before`` is the remote artifact, ``after`` the local manifests."""
    old = {o.key: o for o in before}
    new = {o.key: o for o in after}
    diffs: list[ObjectDiff] = []
    unchanged = 0
    for key in sorted(set(old) | set(new), key=str):
        if key not in old:
            diffs.append(ObjectDiff(key, Action.ADDED))
        elif key not in new:
            diffs.append(ObjectDiff(key, Action.REMOVED))
        else:
            b, a = old[key].body, new[key].body
            if key.kind == "Secret" and key.group == "":
                b, a = mask_secrets(b, a)
            changes = field_changes(b, a)
            if changes:
                diffs.append(ObjectDiff(key, Action.CHANGED, changes))
            else:
                unchanged += 1
    return DiffResult(objects=tuple(diffs), unchanged=unchanged)


def render_text(result: DiffResult) -> str:
    marks = {Action.ADDED: "+", Action.REMOVED: "-", Action.CHANGED: "~"}
    lines: list[str] = []
    for obj in result.objects:
        lines.append(f"{marks[obj.action]} {obj.key} ({obj.action.value})")
        for change in obj.changes:
            lines.append(f"    {change.path}: {_show(change.before)} -> {_show(change.after)}")
    lines.append(result.summary())
    return "\n".join(lines)


def _show(value: Any) -> str:
    if value == _MISSING:
        return _MISSING
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 120 else text[:117] + "..."
