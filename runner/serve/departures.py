"""Syncs that left the configuration: found by ``serve`` and deleted by their ``deletionPolicy``.

A sync leaves when a reload drops its document, or when ``serve`` starts on a file without
it; either way what stays behind is its inventory, so ``serve`` looks for inventories
rather than diffing files. A scan lists the inventories of the runner namespaces it knows
(its own, its syncs', and those of syncs a reload removed while this process ran) and takes
the ones no Sync of the configuration names that this runner ran: the inventory's
``servedBy`` is this runner's namespace, where its replicas' membership Leases are. An
inventory of ``lockgate reconcile`` run by hand, of a CronJob or of another installation
is never touched.

Nothing is deleted unless everything agrees: the configuration loaded (a refused reload
keeps the old one running and deletes nothing), the membership was listed at least once
and this replica does not stand by (its configuration is the one the replicas share), it
owns the sync by the rendezvous hashing that shares the passes, and it holds the sync's
Lease, so no pass or other deletion of it runs anywhere at the same time; under the Lease
the configuration is asked once more. A deletion the guard refused waits for a person
(``lockgate delete NAME --allow-mass-prune``, or the sync back with ``deletionPolicy:
Delete`` for one pass); other failures are tried again at the next scan. Scans run in a
thread of their own (at start, after each reload and every ``EVERY`` seconds), so a long
``WaitForTermination`` holds up neither the reloads nor the heartbeat.

``by_hand`` is ``lockgate delete NAME``: the same deletion under the sync's Lease.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lockgate.errors import Abandoned, LockgateError, UsageError
from runner.inventory import store
from runner.kube.client import Kube
from runner.kube.discovery import LEASE
from runner.kube.errors import KubeError
from runner.pipeline import config as config_mod
from runner.pipeline import deletion, installed
from runner.pipeline.reconcile import runner_namespace
from runner.pipeline.result import Result
from runner.plan import shard
from runner.plan.inventory import Inventory
from runner.serve import leases

log = logging.getLogger("lockgate.serve")

#: seconds between scans when no reload asks for one
EVERY = 60.0


@dataclass(frozen=True)
class Hooks:
    """What a scan asks ``serve``, each time it is asked (the configuration may reload meanwhile)."""

    #: the runner namespace of this ``serve``: what its passes record as ``servedBy``
    runner: str
    #: the names of the syncs the running configuration has
    configured: Callable[[], set[str]]
    #: the runner namespaces to look in
    namespaces: Callable[[], set[str]]
    #: "" when this replica may delete; else why not (a refused reload, standing by...)
    blocked: Callable[[], str]
    owns: Callable[[str], bool]
    #: raises once ``serve`` is stopping (a deletion stops before its next write)
    guard: Callable[[], None]
    #: the ServiceAccount the configuration gives the sync (name, runner namespace): its own as
    #: this process last ran it, else the Runner's defaultServiceAccount; never the inventory's
    service_account: Callable[[str, str], str | None]
    #: called for each sync deleted (its metrics go)
    deleted: Callable[[str, str], None]


class Departures:
    def __init__(self, kube: Kube, keeper: leases.LeaseKeeper | None, hooks: Hooks) -> None:
        self.kube = kube
        self.keeper = keeper
        self.hooks = hooks
        self._due = True
        self._next = 0.0
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def wanted(self) -> None:
        """Scan at the next tick (the configuration changed)."""
        self._due = True

    def tick(self, now: float | None = None) -> None:
        """From the housekeeping thread: start a scan when one is due and none runs."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if not (self._due or now >= self._next) or (self._thread and self._thread.is_alive()):
                return
            if self.hooks.blocked():
                return  # still due: asked again at the next tick (the question costs no request)
            self._due, self._next = False, now + EVERY
            self._thread = threading.Thread(target=self._scan, name="lockgate-departures", daemon=True)
            self._thread.start()

    def _scan(self) -> None:
        try:
            self.scan()
        except Exception:  # the scan must never take serve down; the next one tries again
            log.exception("looking for syncs that left the configuration failed")

    def scan(self) -> list[Result]:
        """Delete what left the configuration and may be deleted here; returns the results."""
        results = []
        for inventory in self._departed():
            result = self._delete(inventory)
            if result is not None:
                results.append(result)
        return results

    def _departed(self) -> list[Inventory]:
        if self.hooks.blocked():
            return []
        found = []
        configured = self.hooks.configured()
        for namespace in sorted(self.hooks.namespaces()):
            try:
                listing = store.list_all(self.kube, namespace)
            except LockgateError as exc:
                log.warning(
                    "cannot list inventories to find syncs that left the configuration",
                    extra={"namespace": namespace, "reason": exc.message.splitlines()[0]},
                )
                continue
            for inventory in listing.inventories:
                if inventory.name in configured or inventory.served_by != self.hooks.runner:
                    continue
                if deletion.refused(inventory):
                    continue  # waits for a person: told once, on the parent and in the log
                found.append(inventory)
        return found

    def _delete(self, inventory: Inventory) -> Result | None:
        name, namespace = inventory.name, inventory.namespace
        if not self.hooks.owns(name):
            return None  # the replica that owns it deletes it
        held = None
        if self.keeper is not None:
            held = self.keeper.hold(namespace, name)
            if held is None:
                return None  # a pass or another replica has it now: the next scan looks again
        try:
            # under the Lease: a reload may have brought it back, or blocked deleting
            if name in self.hooks.configured() or self.hooks.blocked():
                return None
            log.info("sync left the configuration: deleting it", extra={"sync": name, "namespace": namespace})

            def guard() -> None:
                if held is not None:
                    held.guard()
                self.hooks.guard()

            options = deletion.DeleteOptions(
                configured_service_account=self.hooks.service_account(name, namespace)
            )
            result = deletion.delete(name, namespace=namespace, options=options, kube=self.kube, guard=guard)
        finally:
            if held is not None:
                held.release()
        _report(result)
        if deletion.parent_deleted(result):
            forget_lease(self.kube, namespace, name)
            self.hooks.deleted(name, namespace)
        return result


def _report(result: Result) -> None:
    fields = {
        "sync": result.name,
        "namespace": result.namespace,
        "summary": result.changeset.summary(),
        "notes": "; ".join(result.notes),
        "seconds": round(result.seconds, 3),
    }
    if result.error is None:
        log.info("sync deleted", extra=fields)
    elif deletion.parent_deleted(result):  # WaitForTermination gave up, as Flux: the sync is gone
        log.warning("sync deleted", extra={**fields, "error": result.error.message})
    elif isinstance(result.error, Abandoned):
        log.info(
            "deletion stopped; the next scan resumes it", extra={**fields, "reason": result.error.message}
        )
    else:
        log.error("deletion failed", extra={**fields, "error": result.error.message})


def forget_lease(kube: Kube, namespace: str, sync: str) -> None:
    """Delete the sync's Lease once no one holds it (its resourceVersion as a precondition)."""
    name = leases.lease_name(sync)
    try:
        live = kube.get(LEASE, namespace, name)
        if live is None or shard.LeaseState.from_spec(live.get("spec")).holder:
            return
        kube.delete(LEASE, namespace, name, resource_version=str(live["metadata"].get("resourceVersion", "")))
    except (KubeError, LockgateError):
        return  # taken meanwhile, or not ours to delete: it runs out and stays harmless


def by_hand(
    name: str,
    *,
    namespace: str | None,
    config_path: Path | None,
    options: deletion.DeleteOptions,
    kubeconfig: Path | None = None,
    context: str | None = None,
) -> Result:
    """``lockgate delete NAME``: refused while a configuration still names the sync (its next
    pass would bring it back), else the deletion under the sync's Lease (none on a dry run).
    The identity it is made as is ``options.service_account``, else the Runner's
    ``defaultServiceAccount`` of ``config_path`` or of the runner installed in the namespace."""
    default_account = None
    kube = Kube.from_kubeconfig(kubeconfig, context=context, pool=options.concurrency + 4)
    if config_path is not None:
        loaded = config_mod.load(config_path)
        if any(s.name == name for s in loaded.syncs):
            raise UsageError(
                f"--config {config_path} still has Sync {name}: its next pass would apply it again; "
                "remove it from the file first"
            )
        default_account = loaded.runner.default_service_account
        ns = namespace or _found_in(kube, name, loaded)
    else:
        ns = runner_namespace(namespace)
        _still_served(kube, name, ns)
        default_account = _installed_account(kube, ns)
    options = dataclasses.replace(options, configured_service_account=default_account)
    if options.dry_run:
        return deletion.delete(name, namespace=ns, options=options, kube=kube)
    keeper = leases.LeaseKeeper(kube)
    taken = keeper.take(ns, name)
    if not isinstance(taken, leases.Held):
        return Result(
            name=name,
            namespace=ns,
            error=Abandoned(
                f"sync {name} is being reconciled by {taken} right now (its Lease {ns}/"
                f"{leases.lease_name(name)}); run lockgate delete again when that pass ends"
            ),
        )
    with taken:
        result = deletion.delete(name, namespace=ns, options=options, kube=kube, guard=taken.guard)
    if deletion.parent_deleted(result):
        forget_lease(kube, ns, name)
    return result


def _found_in(kube: Kube, name: str, loaded: config_mod.Config) -> str:
    """The runner namespace of the sync's inventory, among those the file uses (the Runner's
    first): a removed Sync most likely ran beside the ones that stay."""
    candidates = dict.fromkeys(
        [runner_namespace(loaded.runner.namespace), *(runner_namespace(s.namespace) for s in loaded.syncs)]
    )
    found = [ns for ns in candidates if store.read(kube, name, ns).exists]
    if len(found) > 1:
        raise UsageError(
            f"sync {name} has an inventory in several runner namespaces ({', '.join(found)}): "
            "pass -n the one to delete"
        )
    return found[0] if found else next(iter(candidates))


def _installed_account(kube: Kube, namespace: str) -> str | None:
    """The ``defaultServiceAccount`` of the runner installed in ``namespace``, if one is found
    there (as ``rollback`` finds its configuration) and may be read."""
    try:
        loaded, _ = installed.load(kube, namespace)
    except LockgateError:
        return None
    return loaded.runner.default_service_account


def _still_served(kube: Kube, name: str, namespace: str) -> None:
    """Refuse when the inventory says ``serve`` runs the sync and its configuration still has it."""
    inventory = store.read(kube, name, namespace)
    if not inventory.exists or not inventory.served_by:
        return
    try:
        loaded, where = installed.load(kube, inventory.served_by)
    except LockgateError:
        return  # the runner's configuration cannot be read here: nothing to compare with
    if any(s.name == name for s in loaded.syncs):
        raise UsageError(
            f"sync {name} is in the configuration lockgate serve runs ({where}): remove it there, and "
            "serve deletes it by its deletionPolicy (or its next pass would apply it again)"
        )
