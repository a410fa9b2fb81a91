"""A Flux object as ``lockgate import`` reads it, whether from a file or from the cluster.

Pure. The cluster adds what files lack (``uid``, ``status``, defaulted fields), so the
mapping reads only through these helpers, which treat a field at its CRD default the same
as an absent one: the same objects give the same config from either place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SOURCE = "source.toolkit.fluxcd.io"
KUSTOMIZE = "kustomize.toolkit.fluxcd.io"
NOTIFICATION = "notification.toolkit.fluxcd.io"
IMAGE = "image.toolkit.fluxcd.io"
HELM = "helm.toolkit.fluxcd.io"
#: the API groups whose objects import reads
GROUPS = (SOURCE, KUSTOMIZE, NOTIFICATION, IMAGE, HELM)
#: what import writes (runner.pipeline.documents.API_VERSION, which this layer cannot import)
API_VERSION_SYNC = "lockgate.dev/v1alpha1"
#: kustomize-controller's owner labels on everything it applied (fluxcd/pkg ssa ``SetOwnerLabels``)
OWNER_NAME = f"{KUSTOMIZE}/name"
OWNER_NAMESPACE = f"{KUSTOMIZE}/namespace"

_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


@dataclass(frozen=True)
class FluxObject:
    api_version: str
    kind: str
    namespace: str
    name: str
    spec: Mapping[str, Any]
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    status: Mapping[str, Any] = field(default_factory=dict)
    #: the whole document, for the kinds passed on as they are (image automation)
    body: Mapping[str, Any] = field(default_factory=dict)

    @property
    def group(self) -> str:
        return self.api_version.partition("/")[0] if "/" in self.api_version else ""

    @property
    def ref(self) -> str:
        """How the report and the comments name it: ``Kustomization flux-system/apps``."""
        return f"{self.kind} {self.namespace}/{self.name}"

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)


def from_document(doc: Mapping[str, Any], *, default_namespace: str = "default") -> FluxObject:
    metadata = doc.get("metadata") or {}
    spec = doc.get("spec")
    status = doc.get("status")
    labels = metadata.get("labels")
    return FluxObject(
        api_version=str(doc.get("apiVersion", "")),
        kind=str(doc.get("kind", "")),
        namespace=str(metadata.get("namespace") or default_namespace),
        name=str(metadata.get("name", "")),
        spec=spec if isinstance(spec, dict) else {},
        uid=str(metadata.get("uid") or ""),
        labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
        status=status if isinstance(status, dict) else {},
        body=doc,
    )


def is_flux(doc: Mapping[str, Any]) -> bool:
    api_version = str(doc.get("apiVersion", ""))
    return api_version.partition("/")[0] in GROUPS and bool(doc.get("kind"))


def get(spec: Mapping[str, Any], *path: str) -> Any:
    """``spec[path...]``, None when any step is missing or not a mapping."""
    node: Any = spec
    for part in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def ref_name(value: Any) -> str | None:
    """The ``name`` of a ``{name: ...}`` reference (a LocalObjectReference), else None."""
    if isinstance(value, Mapping) and value.get("name"):
        return str(value["name"])
    return None


def parse_duration(text: str) -> float | None:
    """A Go duration as Flux's CRDs allow it (``^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$``), in
    seconds; None when it is not one."""
    value = str(text).strip()
    pos, total = 0, 0.0
    for match in _GO_DURATION.finditer(value):
        if match.start() != pos:
            return None
        number, unit = float(match[1]), match[2]
        total += number * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[unit]
        pos = match.end()
    if not value or pos != len(value):
        return None
    return total


def format_duration(seconds: float) -> str:
    """lockgate's spelling (``1h30m``); whole seconds only, as lockgate's durations."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + (f"{secs}s" if secs else "")
    return text or "0s"
