"""A Kustomization (``kustomize.toolkit.fluxcd.io/v1``) as the apply half of a Sync's spec.

Pure. Most fields have the same name and meaning in a Sync (lockgate's Kustomization-like
parts follow Flux's); the rest are mapped as the research note on Flux migration lays out:
the Kustomization's interval is the sync's ``driftInterval`` (a full re-apply), its timeout
is written as Flux computes it (interval - 30s, at least 30s), ``dependsOn`` names are
rewritten to sync names, and a health check without an apiVersion gets the one of its kind.
A field this module does not know (a newer Flux) is a ``dropped`` row, never ignored.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.plan.fluximport.objects import FluxObject, format_duration, parse_duration, ref_name
from runner.plan.fluximport.report import Report, RowClass

#: Flux's health checks may leave the apiVersion to discovery; lockgate needs it
API_VERSIONS = {
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
    "Pod": "v1",
    "Service": "v1",
    "ConfigMap": "v1",
    "Secret": "v1",
    "Namespace": "v1",
    "ServiceAccount": "v1",
    "PersistentVolumeClaim": "v1",
    "Ingress": "networking.k8s.io/v1",
    "CustomResourceDefinition": "apiextensions.k8s.io/v1",
    "HelmRelease": "helm.toolkit.fluxcd.io/v2",
    "Kustomization": "kustomize.toolkit.fluxcd.io/v1",
    "OCIRepository": "source.toolkit.fluxcd.io/v1",
}
MIN_TIMEOUT = 30.0
#: every spec field of kustomize-controller v1.9.5's Kustomization
KNOWN = frozenset(
    {
        "commonMetadata", "dependsOn", "decryption", "interval", "retryInterval", "kubeConfig", "path",
        "postBuild", "prune", "deletionPolicy", "healthChecks", "namePrefix", "nameSuffix", "patches",
        "images", "serviceAccountName", "sourceRef", "suspend", "targetNamespace", "timeout", "force",
        "wait", "buildMetadata", "components", "ignoreMissingComponents", "healthCheckExprs", "ignore",
    }
)  # fmt: skip


@dataclass
class Applied:
    spec: dict[str, Any] = field(default_factory=dict)
    unsupported: str = ""
    #: objects it names in its own namespace: (kind, field path) -> name
    references: dict[tuple[str, str], str] = field(default_factory=dict)


def _selector(value: Any) -> dict[str, str] | None:
    if not isinstance(value, Mapping):
        return None
    keys = ("group", "version", "kind", "name", "namespace", "labelSelector", "annotationSelector")
    return {k: str(value[k]) for k in keys if value.get(k) not in (None, "")}


def _path(value: Any) -> str | None:
    text = str(value or "").strip()
    if not text:
        return None
    normal = posixpath.normpath(text).lstrip("/")
    return None if normal in (".", "") else normal


def timeout_of(obj: FluxObject) -> float:
    """``Kustomization.GetTimeout``: the timeout, else interval - 30s; never under 30s."""
    interval = parse_duration(str(obj.spec.get("interval", ""))) or 0.0
    given = obj.spec.get("timeout")
    duration = interval - 30.0 if given is None else (parse_duration(str(given)) or 0.0)
    return max(duration, MIN_TIMEOUT)


def _overlays(obj: FluxObject, spec: dict[str, Any]) -> None:
    for name in ("targetNamespace", "namePrefix", "nameSuffix"):
        if obj.spec.get(name):
            spec[name] = str(obj.spec[name])
    patches = []
    for patch in obj.spec.get("patches") or []:
        entry: dict[str, Any] = {"patch": str(patch.get("patch", ""))}
        target = _selector(patch.get("target"))
        if target:
            entry["target"] = target
        patches.append(entry)
    if patches:
        spec["patches"] = patches
    images = []
    for image in obj.spec.get("images") or []:
        keys = ("name", "newName", "newTag", "digest")
        images.append({k: str(image[k]) for k in keys if image.get(k) not in (None, "")})
    if images:
        spec["images"] = images
    components = [str(c) for c in obj.spec.get("components") or []]
    if components:
        spec["components"] = components
    if obj.spec.get("ignoreMissingComponents"):
        spec["ignoreMissingComponents"] = True
    metadata = obj.spec.get("commonMetadata") or {}
    common = {
        k: {str(a): str(b) for a, b in sorted((metadata.get(k) or {}).items())}
        for k in ("labels", "annotations")
        if metadata.get(k)
    }
    if common:
        spec["commonMetadata"] = common


def _health(obj: FluxObject, report: Report, spec: dict[str, Any]) -> None:
    checks = []
    for index, check in enumerate(obj.spec.get("healthChecks") or []):
        kind = str(check.get("kind", ""))
        api_version = str(check.get("apiVersion") or API_VERSIONS.get(kind, ""))
        if not api_version:
            report.add(
                obj.ref,
                f"spec.healthChecks[{index}]",
                RowClass.DROPPED,
                f"{kind}/{check.get('name')}: no apiVersion (Flux asks discovery; lockgate needs it): add it",
            )
            continue
        entry = {"apiVersion": api_version, "kind": kind, "name": str(check.get("name", ""))}
        if check.get("namespace"):
            entry["namespace"] = str(check["namespace"])
        checks.append(entry)
    if checks:
        spec["healthChecks"] = checks
    exprs = []
    for expr in obj.spec.get("healthCheckExprs") or []:
        keys = ("apiVersion", "kind", "current", "inProgress", "failed")
        exprs.append({k: str(expr[k]) for k in keys if expr.get(k) not in (None, "")})
    if exprs:
        spec["healthCheckExprs"] = exprs


def _post_build(obj: FluxObject, applied: Applied) -> None:
    post = obj.spec.get("postBuild")
    if not isinstance(post, Mapping):
        return
    result: dict[str, Any] = {}
    substitute = post.get("substitute") or {}
    if substitute:
        result["substitute"] = {str(k): str(v) for k, v in sorted(substitute.items())}
    sources = []
    for index, ref in enumerate(post.get("substituteFrom") or []):
        entry: dict[str, Any] = {"kind": str(ref.get("kind", "")), "name": str(ref.get("name", ""))}
        if ref.get("optional"):
            entry["optional"] = True
        sources.append(entry)
        applied.references[(entry["kind"], f"spec.postBuild.substituteFrom[{index}]")] = entry["name"]
    if sources:
        result["substituteFrom"] = sources
    if str(post.get("substituteStrategy") or "WithVariables") != "WithVariables":
        result["substituteStrategy"] = str(post["substituteStrategy"])
    if result:
        applied.spec["postBuild"] = result


def _decryption(obj: FluxObject, report: Report, applied: Applied) -> None:
    decryption = obj.spec.get("decryption")
    if not isinstance(decryption, Mapping):
        return
    if decryption.get("serviceAccountName"):
        applied.unsupported = (
            "decryption.serviceAccountName: cloud KMS keys by workload identity; lockgate decrypts with "
            "age keys"
        )
        return
    entry: dict[str, Any] = {"provider": str(decryption.get("provider") or "sops")}
    secret = ref_name(decryption.get("secretRef"))
    if secret:
        entry["secretRef"] = {"name": secret}
        applied.references[("Secret", "spec.decryption.secretRef")] = secret
    applied.spec["decryption"] = entry
    report.add(
        obj.ref,
        "spec.decryption",
        RowClass.SEMANTIC,
        "lockgate decrypts with the age identities of the Secret's *.agekey entries only; PGP (*.asc), "
        "Vault and cloud KMS entries are not used",
    )


def _depends_on(
    obj: FluxObject, report: Report, spec: dict[str, Any], sync_of: Callable[[str, str], str | None]
) -> None:
    names = []
    for index, dep in enumerate(obj.spec.get("dependsOn") or []):
        namespace = str(dep.get("namespace") or obj.namespace)
        target = sync_of(namespace, str(dep.get("name", "")))
        if target is None:
            report.add(
                obj.ref,
                f"spec.dependsOn[{index}]",
                RowClass.DROPPED,
                f"Kustomization {namespace}/{dep.get('name')} is not imported as a sync",
            )
            continue
        if dep.get("readyExpr"):
            report.add(
                obj.ref,
                f"spec.dependsOn[{index}].readyExpr",
                RowClass.SEMANTIC,
                "lockgate waits for the dependency's last pass to be healthy; the CEL readiness is not used",
            )
        names.append(target)
    if names:
        spec["dependsOn"] = names


def map_kustomization(
    obj: FluxObject, report: Report, *, sync_of: Callable[[str, str], str | None]
) -> Applied:
    """The Sync spec fields of ``obj``; ``sync_of(namespace, name)`` names another
    Kustomization's sync (None when it is not imported)."""
    applied = Applied()
    spec = applied.spec
    if obj.spec.get("kubeConfig"):
        applied.unsupported = "kubeConfig: lockgate applies to the cluster its runner runs in"
    path = _path(obj.spec.get("path"))
    if path:
        spec["path"] = path
    spec["prune"] = bool(obj.spec.get("prune"))
    for flag in ("wait", "force"):
        if obj.spec.get(flag):
            spec[flag] = True
    spec["timeout"] = format_duration(timeout_of(obj))
    interval = parse_duration(str(obj.spec.get("interval", "")))
    if interval is not None:
        spec["driftInterval"] = format_duration(max(interval, 1.0))
    retry = obj.spec.get("retryInterval")
    if retry is not None and (seconds := parse_duration(str(retry))) is not None:
        spec["retryInterval"] = format_duration(max(seconds, 1.0))
        report.add(
            obj.ref,
            "spec.retryInterval",
            RowClass.SEMANTIC,
            "Flux retries at this fixed interval; lockgate starts here and doubles it per failure, up to "
            "interval",
        )
    policy = str(obj.spec.get("deletionPolicy") or "MirrorPrune")
    if policy != "MirrorPrune":
        spec["deletionPolicy"] = policy
    if obj.spec.get("suspend"):
        spec["suspend"] = True
        report.add(
            obj.ref,
            "spec.suspend",
            RowClass.SEMANTIC,
            "suspended in Flux, so the sync is written suspended: if it was suspended for the migration, "
            "import before flux suspend (or remove suspend from the sync once adopted)",
        )
    account = obj.spec.get("serviceAccountName")
    if account:
        spec["serviceAccountName"] = str(account)
        applied.references[("ServiceAccount", "spec.serviceAccountName")] = str(account)
    _overlays(obj, spec)
    _health(obj, report, spec)
    _post_build(obj, applied)
    _decryption(obj, report, applied)
    _depends_on(obj, report, spec, sync_of)
    ignore = []
    for rule in obj.spec.get("ignore") or []:
        entry: dict[str, Any] = {"paths": [str(p) for p in rule.get("paths") or []]}
        target = _selector(rule.get("target"))
        if target:
            entry["target"] = target
        ignore.append(entry)
    if ignore:
        spec["ignore"] = ignore
    if obj.spec.get("buildMetadata"):
        report.add(
            obj.ref,
            "spec.buildMetadata",
            RowClass.DROPPED,
            "kustomize's origin and transformer annotations are not added",
        )
    for unknown in sorted(set(obj.spec) - KNOWN):
        report.add(obj.ref, f"spec.{unknown}", RowClass.DROPPED, "a field lockgate import does not know")
    return applied
