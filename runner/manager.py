"""The resource manager: one Kubernetes client, one field manager, one ApplySet, a thread pool.

Flux's ``ssa.ResourceManager`` in Python: the verbs live in their own modules (``apply``,
``diff``, ``wait``, ``prune``) and take a ``Manager``; this module holds what they share,
including ``Desired``, an object ready to send (our member label added, its policy and
hash computed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from lockgate.errors import LockgateError, RenderError
from lockgate.manifests import K8sObject, ObjectKey
from runner import applyset, normalize, policy
from runner.client import Kube, Resource

FIELD_MANAGER = "lockgate"
DEFAULT_CONCURRENCY = 8

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Desired:
    key: ObjectKey
    body: dict[str, Any]
    policy: policy.ObjectPolicy
    hash: str
    origin: str = ""

    @property
    def api_version(self) -> str:
        return str(self.body["apiVersion"])

    @property
    def version(self) -> str:
        return self.api_version.rsplit("/", 1)[-1]


def prepare(obj: K8sObject, set_id: str) -> Desired:
    """Label the object as a member of the set; read its policy; hash what will be sent.

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
        hash=normalize.content_hash(body),
        origin=obj.origin,
    )


class Manager:
    def __init__(
        self,
        kube: Kube,
        *,
        set_id: str,
        field_manager: str = FIELD_MANAGER,
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        self.kube = kube
        self.set_id = set_id
        self.field_manager = field_manager
        self.concurrency = max(1, concurrency)

    @property
    def member_selector(self) -> str:
        return f"{applyset.PART_OF_LABEL}={self.set_id}"

    def resource(self, api_version: str, kind: str) -> Resource:
        return self.kube.resource(api_version, kind)

    def each(self, func: Callable[[T], R], items: Sequence[T]) -> list[R | LockgateError]:
        """``func`` over ``items`` on the pool, in order; a ``LockgateError`` is returned, not raised."""

        def guarded(item: T) -> R | LockgateError:
            try:
                return func(item)
            except LockgateError as exc:
                return exc

        if len(items) <= 1 or self.concurrency == 1:
            return [guarded(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(items))) as pool:
            return list(pool.map(guarded, items))


def failures(results: Iterable[object]) -> list[LockgateError]:
    return [r for r in results if isinstance(r, LockgateError)]
