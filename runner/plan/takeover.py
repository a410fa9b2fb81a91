"""kubectl field takeover, as Flux does it, so that a later ``kubectl edit`` is reverted.

Pure. Fields set by kubectl (client-side apply, ``edit``, ``patch``), by
``before-first-apply`` and by our own Update operations are merged into our Apply entry of
``managedFields``, and kubectl's last-applied annotation is dropped; the next server-side
apply then owns (and resets) them. ``overrides`` are more managers taken over whatever their
operation, as Flux's ``--override-manager``: ``lockgate adopt`` names ``kustomize-controller``,
so the fields Flux applied become lockgate's and a field later removed from the artifact is
removed from the object. The patch is guarded by the live resourceVersion, so a concurrent
writer makes it fail instead of being overwritten.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Collection
from typing import Any

from lockgate.diff.normalize import LAST_APPLIED
from runner.plan.objects import ManagedFieldsEntry, annotations_of, managed_fields_of, metadata_of

#: managers whose fields lockgate adopts: kubectl's (apply, edit, patch, client-side apply)
TAKEOVER_PREFIXES = ("kubectl",)
TAKEOVER_EXACT = ("before-first-apply",)


def taken_over(entry: ManagedFieldsEntry, manager: str, overrides: Collection[str] = ()) -> bool:
    if entry.get("subresource"):
        return False
    name = str(entry.get("manager", ""))
    if name == manager:
        return entry.get("operation") == "Update"
    return name.startswith(TAKEOVER_PREFIXES) or name in TAKEOVER_EXACT or name in overrides


def needs_takeover(live: dict[str, Any], manager: str, overrides: Collection[str] = ()) -> bool:
    if LAST_APPLIED in annotations_of(live):
        return True
    return any(taken_over(entry, manager, overrides) for entry in managed_fields_of(live))


def acting_as(live: dict[str, Any], manager: str, overrides: Collection[str]) -> str:
    """The manager a dry run of our apply is made as: the override manager holding an Apply
    entry (after the takeover its fields are ours, so applying as it shows what our apply will
    remove: the server defaults a removed field again, as it will then), else ``manager``.
    Fields our own entry holds stay held in that dry run; they are what we send anyway."""
    holders = {
        str(e.get("manager"))
        for e in managed_fields_of(live)
        if e.get("operation") == "Apply" and not e.get("subresource") and e.get("manager") in overrides
    }
    return holders.pop() if len(holders) == 1 else manager


def _merge(into: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into.setdefault(key, value)
    return into


def takeover_patch(
    live: dict[str, Any], manager: str, overrides: Collection[str] = ()
) -> list[dict[str, Any]]:
    """A JSON patch moving kubectl's (and ``overrides``') fields into our Apply entry and
    dropping last-applied."""
    kept: list[ManagedFieldsEntry] = []
    merged: dict[str, Any] = {}
    ours: ManagedFieldsEntry | None = None
    for entry in managed_fields_of(live):
        if (
            entry.get("manager") == manager
            and entry.get("operation") == "Apply"
            and not entry.get("subresource")
        ):
            ours = ManagedFieldsEntry(**entry)
        elif taken_over(entry, manager, overrides):
            _merge(merged, entry.get("fieldsV1") or {})
        else:
            kept.append(entry)
    if ours is None:
        ours = ManagedFieldsEntry(
            manager=manager,
            operation="Apply",
            apiVersion=str(live.get("apiVersion", "")),
            fieldsType="FieldsV1",
            fieldsV1={},
            time=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
    fields = _merge(dict(ours.get("fieldsV1") or {}), merged)
    fields.get("f:metadata", {}).get("f:annotations", {}).pop(f"f:{LAST_APPLIED}", None)
    ours["fieldsV1"] = fields
    ops: list[dict[str, Any]] = [
        {
            "op": "test",
            "path": "/metadata/resourceVersion",
            "value": metadata_of(live).get("resourceVersion"),
        },
        {"op": "replace", "path": "/metadata/managedFields", "value": [ours, *kept]},
    ]
    if LAST_APPLIED in annotations_of(live):
        escaped = LAST_APPLIED.replace("~", "~0").replace("/", "~1")
        ops.append({"op": "remove", "path": f"/metadata/annotations/{escaped}"})
    return ops


def _owned_paths(fields: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The leaf map paths of a FieldsV1 set (``f:`` keys only; list entries are not followed)."""
    paths: list[tuple[str, ...]] = []
    for key, value in fields.items():
        if not key.startswith("f:"):
            continue  # "." (the map itself), k:/v:/i: list entries
        path = (*prefix, key[2:])
        children = [k for k in value if k.startswith("f:")] if isinstance(value, dict) else []
        if children:
            paths.extend(_owned_paths(value, path))
        elif not (isinstance(value, dict) and any(k.startswith(("k:", "v:", "i:")) for k in value)):
            paths.append(path)
    return paths


def _has(body: Any, path: tuple[str, ...]) -> bool:
    for part in path:
        if not isinstance(body, dict) or part not in body:
            return False
        body = body[part]
    return True


def _remove(body: dict[str, Any], path: tuple[str, ...]) -> None:
    parents: list[dict[str, Any]] = []
    node: Any = body
    for part in path[:-1]:
        if not isinstance(node, dict) or not isinstance(node.get(part), dict):
            return
        parents.append(node)
        node = node[part]
    if isinstance(node, dict):
        node.pop(path[-1], None)
        # an emptied map is dropped, as the server drops it
        for parent, part in zip(reversed(parents), reversed(path[:-1]), strict=False):
            if parent.get(part) == {}:
                parent.pop(part)


def predict_after_takeover(
    live: dict[str, Any],
    dry: dict[str, Any],
    desired: dict[str, Any],
    manager: str,
    overrides: Collection[str] = (),
) -> dict[str, Any]:
    """What the object looks like after the real pass's takeover and apply, from the dry run
    of the apply alone (``dry``): a dry run cannot chain the takeover patch, so the fields
    only kubectl owned that ``desired`` does not set are removed here, as the apply after
    the takeover removes them, and kubectl's last-applied annotation goes.

    List entries (``k:``/``v:`` keys) are not followed: such a field stays as the dry run shows it.
    """
    taken: dict[str, Any] = {}
    others: list[dict[str, Any]] = []
    for entry in managed_fields_of(live):
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            continue
        if taken_over(entry, manager, overrides):
            _merge(taken, entry.get("fieldsV1") or {})
        elif not entry.get("subresource"):
            others.append(entry.get("fieldsV1") or {})
    result = copy.deepcopy(dry)
    for path in _owned_paths(taken):
        if path == ("metadata", "annotations", LAST_APPLIED) or _has(desired, path):
            continue
        if any(_has_fields(other, path) for other in others):
            continue  # another manager keeps it
        _remove(result, path)
    annotations = metadata_of(result).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
        if not annotations:
            metadata_of(result).pop("annotations", None)
    return result


def _has_fields(fields: dict[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = fields
    for part in path:
        if not isinstance(node, dict) or f"f:{part}" not in node:
            return False
        node = node[f"f:{part}"]
    return True
