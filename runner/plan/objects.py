"""The Kubernetes shapes the runner reads from the API server, as TypedDicts.

The API answers JSON, and bodies travel as plain dicts (straight into server-side apply
requests and back), so these types describe what the runner reads rather than wrap it:
``metadata_of`` and ``conditions_of`` give a typed view of a live object without copying.
Only the fields the runner looks at are declared. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, cast


class ManagedFieldsEntry(TypedDict, total=False):
    """One entry of ``metadata.managedFields``: who set which fields, and how."""

    manager: str
    operation: str  #: "Apply" or "Update"
    apiVersion: str
    fieldsType: str
    fieldsV1: dict[str, Any]
    time: str
    subresource: str


class ObjectMeta(TypedDict, total=False):
    name: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    managedFields: list[ManagedFieldsEntry]


class Condition(TypedDict, total=False):
    """One entry of ``status.conditions``."""

    type: str
    status: str  #: "True", "False" or "Unknown"
    reason: str
    message: str
    lastTransitionTime: str
    observedGeneration: int


def metadata_of(obj: Mapping[str, Any]) -> ObjectMeta:
    """``obj.metadata``, or an empty mapping when it is missing or not a mapping."""
    metadata = obj.get("metadata")
    return cast(ObjectMeta, metadata) if isinstance(metadata, dict) else ObjectMeta()


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    labels = metadata_of(obj).get("labels")
    return labels if isinstance(labels, dict) else {}


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    annotations = metadata_of(obj).get("annotations")
    return annotations if isinstance(annotations, dict) else {}


def managed_fields_of(obj: Mapping[str, Any]) -> list[ManagedFieldsEntry]:
    entries = metadata_of(obj).get("managedFields")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def conditions_of(obj: Mapping[str, Any]) -> dict[str, Condition]:
    """``status.conditions`` by type; entries without a type are left out."""
    status = obj.get("status")
    items = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(items, list):
        return {}
    return {str(c["type"]): cast(Condition, c) for c in items if isinstance(c, dict) and "type" in c}
