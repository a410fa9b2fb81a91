"""Normalisation and comparison of objects: what counts as drift, and how to show it.

Pure. Before two versions of an object are compared, both are normalised as Flux does
(default ``protocol: TCP`` on ports, Secret ``stringData`` folded into ``data``, status
dropped except for CRDs, server-owned metadata dropped). Drift is then: labels or
annotations differ, or the object outside ``metadata`` and ``status`` differs.
``is_subset`` is the cheap check behind the no-op fast path: every field we send is
already live with the same value.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MASK = "***"
_SERVER_METADATA = (
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "resourceVersion",
    "selfLink",
    "uid",
)
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(frozen=True)
class FieldChange:
    """One changed field: a dotted path, the live value and the desired value (None = absent)."""

    path: str
    before: Any
    after: Any

    def __str__(self) -> str:
        return f"{self.path}: {_show(self.before)} -> {_show(self.after)}"


def _show(value: Any) -> str:
    return "<absent>" if value is None else json.dumps(value, sort_keys=True)


def _pod_specs(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return
    candidates = [
        spec,
        spec.get("template", {}).get("spec") if isinstance(spec.get("template"), dict) else None,
    ]
    job = spec.get("jobTemplate")
    if isinstance(job, dict):
        template = job.get("spec", {}).get("template", {})
        candidates.append(template.get("spec") if isinstance(template, dict) else None)
    for candidate in candidates:
        if isinstance(candidate, dict) and "containers" in candidate:
            yield candidate


def _default_protocols(ports: Any) -> None:
    if isinstance(ports, list):
        for port in ports:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


def normalise(body: dict[str, Any]) -> dict[str, Any]:
    """A copy fit for comparison; the input is left untouched."""
    obj = copy.deepcopy(body)
    if obj.get("kind") != "CustomResourceDefinition":
        obj.pop("status", None)
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        for name in _SERVER_METADATA:
            metadata.pop(name, None)
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
            if not annotations:
                metadata.pop("annotations")
        if metadata.get("labels") == {}:
            metadata.pop("labels")
    for pod_spec in _pod_specs(obj):
        for field in ("containers", "initContainers"):
            for container in pod_spec.get(field) or []:
                if isinstance(container, dict):
                    _default_protocols(container.get("ports"))
    if obj.get("kind") == "Service" and isinstance(obj.get("spec"), dict):
        _default_protocols(obj["spec"].get("ports"))
    if (
        obj.get("kind") == "Secret"
        and obj.get("apiVersion") == "v1"
        and isinstance(obj.get("stringData"), dict)
    ):
        data = obj.setdefault("data", {}) or {}
        for key, value in obj.pop("stringData").items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    return obj


def _meta(obj: dict[str, Any], field: str) -> dict[str, Any]:
    metadata = obj.get("metadata") or {}
    value = metadata.get(field) if isinstance(metadata, dict) else None
    return value if isinstance(value, dict) else {}


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def is_drifted(live: dict[str, Any], desired: dict[str, Any]) -> bool:
    """Flux's rule on normalised objects: labels, annotations or content outside metadata differ."""
    before, after = normalise(live), normalise(desired)
    return (
        _meta(before, "labels") != _meta(after, "labels")
        or _meta(before, "annotations") != _meta(after, "annotations")
        or _content(before) != _content(after)
    )


def _walk(before: Any, after: Any, path: str, out: list[FieldChange]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            child = f"{path}.{key}" if path else str(key)
            _walk(before.get(key), after.get(key), child, out)
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (b, a) in enumerate(zip(before, after, strict=True)):
            _walk(b, a, f"{path}[{index}]", out)
    elif before != after:
        out.append(FieldChange(path, before, after))


def field_changes(live: dict[str, Any], desired: dict[str, Any]) -> tuple[FieldChange, ...]:
    """The changed fields between two normalised views; Secret values are masked."""
    before, after = normalise(live), normalise(desired)
    out: list[FieldChange] = []
    for field in ("labels", "annotations"):
        _walk(_meta(before, field), _meta(after, field), f"metadata.{field}", out)
    _walk(_content(before), _content(after), "", out)
    if desired.get("kind") == "Secret" or live.get("kind") == "Secret":
        out = [
            FieldChange(c.path, MASK if c.before is not None else None, MASK if c.after is not None else None)
            if c.path.startswith(("data", "stringData"))
            else c
            for c in out
        ]
    return tuple(out)


def is_subset(desired: Any, live: Any) -> bool:
    """Every field of ``desired`` is present in ``live`` with the same value (lists element-wise)."""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(
            key in live and is_subset(value, live[key]) for key, value in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(live, list)
            and len(desired) == len(live)
            and all(is_subset(d, v) for d, v in zip(desired, live, strict=True))
        )
    return bool(desired == live)


def content_hash(body: dict[str, Any]) -> str:
    """A short stable hash of what we send, recorded per member for the no-op fast path."""
    data = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(data).hexdigest()[:16]
