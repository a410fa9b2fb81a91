"""Which changes the API server refuses as immutable, without a cluster: a table of built-in kinds.

Pure. A pass learns it from the server (``KubeError.is_immutable`` on the pre-flight dry run)
and then recreates the object when forced, or stops before any write. A preview has no server,
so it reads the field changes (``lockgate.diff.fields``, the paths a person reads) against this
table: the fields Kubernetes' validation refuses to update on its built-in kinds (a workload's
selector, a StatefulSet's spec outside the fields it may change, a Job's template, a binding's
``roleRef``, a PersistentVolumeClaim's spec but its requests, an immutable ConfigMap's data...).
Some refusals are worded without "immutable" (a binding's ``roleRef``, a StatefulSet's spec, a
StorageClass): a pass does not recreate those even when forced, and the table says so
(``recreatable``). A custom resource's own immutability (CEL ``x-kubernetes-validations``,
webhooks) is not known here; the preview's documentation says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lockgate.diff.fields import ABSENT, FieldChange


@dataclass(frozen=True)
class Rule:
    #: paths (and everything under them) that may not change
    fixed: tuple[str, ...] = ()
    #: with ``spec_except``: every path under ``spec`` may not change but these
    spec_except: tuple[str, ...] | None = None
    #: the server's refusal says "immutable", which is how a pass knows to recreate a forced
    #: object (``KubeError.is_immutable``); otherwise the pass fails, forced or not
    recreatable: bool = True


RULES: Mapping[tuple[str, str], Rule] = {
    ("apps", "Deployment"): Rule(fixed=("spec.selector",)),
    ("apps", "ReplicaSet"): Rule(fixed=("spec.selector",)),
    ("apps", "DaemonSet"): Rule(fixed=("spec.selector",)),
    # "updates to statefulset spec for fields other than ... are forbidden"
    ("apps", "StatefulSet"): Rule(
        recreatable=False,
        spec_except=(
            "spec.replicas",
            "spec.ordinals",
            "spec.template",
            "spec.updateStrategy",
            "spec.revisionHistoryLimit",
            "spec.persistentVolumeClaimRetentionPolicy",
            "spec.minReadySeconds",
        ),
    ),
    ("batch", "Job"): Rule(fixed=("spec.selector", "spec.template", "spec.completionMode")),
    # "cannot change roleRef"
    ("rbac.authorization.k8s.io", "RoleBinding"): Rule(fixed=("roleRef",), recreatable=False),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): Rule(fixed=("roleRef",), recreatable=False),
    ("", "PersistentVolumeClaim"): Rule(
        spec_except=("spec.resources.requests", "spec.volumeAttributesClassName")
    ),
    ("", "Secret"): Rule(fixed=("type",)),
    # "updates to parameters are forbidden"
    ("storage.k8s.io", "StorageClass"): Rule(
        fixed=("parameters", "provisioner", "reclaimPolicy", "volumeBindingMode"), recreatable=False
    ),
}
#: the data of a ConfigMap or Secret marked ``immutable: true``
_DATA = ("data", "binaryData", "stringData", "immutable")


def under(path: str, prefix: str) -> bool:
    """``path`` is ``prefix`` or a field or item inside it (``spec.selector.matchLabels.app``)."""
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


def _refused(path: str, rule: Rule) -> bool:
    if any(under(path, fixed) for fixed in rule.fixed):
        return True
    if rule.spec_except is not None and under(path, "spec") and path != "spec":
        return not any(under(path, allowed) for allowed in rule.spec_except)
    return False


@dataclass(frozen=True)
class Refusal:
    paths: tuple[str, ...]
    #: a forced object is recreated by the pass; else the pass fails, forced or not
    recreatable: bool


def refused_changes(
    group: str, kind: str, before: Mapping[str, Any], changes: Iterable[FieldChange]
) -> Refusal | None:
    """The paths among ``changes`` (from ``before`` to the new body) the API server refuses to
    update on ``kind``: the change needs the object deleted and created again."""
    found: list[str] = []
    rule = RULES.get((group, kind))
    immutable_data = kind in ("ConfigMap", "Secret") and not group and before.get("immutable") is True
    for change in changes:
        path = change.path
        if immutable_data and any(under(path, field) for field in _DATA):
            found.append(path)
        elif group == "" and kind == "Service" and path in ("spec.clusterIP", "spec.clusterIPs"):
            # a Service keeps the address it was given; only a different one named on both sides
            if change.before is not ABSENT and change.after is not ABSENT:
                found.append(path)
        elif rule is not None and _refused(path, rule):
            found.append(path)
    if not found:
        return None
    recreatable = rule is None or rule.recreatable or immutable_data
    return Refusal(tuple(found), recreatable)
