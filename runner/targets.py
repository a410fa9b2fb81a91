"""Place objects in namespaces: ``--target-namespace`` for namespaced kinds, and a clear error
for a namespaced object that names none.

Whether a kind is namespaced comes from discovery, or, for a custom resource whose CRD
arrives in the same artifact, from that CRD's ``spec.scope``. Cluster-scoped objects keep
no namespace. After placement, two objects may collide; that is refused like a duplicate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lockgate.errors import RenderError
from lockgate.manifests import K8sObject, ObjectKey
from runner.client import Kube


def _crd_scopes(objects: Sequence[K8sObject]) -> dict[tuple[str, str], bool]:
    scopes: dict[tuple[str, str], bool] = {}
    for obj in objects:
        if obj.kind == "CustomResourceDefinition":
            spec = obj.body.get("spec") or {}
            kind = (spec.get("names") or {}).get("kind")
            if isinstance(kind, str):
                scopes[(str(spec.get("group", "")), kind)] = spec.get("scope") == "Namespaced"
    return scopes


def namespaced(kube: Kube, obj: K8sObject, crd_scopes: dict[tuple[str, str], bool]) -> bool | None:
    """True/False, or None when neither the cluster nor the artifact defines the kind."""
    if kube.knows(obj.api_version, obj.kind):
        return kube.resource(obj.api_version, obj.kind).namespaced
    return crd_scopes.get((obj.key.group, obj.kind))


def _with_namespace(body: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    """A copy of ``body`` in ``namespace`` (None: no namespace); nested values are shared."""
    metadata = dict(body["metadata"])
    if namespace is None:
        metadata.pop("namespace", None)
    else:
        metadata["namespace"] = namespace
    return {**body, "metadata": metadata}


def place(kube: Kube, objects: Sequence[K8sObject], *, target_namespace: str | None) -> list[K8sObject]:
    scopes = _crd_scopes(objects)
    placed: list[K8sObject] = []
    seen: dict[ObjectKey, K8sObject] = {}
    scope_of: dict[tuple[str, str], bool | None] = {}
    for obj in objects:
        kind = (obj.api_version, obj.kind)
        if kind not in scope_of:
            scope_of[kind] = namespaced(kube, obj, scopes)
        scoped = scope_of[kind]
        moved = obj
        if scoped is True and (target_namespace or not obj.namespace):
            if not target_namespace:
                raise RenderError(
                    f"{obj.origin}: {obj.key} is namespaced but names no namespace; "
                    "set metadata.namespace or pass --target-namespace"
                )
            moved = K8sObject(_with_namespace(obj.body, target_namespace), obj.file, obj.line)
        elif scoped is False and obj.namespace:
            moved = K8sObject(_with_namespace(obj.body, None), obj.file, obj.line)
        if moved.key in seen:
            raise RenderError(
                f"{obj.origin}: {moved.key} collides with {seen[moved.key].origin} after placement"
            )
        seen[moved.key] = moved
        placed.append(moved)
    return placed
