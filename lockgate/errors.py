"""One exception hierarchy for everything a user can get wrong or the world can refuse.

Each class carries a message written for the user (what failed, which file, object or
field, what to do) and an exit code per failure class, so scripts can tell a bad
signature from a failed rollout. The CLI catches only ``LockgateError``. An error is one
value: its ``message`` is the whole text (the headline and the objects it names, see
``lockgate.summary``), rendered whole wherever there is room and by ``summary()`` where
there is not; no renderer keeps only the first line.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

from lockgate.redact import scrub
from lockgate.summary import summarise, whole


class ExitCode(IntEnum):
    OK = 0
    #: generic failure; also "differences found" for ``lockgate diff``, as diff(1) does
    FAILURE = 1
    USAGE = 2
    AUTH = 3
    VERIFICATION = 4
    APPLY = 5
    HEALTH = 6
    RESOLVE = 7
    RENDER = 8
    REGISTRY = 9
    PARTIAL = 10
    CLUSTER = 11
    #: a pass stopped before its next write: the runner is shutting down or lost the sync's Lease
    ABANDONED = 12
    NOT_IMPLEMENTED = 69


class LockgateError(Exception):
    """Base of every error lockgate reports to a user; its message is scrubbed of credentials."""

    exit_code: ExitCode = ExitCode.FAILURE
    #: the command already printed its result as JSON, the error included (``-o json``), so
    #: the CLI root prints no second JSON document for it
    json_reported: bool = False

    def __init__(self, message: str, *, details: Sequence[str] = ()) -> None:
        """``details`` are listed under ``message`` (one object each), as one text."""
        # credentials never leave in a message: URL userinfo, token parameters, auth headers
        message = scrub(whole(message, details))
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def summary(self, limit: int = 200) -> str:
        """The message in one line of at most ``limit`` characters (``lockgate.summary``)."""
        return summarise(self.message, limit)


class UsageError(LockgateError):
    """Bad flags, bad configuration or bad input files."""

    exit_code = ExitCode.USAGE


class AuthError(LockgateError):
    """Credentials missing or refused. Messages never contain the credentials."""

    exit_code = ExitCode.AUTH


class VerificationError(LockgateError):
    """A signature is missing, invalid, or made by someone other than expected."""

    exit_code = ExitCode.VERIFICATION


class ApplyError(LockgateError):
    """The cluster refused an object."""

    exit_code = ExitCode.APPLY


class ClusterError(LockgateError):
    """The Kubernetes API server could not be reached, or failed (5xx), so nothing was decided.

    Distinct from ``ApplyError``: a dead or overloaded cluster is not a refusal of the
    objects, and a script should retry it rather than fix the manifests.
    """

    exit_code = ExitCode.CLUSTER


class Abandoned(LockgateError):
    """A pass stopped before its next write (shutdown, or its Lease went to another replica).

    Nothing is half-written: the inventory already holds the union of old and new members,
    so the next pass, wherever it runs, converges.
    """

    exit_code = ExitCode.ABANDONED


class ShuttingDown(Abandoned):
    """The runner is stopping (SIGTERM): the pass stopped before its next write, and as its
    sync is still its own (the Lease is held until the pass returns), it records that it stopped."""


class HealthError(LockgateError):
    """Applied objects did not become healthy."""

    exit_code = ExitCode.HEALTH


class ResolveError(LockgateError):
    """A reference (tag, semver range, digest) could not be resolved."""

    exit_code = ExitCode.RESOLVE


class RenderError(LockgateError):
    """Manifests could not be read, rendered or loaded."""

    exit_code = ExitCode.RENDER


class RegistryError(LockgateError):
    """The registry could not be reached or answered with an error."""

    exit_code = ExitCode.REGISTRY


class ReplyTooLarge(LockgateError):
    """A peer answered more than lockgate reads (``lockgate.replies``): nothing of it is used.

    ``endpoint`` is the peer's scheme, host and port only; ``detail`` says how much. Callers
    say what they asked and re-raise it in their own class where the exit code matters (a
    registry's is ``RegistryError``)."""

    def __init__(self, endpoint: str, detail: str) -> None:
        super().__init__(f"{endpoint} {detail}")
        self.endpoint, self.detail = endpoint, detail


class NotImplementedYet(LockgateError):
    """A planned command whose issue has not landed yet."""

    exit_code = ExitCode.NOT_IMPLEMENTED

    def __init__(self, command: str) -> None:
        super().__init__(f"'lockgate {command}' is not implemented yet")
