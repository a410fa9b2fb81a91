"""An object ready to send: our member label added, its policy read, its content hashed.

Pure. ``prepare`` is the last step before the apply: every later step (apply, the no-op
fast path, prune, wait) works on ``Desired`` values and never changes a body again (an
apply sends ``runner.plan.ignore.payload`` of it when some of its fields are ignored).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lockgate.diff import secret_values
from lockgate.diff.secret_values import SecretValues
from lockgate.errors import RenderError
from lockgate.manifests import K8sObject, ObjectKey
from runner.plan import applyset, ignore, policy


@dataclass(frozen=True)
class Desired:
    key: ObjectKey
    body: dict[str, Any]
    policy: policy.ObjectPolicy
    hash: str
    origin: str = ""
    #: its values that are secret by origin, masked in its diff and in messages about it
    secret: SecretValues = field(default=secret_values.NONE, repr=False, compare=False)
    #: the fields ``spec.ignore`` leaves to other writers on this object
    ignored: tuple[ignore.Pointer, ...] = ()

    @property
    def api_version(self) -> str:
        return str(self.body["apiVersion"])

    @property
    def version(self) -> str:
        return self.api_version.rsplit("/", 1)[-1]


def content_hash(body: dict[str, Any]) -> str:
    """A short stable hash of what we send, recorded per member for the no-op fast path."""
    data = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def prepare(obj: K8sObject, set_id: str, ignore_rules: Sequence[ignore.Rule] = ()) -> Desired:
    """Label the object as a member of the set; read its policy; hash what will be sent; find
    the paths ``ignore_rules`` leave alone on it.

    Only the mappings on the way to the label are copied (a deep copy per object was a
    tenth of a no-op pass); nothing downstream mutates a body, it is sent or compared.
    """
    body = dict(obj.body)
    metadata = dict(body.get("metadata") or {})
    labels = metadata.get("labels") or {}
    if not isinstance(labels, dict):
        raise RenderError(f"{obj.origin}: {obj.key} has metadata.labels that is not a mapping")
    metadata["labels"] = {**labels, applyset.PART_OF_LABEL: set_id}
    body["metadata"] = metadata
    return Desired(
        key=obj.key,
        body=body,
        policy=policy.policy_of(body, where=f"{obj.key} ({obj.origin})"),
        hash=content_hash(body),
        origin=obj.origin,
        secret=obj.secret,
        ignored=ignore.paths_for(ignore_rules, body) if ignore_rules else (),
    )
