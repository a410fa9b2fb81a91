"""Kind ordering and staging for server-side apply, as Flux's ``ssa`` orders them.

Pure functions over ``ObjectKey``s: the apply manager asks which stage an object belongs
to and in which order to send it; the prune step asks for the reverse. Stage 1 holds
what other objects depend on (CRDs, Namespaces, ClusterRoles) and is followed by a wait
for CRDs to be Established; stage 2 the ``*Class`` kinds; stage 3 everything else.
Admission webhooks go last so they never intercept the objects of their own set.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import IntEnum

from lockgate.manifests import ObjectKey


class Stage(IntEnum):
    CLUSTER = 1
    CLASSES = 2
    REST = 3


STAGE_ONE_KINDS = frozenset({"CustomResourceDefinition", "Namespace", "ClusterRole"})
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")

#: Flux's apply order (fluxcd/pkg ssa sort.go); kinds not listed come after, by group and kind
KIND_ORDER: tuple[str, ...] = (
    "CustomResourceDefinition",
    "Namespace",
    "ClusterRole",
    "ClusterClass",
    "RuntimeClass",
    "PriorityClass",
    "StorageClass",
    "VolumeSnapshotClass",
    "IngressClass",
    "GatewayClass",
    "ClusterRoleBinding",
    "ResourceQuota",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "Secret",
    "Service",
    "LimitRange",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
)
_RANK = {kind: index for index, kind in enumerate(KIND_ORDER)}


def stage_of(key: ObjectKey) -> Stage:
    if key.kind in STAGE_ONE_KINDS:
        return Stage.CLUSTER
    if key.kind.endswith("Class"):
        return Stage.CLASSES
    return Stage.REST


def sort_key(key: ObjectKey) -> tuple[int, str, str, str, str]:
    """Known kinds by Flux's rank, then unknown kinds by group and kind, webhooks last."""
    if key.kind in WEBHOOK_KINDS:
        rank = len(KIND_ORDER) + 1 + WEBHOOK_KINDS.index(key.kind)
        return rank, "", key.kind, key.namespace, key.name
    rank = _RANK.get(key.kind, len(KIND_ORDER))
    group = key.group if rank == len(KIND_ORDER) else ""
    return rank, group, key.kind, key.namespace, key.name


def _kind_rank(key: ObjectKey) -> tuple[int, str, str]:
    return sort_key(key)[:3]


def staged(keys: Iterable[ObjectKey]) -> list[tuple[Stage, list[ObjectKey]]]:
    """The non-empty stages in apply order, each sorted in apply order."""
    by_stage: dict[Stage, list[ObjectKey]] = {}
    for key in keys:
        by_stage.setdefault(stage_of(key), []).append(key)
    return [(stage, sorted(by_stage[stage], key=sort_key)) for stage in sorted(by_stage)]


def waves(keys: Sequence[ObjectKey]) -> list[list[ObjectKey]]:
    """Split sorted keys into runs of one kind: a wave may be sent concurrently, waves in order."""
    result: list[list[ObjectKey]] = []
    for key in keys:
        if result and _kind_rank(result[-1][0]) == _kind_rank(key):
            result[-1].append(key)
        else:
            result.append([key])
    return result


def deletion_order(keys: Iterable[ObjectKey]) -> list[ObjectKey]:
    """Reverse apply order: webhooks first, workloads before their config, CRDs and Namespaces last."""
    return [key for _, stage_keys in reversed(staged(keys)) for key in reversed(stage_keys)]
