"""What the last pass did, what keeps a sync from running one, and whether it is ready.

Pure. The inventory (``runner.plan.inventory``) keeps three records besides the applied
revision and its history:

- ``lastAttempt``: the outcome of the last full pass, whatever it was: applied, failed
  before the cluster was touched (a wrong verification key, a missing tag), refused by the
  cluster, unhealthy, rolled back, abandoned at shutdown, or still waiting for health
  (``Progressing``: the pass applied and has not finished its wait). A pass that ends
  exactly as the last one did (same result, digest and message) writes nothing, so ``time``
  is when the sync reached this outcome, as the history's entries and Flux's
  ``lastTransitionTime``;
- ``held``: what ``serve`` found keeping the sync from running a pass at all: it is
  suspended, a ``dependsOn`` sync is not ready, or the source cannot be checked. The next
  pass clears it;
- ``waiting`` (``runner.pipeline.source``): a newer digest lacks the attestations required.

``readiness`` turns them into Flux's Ready condition (``True``, ``False`` or ``Unknown``,
a reason word and the whole message), the one answer ``lockgate status``, the status page
and another replica's ``dependsOn`` check all give.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lockgate.summary import summarise


class Result(StrEnum):
    """How the last pass ended (the history's words, plus the two no history entry ends with)."""

    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    ROLLED_BACK = "RolledBack"
    ROLLBACK_FAILED = "RollbackFailed"
    #: stopped before its next write (shutdown); the next pass converges
    ABANDONED = "Abandoned"
    #: applied, and waiting for health (a pass killed then leaves it so)
    PROGRESSING = "Progressing"


#: ``held`` reasons (Flux's words where Flux has one)
SUSPENDED = "Suspended"
DEPENDENCY_NOT_READY = "DependencyNotReady"
ARTIFACT_FAILED = "ArtifactFailed"
#: Ready reasons of a pass's outcome (the failures' are the Events' reasons)
SUCCEEDED_REASON = "ReconciliationSucceeded"
PROGRESSING_REASON = "Progressing"
NEVER_RAN = "NotRunYet"


@dataclass(frozen=True)
class Attempt:
    result: Result
    #: RFC 3339 UTC: when the sync reached this outcome (see the module docstring)
    time: str
    revision: str = ""
    digest: str = ""
    #: the Event reason of a failure (``VerificationFailed``, ``ApplyFailed``...)
    reason: str = ""
    #: the whole message: the error with every object it names, or the change summary
    message: str = ""
    #: the exit code ``lockgate reconcile`` exits with for this outcome
    exit_code: int = 0
    #: the signer the pass verified ``digest`` with (a waiting pass has no history entry yet)
    verified_by: str = ""

    def same(self, other: Attempt | None) -> bool:
        """Whether ``other`` tells the same outcome (a success of one digest is one outcome,
        whatever each pass changed)."""
        if other is None or (other.result, other.digest) != (self.result, self.digest):
            return False
        return self.result is Result.SUCCEEDED or (other.message, other.reason) == (self.message, self.reason)

    def to_json(self) -> dict[str, Any]:
        return {
            "result": self.result.value,
            "time": self.time,
            "revision": self.revision,
            "digest": self.digest,
            "reason": self.reason,
            "message": self.message,
            "exitCode": self.exit_code,
            **({"verifiedBy": self.verified_by} if self.verified_by else {}),
        }

    @classmethod
    def from_json(cls, doc: Any) -> Attempt | None:
        """Lenient: None for anything that is not a record; an unknown result reads as Failed."""
        if not isinstance(doc, dict) or not doc.get("result"):
            return None
        try:
            result = Result(doc["result"])
        except ValueError:
            result = Result.FAILED
        code = doc.get("exitCode", 0)
        return cls(
            result=result,
            time=str(doc.get("time", "")),
            revision=str(doc.get("revision", "")),
            digest=str(doc.get("digest", "")),
            reason=str(doc.get("reason", "")),
            message=str(doc.get("message", "")),
            exit_code=code if isinstance(code, int) else 0,
            verified_by=str(doc.get("verifiedBy", "")),
        )


def settle(previous: Attempt | None, attempt: Attempt) -> Attempt:
    """``attempt``, or ``previous`` when it tells the same outcome (so nothing is written)."""
    return previous if previous is not None and attempt.same(previous) else attempt


@dataclass(frozen=True)
class Held:
    """What keeps ``serve`` from running a pass of the sync."""

    reason: str
    message: str
    time: str = ""

    def same(self, other: Held | None) -> bool:
        return other is not None and (other.reason, other.message) == (self.reason, self.message)

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "message": self.message, "time": self.time}

    @classmethod
    def from_json(cls, doc: Any) -> Held | None:
        if not isinstance(doc, dict) or not doc.get("reason"):
            return None
        return cls(str(doc["reason"]), str(doc.get("message", "")), str(doc.get("time", "")))


@dataclass(frozen=True)
class Readiness:
    """Flux's Ready condition: ``status`` is ``True``, ``False`` or ``Unknown``."""

    status: str
    reason: str
    #: whole; ``summary`` is its one line for a table or the page's overview
    message: str

    @property
    def ready(self) -> bool:
        return self.status == "True"

    def to_json(self, limit: int = 200) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "summary": summarise(self.message, limit),
        }


def readiness(
    *,
    attempt: Attempt | None,
    held: Held | None,
    health: str,
    revision: str,
    waiting: str = "",
    legacy_status: str = "",
) -> Readiness:
    """The Ready condition of a sync from its records (``health`` is the applied digest's
    history word; ``legacy_status`` the ``lastResult`` status an older runner wrote)."""
    if held is not None and held.reason != SUSPENDED:
        return Readiness("False", held.reason, held.message)
    if attempt is None and legacy_status:
        known = legacy_status in {r.value for r in Result}
        attempt = Attempt(Result(legacy_status) if known else Result.FAILED, "", revision)
    if attempt is None:
        return Readiness("False", NEVER_RAN, waiting or "no pass has run yet")
    if attempt.result is Result.ABANDONED:
        return Readiness("Unknown", attempt.reason or "Abandoned", attempt.message)
    if attempt.result is Result.PROGRESSING:
        message = f"applied {attempt.revision or attempt.digest}; waiting for its objects to become healthy"
        return Readiness("Unknown", PROGRESSING_REASON, message)
    if attempt.result is not Result.SUCCEEDED:
        return Readiness("False", attempt.reason or attempt.result.value, attempt.message)
    if health == "Unhealthy":
        return Readiness("False", "HealthCheckFailed", f"{revision} is not healthy")
    message = f"Applied revision: {revision}" + (f"\n{waiting}" if waiting else "")
    return Readiness("True", SUCCEEDED_REASON, message)
