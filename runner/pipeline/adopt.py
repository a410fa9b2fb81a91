"""``lockgate adopt``: one sync takes over what Flux's kustomize-controller applied.

The I/O half of ``runner.plan.adoption``, in this order, each step safe to run again:

1. read the Kustomization the sync's ``lockgate.dev/flux-kustomization`` annotation names,
   and every Kustomization (to find the ones that apply it); refuse unless it and they are
   suspended, and unless Flux has applied an artifact (``status.lastAppliedRevision``);
2. pre-flight: a dry run of the sync at exactly the digest Flux applied, taking over the
   ``kustomize-controller`` field manager; refuse (naming each object and why) if it would
   create or recreate anything, change anything but ownership labels, or if lockgate's
   objects and Flux's inventory differ. ``--dry-run`` stops here;
3. seed lockgate's inventory with Flux's inventory (a union with what it holds already), so
   the first pass after adopt prunes what Flux applied and the artifact no longer has;
4. one real pass at that digest: every object's kustomize-controller fields become lockgate's
   (Flux's ``--override-manager``) and the apply drops Flux's owner labels and adds the
   ApplySet's; nothing is created, nothing pruned that Flux did not hold.

An interrupted adopt leaves either nothing, the seeded inventory (the next adopt or pass
carries on), or a pass half applied, which the pass's own union write keeps safe.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lockgate.diff.changeset import Action
from lockgate.errors import ApplyError, LockgateError, UsageError
from runner.inventory import store
from runner.kube.client import Kube
from runner.pipeline import reconcile as pipeline
from runner.pipeline.options import SyncOptions, runner_namespace
from runner.pipeline.result import Result
from runner.plan import adoption
from runner.ssa.manager import FIELD_MANAGER


class AdoptRefused(ApplyError):
    """The pre-flight found objects the adoption would create, recreate or change; nothing was written."""


@dataclass
class Adoption:
    sync: str
    kustomization: str = ""
    #: Flux's ``lastAppliedRevision``, the revision adopted
    revision: str = ""
    #: members of Flux's inventory
    flux_members: int = 0
    #: the Kustomizations that apply the adopted one (``Kustomization NS/NAME``)
    parents: list[str] = field(default_factory=list)
    #: of them, newly added to lockgate's inventory by this run
    seeded: int = 0
    dry_run: bool = False
    preflight: Result | None = None
    #: the adopting pass (None on a dry run or a refusal)
    result: Result | None = None
    error: LockgateError | None = None
    requests: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def notes(self) -> list[str]:
        """What the person retiring Flux must know: a parent applies the Kustomization."""
        if not self.parents or self.error is not None:
            return []
        return [
            f"{parent} applies Kustomization {self.kustomization}: keep it suspended; remove the "
            "Kustomization and its OCIRepository from its source and wait until that source has the "
            "revision (flux get sources oci), then delete them and resume it; resumed on the old "
            "revision it would bring them back, and a later prune would run their finalizer"
            for parent in self.parents[:1]
        ]

    @property
    def taken_over(self) -> int:
        """Objects whose fields and labels the pass moved from Flux to lockgate."""
        done = self.result or self.preflight
        if done is None:
            return 0
        return sum(1 for e in done.changeset.entries if e.action is Action.CONFIGURED)

    def to_json(self) -> dict[str, Any]:
        return {
            "sync": self.sync,
            "kustomization": self.kustomization,
            "revision": self.revision,
            "fluxInventory": self.flux_members,
            "parents": list(self.parents),
            "seeded": self.seeded,
            "takenOver": self.taken_over,
            "dryRun": self.dry_run,
            "ok": self.error is None,
            "error": None
            if self.error is None
            else {"message": self.error.message, "exitCode": int(self.error.exit_code)},
            "notes": self.notes(),
            "preflight": None if self.preflight is None else self.preflight.to_json(),
            "result": None if self.result is None else self.result.to_json(),
            "requests": dict(self.requests),
            "seconds": round(self.seconds, 3),
        }


def _kustomizations(kube: Kube) -> tuple[Any, dict[adoption.Ref, dict[str, Any]]]:
    if not kube.knows(adoption.API_VERSION, "Kustomization"):
        raise UsageError(
            f"the cluster serves no {adoption.API_VERSION} Kustomization: there is no Flux to adopt from"
        )
    res = kube.resource(adoption.API_VERSION, "Kustomization")
    return res, {adoption.ref_of(ks): ks for ks in kube.list_all(res)}


def _checked(options: SyncOptions, kube: Kube, adopted: Adoption) -> tuple[adoption.Ref, dict[str, Any], str]:
    """The Kustomization behind the sync, once every precondition holds, and Flux's digest."""
    ref = adoption.parse_ref(options.annotation(adoption.ANNOTATION))
    if ref is None:
        raise UsageError(
            f"Sync {options.name} has no {adoption.ANNOTATION}: NAMESPACE/NAME annotation naming the "
            "Kustomization it takes over (lockgate import writes it): add it under metadata.annotations"
        )
    adopted.kustomization = f"{ref.namespace}/{ref.name}"
    _, everything = _kustomizations(kube)
    ks = everything.get(ref)
    if ks is None:
        raise UsageError(f"{ref} not found: nothing to adopt for sync {options.name} (retired already?)")
    adopted.parents = [str(parent) for parent, _ in adoption.ancestry(ks, everything)]
    problems = adoption.suspension_problems(ks, everything)
    if problems:
        raise UsageError(f"sync {options.name}: adopt refused, nothing was written", details=problems)
    digest = adoption.applied_digest(ks)
    if digest is None:
        raise UsageError(
            f"{ref} has applied no artifact (status.lastAppliedRevision): there is nothing of Flux's to take "
            "over; run the sync's first pass instead (lockgate reconcile --config)"
        )
    adopted.revision = str((ks.get("status") or {}).get("lastAppliedRevision"))
    return ref, ks, digest


def adopt(
    options: SyncOptions,
    *,
    kube: Kube,
    dry_run: bool = False,
    guard: Callable[[], None] | None = None,
) -> Adoption:
    """Adopt one sync's Kustomization; the ``Adoption`` says what was found and done (raises nothing:
    its ``error`` holds a refusal or a failure)."""
    adopted = Adoption(sync=options.name, dry_run=dry_run)
    started = time.monotonic()
    try:
        ref, ks, digest = _checked(options, kube, adopted)
        flux = adoption.inventory_of(ks)
        adopted.flux_members = len(flux)
        pinned = dataclasses.replace(
            options,
            source=dataclasses.replace(
                options.source, url=adoption.pinned_url(options.source.url, digest), semver=None
            ),
            override_managers=(*options.override_managers, adoption.FLUX_MANAGER),
        )
        preflight = pipeline.reconcile(dataclasses.replace(pinned, dry_run=True), kube=kube)
        adopted.preflight = preflight
        if preflight.error is not None:
            raise preflight.error
        entries = preflight.changeset.entries
        desired = [
            e.key for e in entries if e.action in (Action.CREATED, Action.CONFIGURED, Action.UNCHANGED)
        ]
        refused = adoption.refusals(entries, desired, flux, ref)
        if refused:
            raise AdoptRefused(
                f"sync {options.name}: adopt refused, nothing was written: lockgate's rendering of "
                f"{adopted.revision} is not what {ref} applied",
                details=[str(r) for r in refused],
            )
        if dry_run:
            return adopted
        adopted.seeded = _seed(options, kube if guard is None else kube.guarded(guard), flux)
        result = pipeline.reconcile(pinned, kube=kube, guard=guard)
        adopted.result = result
        if result.error is not None:
            raise result.error
        created = [str(e.key) for e in result.changeset.entries if e.action is Action.CREATED]
        if created:  # the pre-flight said none: something created them in between
            result.notes.append(f"created during the adoption (by another writer?): {', '.join(created)}")
    except LockgateError as exc:
        adopted.error = exc
    finally:
        adopted.requests = kube.counts
        adopted.seconds = time.monotonic() - started
    return adopted


def _seed(options: SyncOptions, kube: Kube, flux: dict[Any, Any]) -> int:
    """Flux's members into lockgate's inventory (a union, written once); how many were new."""
    writer = kube
    namespace = runner_namespace(options.namespace)
    user = options.impersonated_user(namespace)
    if user is not None:
        writer = kube.impersonating(user)
    inventory = store.read(writer, options.name, namespace)
    new = {key: member for key, member in flux.items() if key not in inventory.members}
    if not new and inventory.exists:
        return 0
    inventory.members.update(new)
    store.ensure_namespace(writer, namespace, manager=FIELD_MANAGER)
    store.write(writer, inventory, manager=FIELD_MANAGER)
    return len(new)
