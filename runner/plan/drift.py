"""``spec.driftDetection``: what a pass does with an object someone else changed.

Pure. Drift is an object that differs from what the sync last applied to it while the
artifact's version of it has not changed (the hash of what would be sent equals the hash the
inventory recorded). The ``mode`` follows HelmRelease's ``driftDetection.mode``
(``fluxcd/helm-controller`` ``api/v2``), with the default lockgate (and Flux's Kustomization)
has always had: ``enabled`` corrects drift; ``warn`` reports it (the changeset's entries marked
``drifted``, the ``Drifted`` record on the inventory, a ``DriftDetected`` Warning Event, a
notification and ``lockgate_drift_detected_total``) and changes nothing; ``disabled`` neither
looks nor corrects. An object labelled or annotated ``lockgate.dev/driftDetection: disabled``
(or HelmRelease's ``helm.toolkit.fluxcd.io/driftDetection: disabled``) is left as under
``disabled`` whatever the mode. A new version of an object (another digest, other variables) is
applied whole in every mode: the modes only decide about changes made in the cluster.

``Record`` is what the inventory keeps (HelmRelease's ``Drifted`` condition): set when a pass
left drift, kept as long as the same drift is found (so it is reported once: one Event, one
notification), dropped when a pass finds none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from lockgate.diff.changeset import Action, Entry

#: the Warning Event's reason, HelmRelease's word
DETECTED = "DriftDetected"
#: the changeset reasons of objects a pass left drifted
NOT_CORRECTED = "drifted; not corrected (driftDetection.mode: warn)"
NOT_RECREATED = "deleted from the cluster; not recreated (driftDetection.mode: warn)"


class Mode(Enum):
    ENABLED = "enabled"
    WARN = "warn"
    DISABLED = "disabled"


@dataclass(frozen=True)
class Record:
    """The drift the last pass found and left (``drifted`` in the inventory)."""

    #: RFC 3339 UTC: when this drift was first found
    time: str
    revision: str
    objects: int
    #: whole: one line per object, then its changed fields
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "revision": self.revision,
            "objects": self.objects,
            "message": self.message,
        }

    @classmethod
    def from_json(cls, doc: Any) -> Record | None:
        if not isinstance(doc, dict) or not doc.get("message"):
            return None
        objects = doc.get("objects", 0)
        return cls(
            time=str(doc.get("time", "")),
            revision=str(doc.get("revision", "")),
            objects=objects if isinstance(objects, int) else 0,
            message=str(doc["message"]),
        )


def message(entries: Sequence[Entry], *, revision: str) -> str:
    """The report of drifted ``entries``: a header, then each object and what a correction
    would change (``before -> after``: the live value, then the artifact's)."""
    count = f"{len(entries)} object" + ("s" if len(entries) != 1 else "")
    lines = [f"{count} drifted from {revision}; not corrected (driftDetection.mode: warn):"]
    for entry in entries:
        if entry.action is Action.SKIPPED:
            lines.append(f"{entry.key}: deleted from the cluster")
            continue
        lines.append(f"{entry.key}:" if entry.changes else f"{entry.key}: {entry.reason}")
        lines.extend(f"  {change}" for change in entry.changes)
    return "\n".join(lines)


def found(entries: Sequence[Entry], *, revision: str, now: str, before: Record | None) -> Record | None:
    """The record after a pass whose changeset holds ``entries``: None without drift, ``before``
    when the drift is the same (its first time kept), else a new record."""
    drifted = [e for e in entries if e.drifted]
    if not drifted:
        return None
    text = message(drifted, revision=revision)
    if before is not None and before.message == text:
        return before
    return Record(time=now, revision=revision, objects=len(drifted), message=text)
