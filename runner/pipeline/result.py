"""What one pass returns: the change set, health, the revision applied, a rollback, the pass's cost.

The table (``report``), the ``--output json`` document and the exit code are all derived
from a ``Result``; a pass never raises ``LockgateError``, it stores it here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockgate.diff.changeset import ChangeSet
from lockgate.errors import LockgateError
from runner.pipeline.timings import Timings
from runner.plan.health import Health


@dataclass
class Result:
    name: str
    namespace: str = ""
    url: str = ""
    digest: str = ""
    revision: str = ""
    verified_by: str = ""
    changeset: ChangeSet = field(default_factory=ChangeSet)
    health: dict[str, Health] = field(default_factory=dict)
    error: LockgateError | None = None
    requests: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    dry_run: bool = False
    #: the revision that failed its health checks and was rolled back (or that ``lockgate rollback`` left)
    rolled_back_from: str = ""
    #: the revision applied instead
    rolled_back_to: str = ""
    #: what the rollback changed (``changeset`` is what the failed revision's pass changed)
    rollback_changes: ChangeSet | None = None
    #: why the pass applied nothing: its digest was rolled back, or its Lease is held by another
    #: runner ("held by <holder>"); not a failure
    skipped: str = ""
    #: what else a person should know (a rejected digest retried, a digest from outside the history)
    notes: list[str] = field(default_factory=list)
    #: the artifact's origin annotations (``org.opencontainers.image.source`` and ``.revision``)
    source_url: str = ""
    source_revision: str = ""
    #: the inventory's digest and last result status before this pass (what was reported already)
    previous_digest: str = ""
    previous_status: str = ""
    #: what the pass waits for: a digest lacking the attestations ``spec.verify.attestations``
    #: require ("v1.1.0@sha256:...: waiting for healthy in staging, 1h soak: 23m left")
    waiting: str = ""
    #: what the inventory said the sync waited for before this pass (what was reported already)
    previous_waiting: str = ""
    #: the health attestation this pass wrote (or found already written), ``spec.attest``
    attested: str = ""
    #: what let the digest through ``spec.verify.attestations``: one line per requirement
    admitted: tuple[str, ...] = ()
    #: drift this pass found and left (``driftDetection.mode: warn``) that differs from what was
    #: reported before: the report (Event, notification); empty when none or already reported
    drift_reported: str = ""
    #: where the pass's time went (``runner.pipeline.timings``)
    timings: Timings = field(default_factory=Timings)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "url": self.url,
            "digest": self.digest,
            "revision": self.revision,
            "verifiedBy": self.verified_by,
            "dryRun": self.dry_run,
            "skipped": self.skipped or None,
            "ok": self.ok,
            "error": None
            if self.error is None
            else {"message": self.error.message, "exitCode": int(self.error.exit_code)},
            **self.changeset.to_json(),
            "health": {
                key: {"status": h.status.value, "message": h.message} for key, h in self.health.items()
            },
            "requests": dict(self.requests),
            "seconds": round(self.seconds, 3),
            "timings": self.timings.to_json(),
            "rolledBackFrom": self.rolled_back_from,
            "rolledBackTo": self.rolled_back_to,
            "notes": list(self.notes),
            "waiting": self.waiting or None,
            "attested": self.attested or None,
            "admittedBy": list(self.admitted),
        }
