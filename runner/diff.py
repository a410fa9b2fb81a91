"""Classify one object against the cluster: created, configured (with a field diff) or unchanged.

The fast path decides "unchanged" without a request: the hash of what we send matches
what the inventory says we last applied, nobody else's manager needs taking over, and
every field we send is live with the same value. Everything else is applied (or, in a
dry run, dry-run applied) and the answer compared with the live object after
normalisation. Also here: which managedFields entries to take over, and the patch that
merges them into ours, so that a later ``kubectl edit`` is reverted as Flux reverts it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from runner import normalize
from runner.changeset import Action
from runner.client import Resource
from runner.manager import Desired, Manager
from runner.normalize import FieldChange

#: managers whose fields lockgate adopts: kubectl's (apply, edit, patch, client-side apply)
TAKEOVER_PREFIXES = ("kubectl",)
TAKEOVER_EXACT = ("before-first-apply",)


@dataclass(frozen=True)
class Classification:
    action: Action
    changes: tuple[FieldChange, ...] = ()
    takeover: bool = False
    reason: str = ""


def _taken_over(entry: dict[str, Any], manager: str) -> bool:
    if entry.get("subresource"):
        return False
    name = str(entry.get("manager", ""))
    if name == manager:
        return entry.get("operation") == "Update"
    return name.startswith(TAKEOVER_PREFIXES) or name in TAKEOVER_EXACT


def needs_takeover(live: dict[str, Any], manager: str) -> bool:
    metadata = live.get("metadata") or {}
    if normalize.LAST_APPLIED in (metadata.get("annotations") or {}):
        return True
    return any(_taken_over(entry, manager) for entry in metadata.get("managedFields") or [])


def _merge(into: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into.setdefault(key, value)
    return into


def takeover_patch(live: dict[str, Any], manager: str) -> list[dict[str, Any]]:
    """A JSON patch moving kubectl's fields into our Apply entry and dropping last-applied."""
    metadata = live.get("metadata") or {}
    entries = metadata.get("managedFields") or []
    kept: list[dict[str, Any]] = []
    merged: dict[str, Any] = {}
    ours: dict[str, Any] | None = None
    for entry in entries:
        if (
            entry.get("manager") == manager
            and entry.get("operation") == "Apply"
            and not entry.get("subresource")
        ):
            ours = dict(entry)
        elif _taken_over(entry, manager):
            _merge(merged, entry.get("fieldsV1") or {})
        else:
            kept.append(entry)
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if ours is None:
        ours = {
            "manager": manager,
            "operation": "Apply",
            "apiVersion": live.get("apiVersion"),
            "fieldsType": "FieldsV1",
            "fieldsV1": {},
            "time": now,
        }
    ours["fieldsV1"] = _merge(dict(ours.get("fieldsV1") or {}), merged)
    ours["fieldsV1"].get("f:metadata", {}).get("f:annotations", {}).pop(f"f:{normalize.LAST_APPLIED}", None)
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": metadata.get("resourceVersion")},
        {"op": "replace", "path": "/metadata/managedFields", "value": [ours, *kept]},
    ]
    if normalize.LAST_APPLIED in (metadata.get("annotations") or {}):
        escaped = normalize.LAST_APPLIED.replace("~", "~0").replace("/", "~1")
        ops.append({"op": "remove", "path": f"/metadata/annotations/{escaped}"})
    return ops


def fast_unchanged(item: Desired, live: dict[str, Any], *, recorded_hash: str, manager: str) -> bool:
    """True when no request is needed to know the object is unchanged."""
    return (
        bool(recorded_hash)
        and recorded_hash == item.hash
        and not (item.policy.takes_over and needs_takeover(live, manager))
        and normalize.is_subset(item.body, live)
    )


def compare(live: dict[str, Any], after: dict[str, Any], *, takeover: bool) -> Classification:
    """Classify by the object before and after an apply (or its dry run)."""
    if normalize.is_drifted(live, after):
        return Classification(Action.CONFIGURED, normalize.field_changes(live, after), takeover)
    if takeover:
        return Classification(Action.CONFIGURED, takeover=True, reason="fields taken over from kubectl")
    return Classification(Action.UNCHANGED)


def classify(mgr: Manager, res: Resource, item: Desired, live: dict[str, Any]) -> Classification:
    """Dry-run ``item`` against its live object; raises ``KubeError`` (e.g. immutable fields)."""
    _, dry = mgr.kube.apply(res, item.body, manager=mgr.field_manager, dry_run=True)
    return compare(live, dry, takeover=item.policy.takes_over and needs_takeover(live, mgr.field_manager))
