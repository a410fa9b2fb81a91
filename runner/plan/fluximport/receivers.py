"""Receivers (``notification.toolkit.fluxcd.io/v1``) as the Runner's registry receivers.

Pure. A Receiver's hook path is ``/hook/`` + hex(sha256(token + name + namespace)); lockgate
derives it the same way, and ``pathNamespace`` keeps the Receiver's namespace in it, so the
webhook URL set in the registry stays valid while the token's Secret is read from the runner
namespace. Its resources (OCIRepositories, Kustomizations) become the syncs that read them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.plan.fluximport.alerts import Imported
from runner.plan.fluximport.objects import FluxObject, ref_name
from runner.plan.fluximport.report import Report, RowClass

TYPES = frozenset({"dockerhub", "quay", "harbor", "nexus"})
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass
class Receivers:
    entries: list[dict[str, Any]] = field(default_factory=list)
    #: Secrets the entries name: (namespace, field, object, name)
    secrets: list[tuple[str, str, str, str]] = field(default_factory=list)


def _targets(receiver: FluxObject, report: Report, imported: Sequence[Imported]) -> list[str]:
    syncs: list[str] = []
    for index, resource in enumerate(receiver.spec.get("resources") or []):
        kind, name = str(resource.get("kind", "")), str(resource.get("name", ""))
        namespace = str(resource.get("namespace") or receiver.namespace)
        labels = resource.get("matchLabels") or {}
        where = f"spec.resources[{index}]"
        if kind == "OCIRepository":
            hits = [
                i.sync for i in imported if i.source[0] == namespace and (name == "*" or i.source[1] == name)
            ]
            if labels:
                report.add(
                    receiver.ref,
                    f"{where}.matchLabels",
                    RowClass.DROPPED,
                    "every OCIRepository of the namespace",
                )
        elif kind == "Kustomization":
            hits = [
                i.sync
                for i in imported
                if i.namespace == namespace
                and (name == "*" or i.name == name)
                and all(i.labels.get(k) == str(v) for k, v in labels.items())
            ]
        else:
            why = "image automation runs in CI" if kind.startswith("Image") else "not a source of a sync"
            report.add(receiver.ref, where, RowClass.DROPPED, f"{kind} {namespace}/{name}: {why}")
            continue
        if not hits:
            report.add(receiver.ref, where, RowClass.DROPPED, f"{kind} {namespace}/{name} is not imported")
        syncs += hits
    return sorted(set(syncs))


def map_receivers(receivers: Sequence[FluxObject], imported: Sequence[Imported], report: Report) -> Receivers:
    out = Receivers()
    names: set[str] = set()
    for receiver in sorted(receivers, key=lambda r: r.key):
        kind = str(receiver.spec.get("type", ""))
        if receiver.spec.get("suspend"):
            report.add(receiver.ref, "spec.suspend", RowClass.DROPPED, "suspended: not carried")
            continue
        if kind not in TYPES:
            report.add(
                receiver.ref,
                "spec.type",
                RowClass.UNSUPPORTED,
                f"{kind!r}: lockgate receives {', '.join(sorted(TYPES))} pushes on Flux's paths; forge "
                "pushes are not needed (CI pushes the artifact, a registry receiver or the interval picks it "
                "up)",
            )
            continue
        if not _NAME.match(receiver.name) or len(receiver.name) > 63 or receiver.name in names:
            report.add(
                receiver.ref,
                "metadata.name",
                RowClass.UNSUPPORTED,
                "its hook path needs this name, and lockgate's receiver names are DNS labels, unique per "
                "runner",
            )
            continue
        secret = ref_name(receiver.spec.get("secretRef"))
        if secret is None:
            report.add(receiver.ref, "spec.secretRef", RowClass.UNSUPPORTED, "no token Secret")
            continue
        syncs = _targets(receiver, report, imported)
        if not syncs:  # an empty resources list means every sync in lockgate: never written
            report.add(
                receiver.ref, "spec.resources", RowClass.DROPPED, "names no imported sync: not carried"
            )
            continue
        if receiver.spec.get("resourceFilter"):
            report.add(
                receiver.ref,
                "spec.resourceFilter",
                RowClass.DROPPED,
                "lockgate triggers the listed syncs whose url is the pushed repository",
            )
        names.add(receiver.name)
        out.entries.append(
            {
                "name": receiver.name,
                "type": kind,
                "secretRef": {"name": secret},
                "pathNamespace": receiver.namespace,
                "resources": [{"kind": "Sync", "name": s} for s in syncs],
            }
        )
        out.secrets.append((receiver.namespace, "spec.secretRef", receiver.ref, secret))
    return out
