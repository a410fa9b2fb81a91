"""A preview as values: per cluster and sync, what runs there now and what the next pass changes.

Pure. ``runner.pipeline.preview`` fills these in; the table, the Markdown of the pull-request
comment and ``--output json`` are all rendered from them (``report``, ``markdown``). The JSON
field names are documented in docs/preview.md and kept stable: ``to_json`` is the contract.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from lockgate.diff.changeset import Action, ChangeSet
from lockgate.errors import LockgateError


class Basis(enum.StrEnum):
    """What the preview compared with: the digest the cluster attested, or a stand-in."""

    #: the digest the cluster's runner last attested healthy for the sync, verified
    ATTESTED = "attestation"
    #: the digest the sync's tag (or semver range) names now: not proven to run there
    TAG = "tag"
    #: nothing: every object is new
    NONE = "none"


@dataclass(frozen=True)
class Running:
    """What the cluster runs for the sync, as far as the registry tells, and how that is known."""

    basis: Basis
    digest: str = ""
    #: ``<tag>@sha256:...`` as a pass records it, or the digest
    revision: str = ""
    #: when the cluster attested it healthy, and whose key verified that attestation
    attested_at: str = ""
    attested_by: str = ""
    #: who signed the artifact, by the sync's own ``verify`` policy ("" when not checked)
    verified_by: str = ""
    #: why the basis is what it is (no key given, an attestation refused, the signature...)
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "basis": self.basis.value,
            "digest": self.digest,
            "revision": self.revision,
            "attestedAt": self.attested_at,
            "attestedBy": self.attested_by,
            "verifiedBy": self.verified_by,
            "notes": list(self.notes),
        }


class HazardKind(enum.StrEnum):
    #: an immutable field changed and the object is forced: deleted, then created again
    RECREATE = "recreate"
    #: an immutable field changed without force: the pass stops before its first write
    IMMUTABLE = "immutable"
    #: more is pruned than the mass-prune guard allows: the pass stops before its first write
    MASS_PRUNE = "mass-prune"
    CRD_DELETION = "crd-deletion"
    NAMESPACE_DELETION = "namespace-deletion"
    #: who may sign changes (the sync's ``verify``), or the running digest fails the new policy
    VERIFY_POLICY = "verify-policy"
    #: hooks that will run (a Job each, before, between or after the objects)
    HOOKS = "hooks"
    #: objects go in several waves, each healthy before the next
    WAVES = "waves"


@dataclass(frozen=True)
class Hazard:
    kind: HazardKind
    message: str
    #: the object it is about ("" for the whole sync)
    object: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "object": self.object, "message": self.message}


@dataclass(frozen=True)
class HookRun:
    """A hook due in the next pass: the phases it runs in, and its wave."""

    object: str
    phases: tuple[str, ...]
    wave: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"object": self.object, "phases": list(self.phases), "wave": self.wave}


@dataclass
class Target:
    """One sync of one cluster's configuration, previewed."""

    cluster: str
    #: the configuration file it was read from
    config: str
    sync: str
    url: str
    running: Running = field(default_factory=lambda: Running(Basis.NONE))
    changeset: ChangeSet = field(default_factory=ChangeSet)
    hooks: tuple[HookRun, ...] = ()
    #: (wave, number of ordinary objects) when there is more than one wave
    waves: tuple[tuple[int, int], ...] = ()
    hazards: tuple[Hazard, ...] = ()
    notes: tuple[str, ...] = ()
    #: the next pass stops before its first write, and why ("" when it goes through)
    refused: str = ""
    #: a preview that could not be made for this target (rendering PATH failed...)
    error: LockgateError | None = None

    @property
    def changed(self) -> bool:
        return self.error is None and (self.changeset.changed or bool(self.hooks))

    def counts(self) -> dict[str, int]:
        return self.changeset.counts()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "cluster": self.cluster,
            "config": self.config,
            "sync": self.sync,
            "url": self.url,
            "running": self.running.to_json(),
            "changed": self.changed,
            "refused": self.refused,
            "counts": self.counts(),
            "objects": [e.to_json() for e in self.changeset.entries if e.action is not Action.UNCHANGED],
            "unchanged": [str(e.key) for e in self.changeset.of(Action.UNCHANGED)],
            "hooks": [h.to_json() for h in self.hooks],
            "waves": [{"wave": wave, "objects": count} for wave, count in self.waves],
            "hazards": [h.to_json() for h in self.hazards],
            "notes": list(self.notes),
        }
        if self.error is not None:
            data["error"] = {"message": self.error.message, "exitCode": int(self.error.exit_code)}
        return data


@dataclass
class Preview:
    """Every target of a preview, in the order of ``--cluster`` and of each file's Syncs."""

    path: str
    targets: list[Target] = field(default_factory=list)
    #: what the whole preview should say (a sync matched by its source annotation...)
    notes: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return any(t.changed for t in self.targets)

    @property
    def error(self) -> LockgateError | None:
        """The first target's error: its exit code is the command's, as ``reconcile`` does."""
        return next((t.error for t in self.targets if t.error is not None), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "changed": self.changed,
            "notes": list(self.notes),
            "targets": [t.to_json() for t in self.targets],
        }
