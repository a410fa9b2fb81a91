"""Per-object policy read from annotations (or labels): how to apply, force, prune, adopt, drift.

Lockgate's own keys are ``lockgate.dev/<name>``; Flux's ``kustomize.toolkit.fluxcd.io/<name>``
keys mean the same, so a Flux user's manifests migrate unchanged. Values match
case-insensitively, as in Flux. When both are present, lockgate's key wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from lockgate.errors import RenderError

PREFIXES = ("lockgate.dev/", "kustomize.toolkit.fluxcd.io/")
#: HelmRelease's per-object opt-out of drift detection, read beside ``lockgate.dev/driftDetection``
HELM_DRIFT_DETECTION = "helm.toolkit.fluxcd.io/driftDetection"
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

    @property
    def applies(self) -> bool:
        return self.reconcile and self.ssa is not SSAMode.IGNORE

    @property
    def prunable(self) -> bool:
        return self.prune and self.ssa is not SSAMode.IGNORE

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
            str(key).startswith(PREFIXES) or key == HELM_DRIFT_DETECTION for key in values
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
    )
