"""Per-object policy read from annotations (or labels): how to apply, force, prune, adopt, drift.

Lockgate's own keys are ``lockgate.dev/<name>``; Flux's ``kustomize.toolkit.fluxcd.io/<name>``
keys mean the same, so a Flux user's manifests migrate unchanged. Values match
case-insensitively, as in Flux. When both are present, lockgate's key wins.

Helm's ``helm.sh/resource-policy: keep`` means what it means to Helm: the object is never
deleted, neither by prune nor with its sync (``push --render`` sets it on the CRDs of a
chart's ``crds/``). A Sync's ``pruneCRDs`` lifts it for CustomResourceDefinitions only
(``deletable``); ``prune: disabled`` is never lifted.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from lockgate.errors import RenderError

PREFIXES = ("lockgate.dev/", "kustomize.toolkit.fluxcd.io/")
#: HelmRelease's per-object opt-out of drift detection, read beside ``lockgate.dev/driftDetection``
HELM_DRIFT_DETECTION = "helm.toolkit.fluxcd.io/driftDetection"
#: Helm's "never delete this object" (``helm.sh/resource-policy: keep``), annotations only as Helm reads it
HELM_RESOURCE_POLICY = "helm.sh/resource-policy"
HELM_KEEP = "keep"
CRD_KIND = "CustomResourceDefinition"
DISABLED = "disabled"
ENABLED = "enabled"


class SSAMode(Enum):
    """``Override`` (default): lockgate owns the object's fields and takes over kubectl's.
    ``Merge``: apply, but leave fields other managers own alone (no takeover).
    ``IfNotPresent``: create once, never update. ``Ignore``: never apply, never prune."""

    OVERRIDE = "override"
    MERGE = "merge"
    IF_NOT_PRESENT = "ifnotpresent"
    IGNORE = "ignore"


@dataclass(frozen=True)
class ObjectPolicy:
    ssa: SSAMode = SSAMode.OVERRIDE
    force: bool = False
    prune: bool = True
    reconcile: bool = True
    #: ``lockgate.dev/adopt: enabled``: take the object from another ApplySet (another sync)
    adopt: bool = False
    #: ``lockgate.dev/driftDetection: disabled``: changes made in the cluster are neither
    #: reported nor corrected (``runner.plan.drift``)
    drift_detection: bool = True
    #: ``helm.sh/resource-policy: keep``: Helm never deletes it, nor do prune and deletion
    helm_keep: bool = False

    @property
    def applies(self) -> bool:
        return self.reconcile and self.ssa is not SSAMode.IGNORE

    @property
    def prunable(self) -> bool:
        return self.prune and not self.helm_keep and self.ssa is not SSAMode.IGNORE

    @property
    def takes_over(self) -> bool:
        return self.ssa is SSAMode.OVERRIDE


DEFAULT = ObjectPolicy()


def _lookup(metadata: dict[str, Any], name: str) -> str | None:
    for prefix in PREFIXES:
        for field in ("annotations", "labels"):
            values = metadata.get(field)
            if isinstance(values, dict) and isinstance(values.get(prefix + name), str):
                return str(values[prefix + name]).strip().lower()
    return None


def _mentions_policy(metadata: dict[str, Any]) -> bool:
    for field in ("annotations", "labels"):
        values = metadata.get(field)
        if isinstance(values, dict) and any(
            str(key).startswith(PREFIXES) or key in (HELM_DRIFT_DETECTION, HELM_RESOURCE_POLICY)
            for key in values
        ):
            return True
    return False


def _drift_detection(metadata: dict[str, Any]) -> bool:
    """Off when ``lockgate.dev/driftDetection`` or HelmRelease's key says ``disabled``."""
    for key in (PREFIXES[0] + "driftDetection", HELM_DRIFT_DETECTION):
        for field in ("annotations", "labels"):
            values = metadata.get(field)
            if isinstance(values, dict) and isinstance(values.get(key), str):
                return str(values[key]).strip().lower() != DISABLED
    return True


def policy_of(body: dict[str, Any], *, where: str = "") -> ObjectPolicy:
    """The object's policy; an unknown ``ssa`` value is an error naming the object."""
    metadata = body.get("metadata")
    if not isinstance(metadata, dict) or not _mentions_policy(metadata):
        return DEFAULT
    ssa_value = _lookup(metadata, "ssa")
    ssa = SSAMode.OVERRIDE
    if ssa_value is not None:
        try:
            ssa = SSAMode(ssa_value)
        except ValueError:
            allowed = "Override, Merge, IfNotPresent, Ignore"
            raise RenderError(
                f"{where or 'object'}: unknown ssa annotation {ssa_value!r} ({allowed})"
            ) from None
    return ObjectPolicy(
        ssa=ssa,
        force=_lookup(metadata, "force") == ENABLED,
        prune=_lookup(metadata, "prune") != DISABLED,
        reconcile=_lookup(metadata, "reconcile") != DISABLED,
        adopt=_lookup(metadata, "adopt") == ENABLED,
        drift_detection=_drift_detection(metadata),
        helm_keep=_helm_keep(metadata),
    )


def _helm_keep(metadata: dict[str, Any]) -> bool:
    annotations = metadata.get("annotations")
    value = annotations.get(HELM_RESOURCE_POLICY) if isinstance(annotations, dict) else None
    return isinstance(value, str) and value.strip().lower() == HELM_KEEP


def deletable(body: dict[str, Any], *, prune_crds: bool = False) -> bool:
    """Whether prune (or a sync's deletion) may delete the live object ``body``: its policy
    allows it, or it is a CRD Helm would keep and the Sync's ``pruneCRDs`` says to delete it."""
    found = policy_of(body)
    if found.prunable:
        return True
    lifted = prune_crds and found.helm_keep and body.get("kind") == CRD_KIND
    return lifted and found.prune and found.ssa is not SSAMode.IGNORE


def kept_because(body: dict[str, Any]) -> str:
    """Why prune and deletion leave an object that ``deletable`` refused, for their reports."""
    found = policy_of(body)
    if found.helm_keep and found.prune and found.ssa is not SSAMode.IGNORE:
        lift = " (the Sync's pruneCRDs deletes it)" if body.get("kind") == CRD_KIND else ""
        return f"kept by Helm's {HELM_RESOURCE_POLICY}: {HELM_KEEP}{lift}"
    return "pruning disabled by annotation"
