"""The cluster half of a pass: inventory (union) -> staged apply -> prune -> inventory (new) -> wait.

The staged apply goes wave by wave, with hooks before, in and after the waves
(``pipeline.ordered``); a hook is a member like any object, in the union before it runs.

The order of inventory writes is what makes a pass crash-safe: before the first object is
applied, the parent records the union of the previous and the new members, so a pass
killed at any point leaves no object the next pass does not know about; only after
pruning is the set shrunk to the new members. Nothing is pruned when anything before
failed. Every pass that is not a dry run records its attempt on the parent
(``runner.plan.attempt``): one that reaches the cluster here (last result, history, last
attempt, Event), one that fails before it in ``pipeline.records``. A pass that waits
records ``Progressing`` with the applied members, and its health after the wait; a pass
stopped by shutdown during it records ``Abandoned`` (the sync is still its own: the Lease is
released only when the pass returns). A pass that finds everything as it was writes nothing.
A digest that was rolled back from is not applied again unless a person asks; the rollback
itself is ``pipeline.rollback``. Each pass also records what deleting the sync will need (its
``deletionPolicy``; ``pipeline.deletion``) and, under ``serve``, which runner runs it. Drift
a pass leaves (``spec.driftDetection.mode: warn``) is recorded on the parent and told by one
``DriftDetected`` Event while it stays the same.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from typing import Any

from lockgate.diff.changeset import Action, ChangeSet
from lockgate.errors import Abandoned, HealthError, LockgateError, ShuttingDown, UsageError
from lockgate.manifests import K8sObject, ObjectKey
from lockgate.summary import counted
from runner.inventory import events, store
from runner.kube.client import Kube
from runner.kube.discovery import Resource
from runner.pipeline import (
    ordered,
    records,
)
from runner.pipeline.options import ObjectRef, SyncOptions
from runner.pipeline.result import Result
from runner.pipeline.timings import Timings
from runner.plan import (
    attempt,
    drift,
    history,
    kinds,
    placement,
    prune_plan,
)
from runner.plan.desired import Desired, prepare
from runner.plan.history import Outcome, Summary
from runner.plan.inventory import Member
from runner.plan.ordering import Event, Phase
from runner.plan.reserved import Reserved
from runner.ssa import apply, prune, wait
from runner.ssa.manager import Manager

CRD_TIMEOUT = 60.0


class Pass:
    """The cluster half of a pass, for already loaded objects.

    ``outcome`` is the history's word for a success (a rollback applies with ``RolledBack``),
    ``note`` prefixes the history message, ``because`` follows the last attempt's message (why a
    rollback ran), ``rejecting`` is a digest to list as rolled back from once this pass has
    applied and pruned, ``request`` the ``requestedAt`` it answers. ``recorder`` is the client
    that records the pass's end after shutdown stopped it (``kube`` refuses every write then).
    ``served_by`` is the runner namespace of the ``serve`` running the pass, recorded so that
    only it deletes the sync once it leaves its configuration.
    """

    def __init__(
        self,
        kube: Kube,
        options: SyncOptions,
        result: Result,
        *,
        outcome: Outcome = Outcome.SUCCEEDED,
        note: str = "",
        because: str = "",
        rejecting: str = "",
        request: str = "",
        recorder: Kube | None = None,
        served_by: str = "",
    ) -> None:
        self.kube = kube
        self.recorder = recorder or kube
        self.options = options
        self.result = result
        self.outcome, self.note, self.because, self.rejecting = outcome, note, because, rejecting
        self.inventory = store.read(kube, options.name, result.namespace)
        self.previous = dict(self.inventory.members)
        self.mgr = Manager(
            kube,
            set_id=self.inventory.set_id,
            concurrency=options.concurrency,
            override_managers=options.override_managers,
        )
        #: the document as stored: a pass that changes nothing else still records the request
        self._written = self.inventory.document()
        if request:
            self.inventory.handled_request = request
        self.inventory.deletion = options.recorded_deletion()
        if served_by:
            self.inventory.served_by = served_by
        #: a person asked for this pass: its hooks run again (``runner.plan.sequence``)
        self.requested = bool(request)
        #: waves and hooks (``runner.pipeline.ordered``), once ``run`` has planned them
        self.steps: ordered.Steps | None = None
        #: the union is recorded: from here on a failure runs the on-failure hooks
        self._writing = False

    @property
    def awaits(self) -> bool:
        """Flux waits for ``healthChecks`` even when ``wait`` is off; post-apply hooks run
        once everything is healthy, so a pass that runs them waits too."""
        return self.options.wait or bool(self.options.health_checks) or self._post_apply_due

    @property
    def _post_apply_due(self) -> bool:
        return self.steps is not None and self.steps.sequence.post_apply_due

    def _event(self) -> Event:
        if self.outcome is Outcome.ROLLED_BACK:
            return Event.ROLLBACK
        return Event.UPGRADE if self.inventory.digest else Event.INSTALL

    def run(self, objects: list[K8sObject]) -> None:
        timings = self.result.timings
        with timings.phase("plan"):
            desired = self._plan(objects)
        self._carry_out(desired, timings)

    def _plan(self, objects: list[K8sObject]) -> list[Desired]:
        options = self.options
        placed = placement.place(
            objects, target_namespace=options.target_namespace, cluster_scope=self.kube.discovery.scope
        )
        # waves and hooks read; a hook's hash becomes its run marker
        desired, self.steps = ordered.Steps.plan(
            self.mgr,
            [prepare(obj, self.mgr.set_id, options.ignore) for obj in placed],
            self.result,
            event=self._event(),
            recorded=self._recorded(),
            requested=self.requested,
            timeout=options.timeout,
            dry_run=options.dry_run,
            fail_fast=self.outcome is not Outcome.ROLLED_BACK,
            interrupt=self.kube.check_guard,
            custom=options.health_exprs,
        )
        return desired

    def _carry_out(self, desired: list[Desired], timings: Timings) -> None:
        options, steps = self.options, self.steps
        assert steps is not None  # planned
        members = dict(steps.items)
        released = [d.key for d in desired if d.key not in members]
        if options.prune:
            prune_plan.check_share(self.previous, [*members, *released], options.prune_options)
        known = None
        if not options.dry_run:
            # the whole set is dry-run first (a dry run pass is one already): a refused object
            # stops the pass before anything is written, the inventory included
            with timings.phase("preflight"):
                known = apply.preflight(
                    self.mgr,
                    steps.preflight_items(desired),
                    recorded=self._recorded(),
                    options=self._apply_options(),
                    created_namespaces={self.inventory.namespace},
                )
                steps.check(known.index)
            with timings.phase("record"):
                self._record_union(members)
            self._writing = True
        with timings.phase("apply"):
            changeset = self._apply(desired, known)
        if options.prune:
            with timings.phase("prune"):
                pruned, _ = prune.prune(
                    self.mgr,
                    self._union(members),
                    list(members),
                    options=options.prune_options,
                    dry_run=options.dry_run,
                    released=released,
                )
            changeset.extend(pruned)
            self.result.changeset = changeset
        if options.dry_run:
            return
        with timings.phase("record"):
            self._record_final(members, changeset)
        with timings.phase("events"):
            if self.result.drift_reported:
                events.emit(
                    self.kube,
                    self.inventory,
                    warning=True,
                    reason=drift.DETECTED,
                    message=self.result.drift_reported,
                )
        if self.awaits:
            with timings.phase("wait"):
                self._wait(desired, changeset)
            with timings.phase("hooks"):
                steps.run_hooks(Phase.POST_APPLY, changeset)
            with timings.phase("record"):
                self._note_hooks(self.inventory.members)
                self._settle(Summary.HEALTHY)
                self._succeeded()
                self._write_if_changed()
        message = f"{self.result.revision}: {self._summary()}"
        with timings.phase("events"):
            if self.outcome is Outcome.ROLLED_BACK:
                events.emit(
                    self.kube,
                    self.inventory,
                    warning=True,
                    reason=events.ROLLED_BACK,
                    message=self.note + message,
                )
            elif changeset.changed:
                events.emit(
                    self.kube, self.inventory, warning=False, reason=events.SUCCEEDED, message=message
                )

    def _summary(self) -> str:
        summary = self.result.changeset.summary()
        if self.result.health:
            summary += f"; {counted(len(self.result.health), 'object')} healthy"
        return summary

    def _settle(self, health: Summary, *, outcome: Outcome | None = None, message: str = "") -> None:
        """Record this pass's digest in the history; a healthy or unwatched success accepts it again."""
        if not self.result.digest:
            return
        outcome = outcome or self.outcome
        entry = history.Entry(
            digest=self.result.digest,
            revision=self.result.revision,
            verified_by=self.result.verified_by,
            result=outcome,
            health=health,
            time=history.timestamp(dt.datetime.now(dt.UTC)),
            message=self.note + (message or self._summary()),
        )
        self.inventory.history = history.record(self.inventory.history, entry)
        if outcome in (Outcome.SUCCEEDED, Outcome.ROLLED_BACK):
            self.inventory.rejected = history.accept(self.inventory.rejected, self.result.digest)

    def _succeeded(self) -> None:
        """The last result and the last attempt of a pass that applied (and was healthy)."""
        summary = self.result.changeset.summary()
        self.inventory.last_result = {"status": self.outcome.value, "summary": summary}
        rolled_back = self.outcome is Outcome.ROLLED_BACK
        done = attempt.Attempt(
            result=attempt.Result.ROLLED_BACK if rolled_back else attempt.Result.SUCCEEDED,
            time=records.now(),
            revision=self.result.revision,
            digest=self.result.digest,
            reason=events.ROLLED_BACK if rolled_back else attempt.SUCCEEDED_REASON,
            message=self.note + self._summary() + (f"\n{self.because}" if self.because else ""),
        )
        self.inventory.last_attempt = attempt.settle(self.inventory.last_attempt, done)

    def _write_if_changed(self, kube: Kube | None = None) -> None:
        if self.inventory.document() != self._written:
            store.write(kube or self.kube, self.inventory, manager=self.mgr.field_manager)
            self._written = self.inventory.document()

    def _union(self, members: dict[Any, Desired]) -> dict[Any, Member]:
        union = dict(self.previous)
        for key, item in members.items():
            union.setdefault(key, Member(key, item.version, ""))
        return union

    def _record_union(self, members: dict[Any, Desired]) -> None:
        union = self._union(members)
        if self.inventory.exists and union.keys() == self.previous.keys():
            return
        store.ensure_namespace(self.kube, self.inventory.namespace, manager=self.mgr.field_manager)
        self.inventory.members = union
        store.write(self.kube, self.inventory, manager=self.mgr.field_manager)
        self._written = self.inventory.document()

    def _recorded(self) -> dict[Any, str]:
        return {key: member.hash for key, member in self.previous.items()}

    def _apply_options(self) -> apply.ApplyOptions:
        return apply.ApplyOptions(
            force=self.options.force,
            dry_run=self.options.dry_run,
            drift=self.options.drift_detection,
            reserved=Reserved(self.options.name, self.result.namespace, self.options.runner_namespaces),
        )

    def _apply(self, desired: list[Desired], known: apply.Preflight | None) -> ChangeSet:
        """The pre-apply hooks, then each wave in turn: its stages, its apply-phase hooks, and a
        health wait when anything after it is to be written (``runner.pipeline.ordered``)."""
        changeset = self.result.changeset
        by_key = {d.key: d for d in desired}
        assert self.steps is not None
        steps, order = self.steps, self.steps.sequence
        changeset.extend(steps.skipped())
        self._apply_staged(order.first, by_key, known)
        steps.run_hooks(Phase.PRE_APPLY, changeset)
        pending = {
            key
            for key, item in by_key.items()
            if item.policy.applies and (known is None or known.index.get(key) is not apply.UNCHANGED)
        }
        for index, (wave, keys) in enumerate(order.waves):
            self._apply_staged(keys, by_key, known)
            steps.run_hooks(Phase.APPLY, changeset, wave=wave)
            if order.writes_after(index, pending):
                steps.wait_wave(index, changeset)
        if self.options.dry_run:
            steps.run_hooks(Phase.POST_APPLY, changeset)
        return changeset

    def _apply_staged(
        self, chosen: Collection[ObjectKey], by_key: dict[ObjectKey, Desired], known: apply.Preflight | None
    ) -> None:
        """Apply ``chosen`` in the kind stages, waiting for CRDs after the first."""
        changeset = self.result.changeset
        recorded = self._recorded()
        options = self._apply_options()
        for stage, keys in kinds.staged(chosen):
            try:
                done = apply.apply_stage(
                    self.mgr, [by_key[k] for k in keys], recorded=recorded, options=options, known=known
                )
            except (apply.ApplyFailed, apply.StageAbandoned) as exc:
                changeset.extend(exc.changeset)  # what was applied before the stage stopped
                raise
            changeset.extend(done)
            if stage is kinds.Stage.CLUSTER and not self.options.dry_run:
                self._wait_for_crds([by_key[k] for k in keys])

    def _wait_for_crds(self, items: list[Desired]) -> None:
        crds = [d for d in items if d.key.kind == "CustomResourceDefinition" and d.policy.applies]
        if crds:
            res = self.mgr.resource("apiextensions.k8s.io/v1", "CustomResourceDefinition")
            settings = wait.WaitOptions(timeout=CRD_TIMEOUT)
            wait.wait(self.mgr, [(d.key, res) for d in crds], settings, interrupt=self.kube.check_guard)
            wait.wait_for_discovery(self.kube, crds, timeout=CRD_TIMEOUT)

    def _record_final(self, members: dict[Any, Desired], changeset: ChangeSet) -> None:
        applied = {
            e.key
            for e in changeset.entries
            # an object left drifted keeps the hash it was applied with: still drift next time
            if e.action in (Action.CREATED, Action.CONFIGURED, Action.UNCHANGED) or e.drifted
        }
        final: dict[Any, Member] = {} if self.options.prune else dict(self.previous)
        for key, item in members.items():
            final[key] = Member(key, item.version, item.hash if key in applied else "")
        self._note_hooks(final)
        before = (self._written, self.inventory.exists)
        self.inventory.members = final
        self.inventory.digest = self.result.digest
        self.inventory.revision = self.result.revision
        self.inventory.source = self.result.url
        self.inventory.waiting = self.result.waiting
        self.inventory.held = None  # a pass ran: nothing held it
        found = drift.found(
            changeset.entries,
            revision=self.result.revision or self.result.digest,
            now=records.now(),
            before=self.inventory.drift,
        )
        if found is not None and found is not self.inventory.drift:
            self.result.drift_reported = found.message
        self.inventory.drift = found
        self.inventory.last_result = {"status": self.outcome.value, "summary": changeset.summary()}
        if self.rejecting:
            self.inventory.rejected = history.reject(self.inventory.rejected, self.rejecting)
        if not self.awaits:
            self._settle(Summary.UNKNOWN)
            self._succeeded()
        elif before != (self.inventory.document(), True):
            # applied, not finished: until the wait ends (or if the runner dies in it) the
            # parent says so, never "Succeeded"
            self.inventory.last_result = {
                "status": attempt.Result.PROGRESSING.value,
                "summary": changeset.summary(),
            }
            progressing = attempt.Attempt(
                attempt.Result.PROGRESSING,
                records.now(),
                self.result.revision,
                self.result.digest,
                attempt.PROGRESSING_REASON,
                changeset.summary(),
                verified_by=self.result.verified_by,
            )
            self.inventory.last_attempt = attempt.settle(self.inventory.last_attempt, progressing)
        self._written = self.inventory.document()
        if before != (self._written, True):
            store.ensure_namespace(self.kube, self.inventory.namespace, manager=self.mgr.field_manager)
            store.write(self.kube, self.inventory, manager=self.mgr.field_manager)

    def _note_hooks(self, members: dict[Any, Member]) -> None:
        """Each hook's hash as ``steps`` keeps it: its run marker once it ran, else the old one."""
        if self.steps is None:
            return
        for key in self.steps.sequence.hooks.keys() & members.keys():
            members[key] = Member(key, members[key].version, self.steps.hashes.get(key, ""))

    def _wait(self, desired: list[Desired], changeset: ChangeSet) -> None:
        skipped = {e.key for e in changeset.of(Action.SKIPPED)}
        assert self.steps is not None
        # healthChecks alone: only those; hooks are waited on as they run, earlier waves in turn
        waited = self.steps.health
        skipped |= {*self.steps.sequence.hooks, *waited}
        members = desired if self.options.wait or self._post_apply_due else []
        awaited = [
            (d.key, self.mgr.resource(d.api_version, d.key.kind)) for d in members if d.key not in skipped
        ]
        extra = [self._health_check(ref) for ref in self.options.health_checks]
        # after a rollback, a Deployment keeps the failed revision's ProgressDeadlineExceeded
        # until the controller has scaled that revision down: Failed is not final there
        fail_fast = self.outcome is not Outcome.ROLLED_BACK
        settings = wait.WaitOptions(
            timeout=self.options.timeout, fail_fast=fail_fast, custom=self.options.health_exprs
        )
        try:
            # the guard is asked twice a second: a shutdown stops the wait at once
            report = wait.wait(self.mgr, awaited, settings, extra=extra, interrupt=self.kube.check_guard)
        except wait.HealthFailed as exc:
            self.result.health = {str(k): h for k, h in {**waited, **exc.report}.items()}
            raise
        self.result.health = {str(k): h for k, h in {**waited, **report}.items()}

    def _health_check(self, ref: ObjectRef) -> tuple[ObjectKey, Resource]:
        res = self.mgr.resource(ref.api_version, ref.kind)
        namespace = ref.namespace or self.options.target_namespace or ""
        if res.namespaced and not namespace:
            raise UsageError(
                f"healthChecks: {ref.kind}/{ref.name} needs a namespace (or set the sync's targetNamespace)"
            )
        group = ref.api_version.rpartition("/")[0]
        return ObjectKey(group, ref.kind, namespace if res.namespaced else "", ref.name), res

    def record_failure(self, error: LockgateError) -> None:
        """Record how the pass ended: failed (history, last result, last attempt, Event), or
        abandoned at shutdown (the same records, no Event). The members are left as written."""
        if self.options.dry_run or not records.recordable(error):
            return  # nothing changed, the cluster cannot take the record, or we may not write
        self._on_failure(error)
        self._note_hooks(self.inventory.members)
        stopped = isinstance(error, ShuttingDown)
        if stopped:
            failed = Outcome.ABANDONED
        else:
            failed = Outcome.ROLLBACK_FAILED if self.outcome is Outcome.ROLLED_BACK else Outcome.FAILED
        self.inventory.last_result = {"status": failed.value, "summary": error.summary(300)}
        unhealthy = isinstance(error, HealthError)
        self._settle(
            Summary.UNHEALTHY if unhealthy else Summary.UNKNOWN, outcome=failed, message=error.message
        )
        ended = records.failed_attempt(
            error,
            revision=self.result.revision,
            digest=self.result.digest,
            result=attempt.Result(failed.value),
        )
        self.inventory.last_attempt = attempt.settle(self.inventory.last_attempt, ended)
        self.inventory.held = None
        kube = self.recorder if stopped else self.kube
        try:
            if not self.inventory.exists:  # a first pass refused before it wrote anything
                store.ensure_namespace(kube, self.inventory.namespace, manager=self.mgr.field_manager)
            self._write_if_changed(kube)
        except LockgateError as exc:
            self.result.notes.append(f"the failure was not recorded in the cluster: {exc.summary()}")
            return
        if not stopped:
            reason = events.reason_for(error)
            events.emit(kube, self.inventory, warning=True, reason=reason, message=error.message)

    def _on_failure(self, error: LockgateError) -> None:
        """The on-failure hooks of a pass that began to write; their own failure is a note."""
        if self.steps is None or not self._writing or isinstance(error, Abandoned):
            return
        try:
            self.steps.run_hooks(Phase.ON_FAILURE, self.result.changeset)
        except LockgateError as exc:
            self.result.notes.append(f"an on-failure hook failed too: {exc.message}")
