"""Place objects in namespaces: ``--target-namespace`` for namespaced kinds, and a clear error
for a namespaced object that names none.

Pure. Whether a kind is namespaced comes from the cluster (the caller's ``cluster_scope``,
backed by API discovery), or, for a custom resource whose CRD arrives in the same
artifact, from that CRD's ``spec.scope``. Cluster-scoped objects keep no namespace. After
placement, two objects may collide; that is refused like a duplicate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lockgate.errors import RenderError
from lockgate.manifests import K8sObject, ObjectKey

#: (apiVersion, kind) -> namespaced? (None: the cluster does not serve the kind)
ClusterScope = Callable[[str, str], bool | None]


def _crd_scopes(objects: Sequence[K8sObject]) -> dict[tuple[str, str], bool]:
    scopes: dict[tuple[str, str], bool] = {}
    for obj in objects:
        if obj.kind == "CustomResourceDefinition":
            spec = obj.body.get("spec") or {}
            kind = (spec.get("names") or {}).get("kind")
            if isinstance(kind, str):
                scopes[(str(spec.get("group", "")), kind)] = spec.get("scope") == "Namespaced"
    return scopes


def namespaced(
    obj: K8sObject, crd_scopes: dict[tuple[str, str], bool], cluster_scope: ClusterScope
) -> bool | None:
    """True/False, or None when neither the cluster nor the artifact defines the kind."""
    served = cluster_scope(obj.api_version, obj.kind)
    return served if served is not None else crd_scopes.get((obj.key.group, obj.kind))


def _with_namespace(body: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    """A copy of ``body`` in ``namespace`` (None: no namespace); nested values are shared."""
    metadata = dict(body["metadata"])
    if namespace is None:
        metadata.pop("namespace", None)
    else:
        metadata["namespace"] = namespace
    return {**body, "metadata": metadata}


def place(
    objects: Sequence[K8sObject], *, target_namespace: str | None, cluster_scope: ClusterScope
) -> list[K8sObject]:
    scopes = _crd_scopes(objects)
    placed: list[K8sObject] = []
    seen: dict[ObjectKey, K8sObject] = {}
    scope_of: dict[tuple[str, str], bool | None] = {}
    for obj in objects:
        kind = (obj.api_version, obj.kind)
        if kind not in scope_of:
            scope_of[kind] = namespaced(obj, scopes, cluster_scope)
        scoped = scope_of[kind]
        moved = obj
        if scoped is True and (target_namespace or not obj.namespace):
            if not target_namespace:
                raise RenderError(
                    f"{obj.origin}: {obj.key} is namespaced but names no namespace; "
                    "set metadata.namespace or pass --target-namespace"
                )
            moved = K8sObject(_with_namespace(obj.body, target_namespace), obj.file, obj.line, obj.secret)
        elif scoped is False and obj.namespace:
            moved = K8sObject(_with_namespace(obj.body, None), obj.file, obj.line, obj.secret)
        if moved.key in seen:
            raise RenderError(
                f"{obj.origin}: {moved.key} collides with {seen[moved.key].origin} after placement"
            )
        seen[moved.key] = moved
        placed.append(moved)
    return placed
