"""Rolling a sync back to a revision that ran healthy: after a failed health wait, or by hand.

With ``rollback: onHealthFailure``, a pass whose digest never ran healthy and then fails
its health wait (a Failed object or the timeout) is followed by a second pass: the newest
digest of the history that once ran healthy is fetched again through ``source.fetch``
pinned to that digest, so it is pulled and verified with the sync's own policy anew (a
history entry is a pointer, never a trusted copy), and applied with prune. That pass lists
the failed digest as rejected in the same inventory write that records the rollback, and
passes skip a rejected digest until a person asks (``lockgate sync`` sets requestedAt;
``lockgate rollback``), so a bad digest is never applied in a loop. A failed rollback is
reported and not retried by another rollback. After a rollback the pass's health is the
rolled-back state's (what runs now); the failed digest's unhealthy objects are in its error.
``lockgate rollback NAME [--to DIGEST]`` is the same second pass, started by a person;
``--to`` may be a unique prefix of a digest of the history, as ``lockgate status`` shows it.
"""

from __future__ import annotations

import dataclasses
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from lockgate import registry
from lockgate.errors import HealthError, LockgateError, UsageError, VerificationError
from lockgate.registry import reference
from runner.inventory import store
from runner.kube.client import Kube
from runner.pipeline import secretrefs, source
from runner.pipeline.passes import Pass
from runner.pipeline.reconcile import SyncOptions, check_name, prepare_fetched, runner_namespace
from runner.pipeline.result import Result
from runner.plan import history
from runner.plan.history import Outcome
from runner.plan.inventory import Inventory

ON_HEALTH_FAILURE = "onHealthFailure"


def skip_message(digest: str) -> str:
    return f"digest {digest} was rolled back; push a new digest or run lockgate rollback/sync to retry"


def refused(inventory: Inventory, result: Result, *, retry: bool) -> bool:
    """True, and ``result.skipped`` says why, when the pass must not apply its digest."""
    if result.digest not in inventory.rejected:
        return False
    if retry:
        result.notes.append(f"digest {result.digest} was rolled back before; retried because a person asked")
        return False
    result.skipped = skip_message(result.digest)
    return True


def wanted(options: SyncOptions, inventory: Inventory, error: LockgateError, digest: str) -> bool:
    """A health failure of a digest that never ran healthy, with automatic rollback on."""
    return (
        options.rollback == ON_HEALTH_FAILURE
        and not options.dry_run
        and isinstance(error, HealthError)
        and not history.was_healthy(inventory.history, digest)
    )


def pinned(spec: source.SourceSpec, digest: str) -> source.SourceSpec:
    """The sync's source narrowed to ``digest``: same repository, path and verification policy."""
    ref = registry.parse(spec.url)
    return dataclasses.replace(spec, url=ref.pinned(digest), semver=None)


def apply_revision(
    kube: Kube,
    options: SyncOptions,
    result: Result,
    *,
    digest: str,
    revision: str,
    rejecting: str,
    note: str,
    because: str = "",
    recorder: Kube | None = None,
) -> None:
    """Fetch ``digest`` again (verified), apply it with prune and wait as the sync does; raises.
    ``because`` (why it runs) follows the last attempt's message; ``recorder`` is ``Pass``'s."""
    secrets = secretrefs.SecretReader(kube.own(), result.namespace) if options.source.needs_secrets else None
    fetched = source.fetch(pinned(options.source, digest), secrets=secrets)
    result.url, result.digest, result.verified_by = fetched.url, fetched.digest, fetched.verified_by
    # a digest reference carries no tag: keep the revision the history knew it by
    result.revision = revision or fetched.revision
    back = dataclasses.replace(options, prune=True, source=pinned(options.source, digest))
    run = Pass(
        kube,
        back,
        result,
        outcome=Outcome.ROLLED_BACK,
        note=note,
        because=because,
        rejecting=rejecting,
        recorder=recorder,
    )
    try:
        run.run(prepare_fetched(fetched.objects, options, kube.own(), result.namespace))
    except LockgateError as exc:
        run.record_failure(exc)
        raise


def after_failure(
    kube: Kube,
    options: SyncOptions,
    inventory: Inventory,
    result: Result,
    error: LockgateError,
    *,
    recorder: Kube | None = None,
) -> HealthError:
    """Roll back after ``result``'s digest failed its health wait; the error the pass reports,
    whole (the rollback's outcome, then the failed objects)."""
    failed = result.revision or result.digest
    target = history.last_healthy(inventory.history, excluding={result.digest, *inventory.rejected})
    if target is None:
        return HealthError(
            f"{error.message}\nnot rolled back: no earlier revision of sync {options.name} ran healthy"
        )
    back = Result(name=options.name, namespace=result.namespace)
    try:
        apply_revision(
            kube,
            options,
            back,
            digest=target.digest,
            revision=target.revision,
            rejecting=result.digest,
            note=f"rolled back from {failed} (failed its health checks): ",
            because=error.message,
            recorder=recorder,
        )
    except LockgateError as exc:
        result.notes.append(f"the rollback to {target.revision} failed: {exc.message}")
        return HealthError(
            f"{failed} failed its health checks; rolling back to {target.revision} failed too:\n"
            + textwrap.indent(exc.message, "  ")
            + f"\n{error.message}"
        )
    result.rolled_back_from, result.rolled_back_to = failed, back.revision
    result.health = back.health  # what runs now; the failed objects are in the error
    result.rollback_changes = back.changeset
    result.notes.append(f"rollback to {back.revision}: {back.changeset.summary()}")
    return HealthError(
        f"{failed} failed its health checks and was rolled back to {back.revision}; it is not applied "
        f"again until a new digest is pushed or a person runs lockgate sync/rollback\n{error.message}"
    )


def _known_digest(inventory: Inventory, to: str) -> str:
    """The digest ``--to`` names: a whole one, or a unique prefix of one in the history or the
    current digest, as ``lockgate status`` shows it (``sha256:0123456789ab``, ``v1@sha256:...``)."""
    if reference.DIGEST_PATTERN.match(to):
        return to
    hex_part = to.rpartition("@")[2].removeprefix("sha256:")
    if len(hex_part) < 7 or any(c not in "0123456789abcdef" for c in hex_part):
        raise UsageError(
            f"--to {to!r}: expected a digest, sha256:<64 hex>, or a unique prefix of one in the "
            "history (at least 7 hex digits, as lockgate status shows them)"
        )
    known = dict.fromkeys(
        d for d in (inventory.digest, *(e.digest for e in inventory.history)) if d.startswith("sha256:")
    )
    matching = [d for d in known if d.removeprefix("sha256:").startswith(hex_part)]
    if len(matching) == 1:
        return matching[0]
    if not matching:
        raise UsageError(
            f"--to {to!r}: no digest in the history of sync {inventory.name} starts with it; "
            "give the whole digest (sha256:<64 hex>) to roll back to one from outside the history"
        )
    raise UsageError(
        f"--to {to!r} is ambiguous in the history of sync {inventory.name}: {', '.join(matching)}"
    )


def _target(inventory: Inventory, to: str | None) -> tuple[str, str, str]:
    """(digest, revision, note) of where ``lockgate rollback`` goes."""
    if to:
        to = _known_digest(inventory, to)
        if to == inventory.digest:
            raise UsageError(f"sync {inventory.name} already runs {to}")
        entry = history.find(inventory.history, to)
        if entry is None:
            return to, "", f"{to} is not in the history of sync {inventory.name}: applied because it passed"
        return to, entry.revision, ""
    entry = history.last_healthy(inventory.history, excluding={inventory.digest, *inventory.rejected})
    if entry is None:
        known = ", ".join(f"{e.revision} ({e.result.value}, {e.health.value})" for e in inventory.history)
        raise UsageError(
            f"sync {inventory.name}: no revision before {inventory.revision or 'the current one'} ran "
            f"healthy; name one with --to DIGEST (history: {known or 'empty'})"
        )
    return entry.digest, entry.revision, ""


def by_hand(
    options: SyncOptions,
    *,
    to: str | None = None,
    kube: Kube | None = None,
    kubeconfig: Path | None = None,
    context: str | None = None,
    guard: Callable[[], None] | None = None,
) -> Result:
    """``lockgate rollback``: the current digest is rejected, the target fetched, verified and
    applied with prune; never raises ``LockgateError`` (it is in ``Result.error``)."""
    started = time.monotonic()
    result = Result(name=options.name, dry_run=options.dry_run)
    client = kube
    try:
        check_name(options.name)
        result.namespace = runner_namespace(options.namespace)
        client = client or Kube.from_kubeconfig(kubeconfig, context=context, pool=options.concurrency + 4)
        inventory = store.read(client, options.name, result.namespace)
        if not inventory.exists:
            raise UsageError(
                f"sync {options.name} has never run in namespace {result.namespace} (no Secret "
                f"{inventory.parent}): nothing to roll back"
            )
        digest, revision, note = _target(inventory, to)
        result.rolled_back_from = inventory.revision or inventory.digest
        try:
            apply_revision(
                client if guard is None else client.guarded(guard),
                options,
                result,
                digest=digest,
                revision=revision,
                rejecting=inventory.digest,
                note=f"rolled back by hand from {result.rolled_back_from}: ",
            )
        except VerificationError as exc:
            if note:
                raise VerificationError(
                    f"{digest} is not in the history of sync {options.name}, and a digest from outside "
                    f"the history is applied only if it verifies: {exc.message}"
                ) from None
            raise
        result.rolled_back_to = result.revision
        if note:
            result.notes.append(f"{note} the sync's verification (verified by {result.verified_by})")
        if inventory.digest:
            result.notes.append(
                f"{inventory.digest} is not applied again until a new digest is pushed or "
                f"lockgate sync {options.name} is run"
            )
    except LockgateError as exc:
        result.error = exc
    finally:
        result.seconds = time.monotonic() - started
        if client is not None:
            result.requests = client.counts
    return result
