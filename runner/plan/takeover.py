"""kubectl field takeover, as Flux does it, so that a later ``kubectl edit`` is reverted.

Pure. Fields set by kubectl (client-side apply, ``edit``, ``patch``), by
``before-first-apply`` and by our own Update operations are merged into our Apply entry of
``managedFields``, and kubectl's last-applied annotation is dropped; the next server-side
apply then owns (and resets) them. The patch is guarded by the live resourceVersion, so a
concurrent writer makes it fail instead of being overwritten.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from lockgate.diff.normalize import LAST_APPLIED
from runner.plan.objects import ManagedFieldsEntry, annotations_of, managed_fields_of, metadata_of

#: managers whose fields lockgate adopts: kubectl's (apply, edit, patch, client-side apply)
TAKEOVER_PREFIXES = ("kubectl",)
TAKEOVER_EXACT = ("before-first-apply",)


def _taken_over(entry: ManagedFieldsEntry, manager: str) -> bool:
    if entry.get("subresource"):
        return False
    name = str(entry.get("manager", ""))
    if name == manager:
        return entry.get("operation") == "Update"
    return name.startswith(TAKEOVER_PREFIXES) or name in TAKEOVER_EXACT


def needs_takeover(live: dict[str, Any], manager: str) -> bool:
    if LAST_APPLIED in annotations_of(live):
        return True
    return any(_taken_over(entry, manager) for entry in managed_fields_of(live))


def _merge(into: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into.setdefault(key, value)
    return into


def takeover_patch(live: dict[str, Any], manager: str) -> list[dict[str, Any]]:
    """A JSON patch moving kubectl's fields into our Apply entry and dropping last-applied."""
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
        elif _taken_over(entry, manager):
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
