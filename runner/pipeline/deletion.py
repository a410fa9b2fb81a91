"""Delete a sync: its objects as its ``deletionPolicy`` says, then its inventory parent.

``lockgate delete NAME`` and ``serve`` (a sync that left its configuration,
``serve.departures``) both come here, under the sync's Lease. The inventory is read first:
its members are what is deleted or orphaned (``ssa.delete``) and the policy it recorded
decides which (``plan.deletion``; a person's ``policy`` overrides it). The requests are made
as a ServiceAccount the configuration names (the Runner's ``defaultServiceAccount``, or the
sync's own as ``serve`` last ran it) or a person's ``--service-account``, never the one the
inventory records: the inventory is written with the sync's own rights, so a tenant could
name a more powerful account there. What it records can only stop a deletion: when it names
another account than the configuration, nothing is done until a person says which
(``IdentityUnknown``), so a tenant's deletion can do what its passes could and no more.

The parent is deleted last, once every member is deleted (or, with ``WaitForTermination``,
gone) or orphaned: a deletion killed midway leaves the inventory naming every member, and
the next attempt resumes from it, never leaving an object unrecorded. A deletion the
mass-prune guard refuses, or one that fails, changes nothing more, is recorded on the parent
as its last attempt with a Warning Event (so ``lockgate status`` tells it) and keeps the
parent. Like a pass, it never raises ``LockgateError``: the error is in the ``Result``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from lockgate.errors import Abandoned, ClusterError, HealthError, LockgateError, UsageError
from runner.inventory import events, store
from runner.kube.client import Kube
from runner.kube.discovery import SECRET
from runner.pipeline import records
from runner.pipeline.reconcile import check_name, runner_namespace
from runner.pipeline.result import Result
from runner.plan import attempt, deletion
from runner.plan.inventory import Inventory
from runner.ssa import delete as delete_set
from runner.ssa.manager import Manager

#: the Warning reasons of a deletion that did not happen
REFUSED = "DeletionRefused"
FAILED = "DeletionFailed"


@dataclasses.dataclass(frozen=True)
class DeleteOptions:
    """A person's (or ``serve``'s) settings for one deletion; None fields keep what was recorded."""

    policy: deletion.Policy | None = None
    timeout: float | None = None
    allow_mass_prune: bool = False
    dry_run: bool = False
    #: the ServiceAccount a person named (``--service-account``): the deletion is made as it
    service_account: str | None = None
    #: the one the configuration gives the sync (its Runner's ``defaultServiceAccount``, or its
    #: own as ``serve`` ran it); None: the runner's own identity
    configured_service_account: str | None = None
    concurrency: int = 8


class IdentityUnknown(UsageError):
    """The inventory says the sync's passes ran as another ServiceAccount than the configuration
    gives, and no person said which to delete as: nothing is done (exit 2)."""


def identity(name: str, namespace: str, inventory: Inventory, options: DeleteOptions) -> str | None:
    """The ServiceAccount to delete as (None: the runner's own identity): a person's, else the
    configuration's; the inventory's record only stops the deletion when it disagrees."""
    if options.service_account is not None:
        return options.service_account or None
    configured = options.configured_service_account or None
    recorded = inventory.deletion.service_account_name if inventory.deletion is not None else ""
    if recorded and recorded != configured:
        given = (
            f"the configuration gives {namespace}/{configured}"
            if configured
            else "no configuration gives one (no Runner defaultServiceAccount)"
        )
        raise IdentityUnknown(
            f"sync {name}'s inventory says its passes ran as ServiceAccount {namespace}/{recorded}, "
            f"but {given}; the inventory is written with the sync's own rights, so the identity a "
            f"deletion is made as never comes from it: run lockgate delete {name} -n {namespace} "
            "--service-account NAME with the ServiceAccount its passes ran as"
        )
    return configured


def settings(inventory: Inventory, options: DeleteOptions) -> tuple[deletion.Recorded, bool, str]:
    """The deletion's settings, whether it deletes (else it orphans), and why not."""
    recorded = inventory.deletion or deletion.Recorded()
    if options.policy is not None:
        recorded = dataclasses.replace(recorded, policy=options.policy)
    if options.timeout is not None:
        recorded = dataclasses.replace(recorded, timeout=options.timeout)
    if inventory.suspended and options.policy is None:
        return recorded, False, "the sync is suspended, and a suspended sync's objects are left (as Flux)"
    if inventory.deletion is None and options.policy is None:
        return recorded, False, "no deletionPolicy recorded (the sync last ran under an older runner)"
    return recorded, recorded.deletes, f"deletionPolicy {recorded.describe()}"


def delete(
    name: str,
    *,
    namespace: str | None = None,
    options: DeleteOptions | None = None,
    kube: Kube | None = None,
    kubeconfig: Path | None = None,
    context: str | None = None,
    guard: Callable[[], None] | None = None,
) -> Result:
    """Delete sync ``name`` of runner namespace ``namespace``; ``guard`` is asked before every
    write (the Lease, a shutdown). Never raises ``LockgateError``."""
    options = options or DeleteOptions()
    started = time.monotonic()
    result = Result(name=name, dry_run=options.dry_run)
    client = kube
    try:
        check_name(name)
        result.namespace = runner_namespace(namespace)
        client = client or Kube.from_kubeconfig(kubeconfig, context=context, pool=options.concurrency + 4)
        _delete(client, result, options, guard)
    except LockgateError as exc:
        result.error = exc
    finally:
        result.seconds = time.monotonic() - started
        if client is not None:
            result.requests = client.counts
    return result


def _delete(client: Kube, result: Result, options: DeleteOptions, guard: Callable[[], None] | None) -> None:
    ns = result.namespace
    inventory = store.read(client, result.name, ns)
    if not inventory.exists:
        raise UsageError(
            f"sync {result.name} has no inventory in namespace {ns} (no Secret lockgate-{result.name}): "
            "nothing to delete; pass -n the runner namespace it ran in"
        )
    result.url, result.digest, result.revision = inventory.source, inventory.digest, inventory.revision
    result.verified_by = inventory.history[0].verified_by if inventory.history else ""
    recorded, deleting, why = settings(inventory, options)
    result.notes.append(why if not deleting else f"{why}: its objects are deleted")
    writer = client if guard is None else client.guarded(guard)
    try:
        account = identity(result.name, ns, inventory, options)
    except IdentityUnknown as exc:
        if not options.dry_run:  # told on the parent, as the account the configuration gives
            configured = options.configured_service_account
            teller = (
                writer.impersonating(f"system:serviceaccount:{ns}:{configured}") if configured else writer
            )
            _record_failure(teller, result.name, ns, exc)
        raise
    if account:  # as its passes ran: the API server allows what that account may do
        writer = writer.impersonating(f"system:serviceaccount:{ns}:{account}")
    mgr = Manager(writer, set_id=inventory.set_id, concurrency=options.concurrency)
    try:
        done = delete_set.delete_set(
            mgr,
            inventory.members,
            sync=result.name,
            recorded=recorded,
            deleting=deleting,
            why_not=why,
            allow_mass_prune=options.allow_mass_prune,
            dry_run=options.dry_run,
        )
    except LockgateError as exc:
        if not options.dry_run:
            _record_failure(writer, result.name, ns, exc)
        raise
    result.changeset = done.changeset
    if options.dry_run:
        result.notes.append(f"then the inventory Secret {ns}/{inventory.parent} would be deleted")
        if done.refused is not None:
            raise done.refused
        return
    # the members are dealt with: only now may the record of them go
    writer.delete(SECRET, ns, inventory.parent)
    result.notes.append(f"inventory Secret {ns}/{inventory.parent} deleted")
    if done.terminating:
        raise TerminationTimeout(
            f"gave up waiting for {len(done.terminating)} deleted objects to terminate after "
            f"{recorded.timeout:g}s (WaitForTermination); they are marked for deletion and go once "
            "their finalizers are done",
            details=[str(key) for key in done.terminating],
        )


class TerminationTimeout(HealthError):
    """``WaitForTermination`` gave up (exit 6, as a health wait that timed out); the parent is
    deleted all the same, as Flux lets the Kustomization go."""


def parent_deleted(result: Result) -> bool:
    """Whether the deletion got as far as deleting the parent (the sync is gone)."""
    return not result.dry_run and (result.error is None or isinstance(result.error, TerminationTimeout))


def _record_failure(kube: Kube, name: str, namespace: str, error: LockgateError) -> None:
    """The parent says why the sync is still there; best effort (the error is the deletion's)."""
    if isinstance(error, Abandoned | ClusterError):
        return  # stopped, or the cluster cannot take it: the next attempt says more
    # both wait for a person (``refused``): serve does not try them again at every scan
    refused = isinstance(error, deletion.DeletionRefused | IdentityUnknown)
    try:
        inventory = store.read(kube, name, namespace)
        failed = attempt.Attempt(
            result=attempt.Result.FAILED,
            time=records.now(),
            revision=inventory.revision,
            digest=inventory.digest,
            reason=REFUSED if refused else FAILED,
            message=error.message,
            exit_code=int(error.exit_code),
        )
        if not inventory.exists or failed.same(inventory.last_attempt):
            return  # told already: a refusal repeated by serve writes nothing
        inventory.last_attempt = failed
        store.write(kube, inventory, manager=Manager(kube, set_id=inventory.set_id).field_manager)
        events.emit(kube, inventory, warning=True, reason=failed.reason, message=error.message)
    except LockgateError:
        return


def refused(inventory: Inventory) -> bool:
    """The last deletion of this sync was refused by the guard: it waits for a person."""
    last = inventory.last_attempt
    return last is not None and last.reason == REFUSED
