"""Normalisation before comparing two versions of an object, as Flux's ``ssa`` does it.

Pure. Defaults the server fills in (``protocol: TCP`` on container and Service ports) are
added, a v1 Secret's ``stringData`` is folded into ``data``, ``status`` is dropped (except
for CRDs, whose status the apply step waits on), and so are the metadata fields only the
server writes and kubectl's last-applied annotation. The input is never modified: only the
mappings on the way to a change are copied, because a deep copy of every object was most
of the cost of a drift pass at thousands of objects.
"""

from __future__ import annotations

import base64
from typing import Any

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
#: metadata only the API server writes; never a difference worth showing
SERVER_METADATA = frozenset(
    {
        "creationTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "managedFields",
        "resourceVersion",
        "selfLink",
        "uid",
    }
)


def _metadata(metadata: Any) -> Any:
    if not isinstance(metadata, dict):
        return metadata
    kept = {k: v for k, v in metadata.items() if k not in SERVER_METADATA}
    annotations = kept.get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        annotations = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
        kept["annotations"] = annotations
    for name in ("annotations", "labels"):
        if kept.get(name) == {}:
            del kept[name]
    return kept


def _ports(ports: Any) -> Any:
    if not isinstance(ports, list) or all(not isinstance(p, dict) or "protocol" in p for p in ports):
        return ports
    return [{**p, "protocol": "TCP"} if isinstance(p, dict) and "protocol" not in p else p for p in ports]


def _containers(items: Any) -> Any:
    if not isinstance(items, list):
        return items
    out, changed = [], False
    for container in items:
        if isinstance(container, dict) and "ports" in container:
            ports = _ports(container["ports"])
            if ports is not container["ports"]:
                container, changed = {**container, "ports": ports}, True
        out.append(container)
    return out if changed else items


def _pod_spec(spec: Any) -> Any:
    if not isinstance(spec, dict) or "containers" not in spec:
        return spec
    changed = {name: _containers(spec[name]) for name in ("containers", "initContainers") if name in spec}
    if all(changed[name] is spec[name] for name in changed):
        return spec
    return {**spec, **changed}


def _template(template: Any) -> Any:
    if not isinstance(template, dict):
        return template
    spec = _pod_spec(template.get("spec"))
    return template if spec is template.get("spec") else {**template, "spec": spec}


def _workload_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Pod specs sit at ``spec`` (Pod), ``spec.template.spec`` or ``spec.jobTemplate.spec.template.spec``."""
    out: dict[str, Any] = _pod_spec(spec)
    if "template" in out:
        template = _template(out["template"])
        if template is not out["template"]:
            out = {**out, "template": template}
    job = out.get("jobTemplate")
    if isinstance(job, dict) and isinstance(job.get("spec"), dict):
        template = _template(job["spec"].get("template"))
        if template is not job["spec"].get("template"):
            out = {**out, "jobTemplate": {**job, "spec": {**job["spec"], "template": template}}}
    return out


def normalise(body: dict[str, Any]) -> dict[str, Any]:
    """A view of ``body`` fit for comparison; ``body`` is left untouched."""
    obj = dict(body)
    kind = obj.get("kind")
    if kind != "CustomResourceDefinition":
        obj.pop("status", None)
    if "metadata" in obj:
        obj["metadata"] = _metadata(obj["metadata"])
    spec = obj.get("spec")
    if isinstance(spec, dict):
        if kind == "Service":
            ports = _ports(spec.get("ports"))
            if ports is not spec.get("ports"):
                obj["spec"] = {**spec, "ports": ports}
        else:
            obj["spec"] = _workload_spec(spec)
    if kind == "Secret" and obj.get("apiVersion") == "v1" and isinstance(obj.get("stringData"), dict):
        data = dict(obj.get("data") or {})
        for key, value in obj.pop("stringData").items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    return obj
