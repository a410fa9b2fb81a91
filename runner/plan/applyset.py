"""The kubectl ApplySet standard: the inventory's labels, annotations and ID formula.

Pure: given the parent's name and namespace, compute the ID kubectl computes
(``kubectl apply --prune --applyset=secret/<name>``), the parent's metadata and the
label each member carries. ``inventory`` stores these on the parent Secret.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from lockgate import __version__
from lockgate.manifests import ObjectKey
from runner.plan.objects import labels_of

ID_LABEL = "applyset.kubernetes.io/id"
PART_OF_LABEL = "applyset.kubernetes.io/part-of"
TOOLING_ANNOTATION = "applyset.kubernetes.io/tooling"
GROUP_KINDS_ANNOTATION = "applyset.kubernetes.io/contains-group-kinds"
NAMESPACES_ANNOTATION = "applyset.kubernetes.io/additional-namespaces"
TOOLING = f"lockgate/{__version__}"
PARENT_PREFIX = "lockgate-"


def parent_name(sync_name: str) -> str:
    return f"{PARENT_PREFIX}{sync_name}"


def applyset_id(name: str, namespace: str, *, kind: str = "Secret", group: str = "") -> str:
    """kubectl's formula: ``applyset-`` + base64url(sha256("name.namespace.Kind.group")) + ``-v1``."""
    digest = hashlib.sha256(f"{name}.{namespace}.{kind}.{group}".encode()).digest()
    return f"applyset-{base64.urlsafe_b64encode(digest).decode().rstrip('=')}-v1"


def group_kind(key: ObjectKey) -> str:
    """``Kind.group``, or just ``Kind`` for the core group (Go's ``GroupKind.String``)."""
    return f"{key.kind}.{key.group}" if key.group else key.kind


def group_kinds(keys: Iterable[ObjectKey]) -> str:
    return ",".join(sorted({group_kind(key) for key in keys}))


def additional_namespaces(keys: Iterable[ObjectKey], parent_namespace: str) -> str:
    """Member namespaces other than the parent's: kubectl only prunes where it is told to look."""
    return ",".join(sorted({k.namespace for k in keys if k.namespace and k.namespace != parent_namespace}))


def parent_metadata(
    name: str, namespace: str, members: Iterable[ObjectKey]
) -> tuple[dict[str, str], dict[str, str]]:
    """(labels, annotations) of the parent for this member set."""
    keys = list(members)
    labels = {ID_LABEL: applyset_id(name, namespace)}
    annotations = {
        TOOLING_ANNOTATION: TOOLING,
        GROUP_KINDS_ANNOTATION: group_kinds(keys),
        NAMESPACES_ANNOTATION: additional_namespaces(keys, namespace),
    }
    return labels, annotations


def is_member(body: Mapping[str, Any], set_id: str) -> bool:
    """True when a live object is labelled as a member of the set ``set_id``."""
    return labels_of(body).get(PART_OF_LABEL) == set_id
