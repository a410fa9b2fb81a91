"""Carry out a pass's order (``runner.plan.sequence``): hooks by phase, waves healthy in turn.

``passes.Pass`` applies the stages; this module holds what waves and hooks add to it.
Hooks of one phase run wave by wave (``runner.ssa.hooks``); between two waves of ordinary
objects the earlier wave is waited on until healthy, as Argo CD does, unless nothing after
it is to be written (a drift pass that finds everything as it was waits for nothing), and a
failed or timed-out wave stops the pass before the next one is applied. A hook that ran to
success records its run marker (``hashes``), which the pass writes to the inventory with
its other records, also when the pass fails later: a retry does not run it again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from lockgate.diff.changeset import Action, ChangeSet, Entry
from lockgate.manifests import ObjectKey
from runner.pipeline.result import Result
from runner.plan import sequence
from runner.plan.desired import Desired
from runner.plan.health import Health, HealthStatus
from runner.plan.health_exprs import CustomHealth
from runner.plan.ordering import Event, Phase
from runner.plan.sequence import Sequence
from runner.ssa import apply, hooks, wait
from runner.ssa.manager import Manager


@dataclass
class Steps:
    mgr: Manager
    sequence: Sequence
    #: the pass's objects that are applied (members), by key
    items: Mapping[ObjectKey, Desired]
    #: its ``health`` holds the health of each wave waited on
    result: Result
    event: Event
    timeout: float
    dry_run: bool = False
    fail_fast: bool = True
    interrupt: Callable[[], None] | None = None
    #: the hash to record for each hook: its marker once it ran, else what was recorded
    hashes: dict[ObjectKey, str] = field(default_factory=dict)
    #: the health of the waves waited on so far
    health: dict[ObjectKey, Health] = field(default_factory=dict)
    #: ``spec.healthCheckExprs``: custom resources of a wave are judged by them, as in the final wait
    custom: CustomHealth | None = None
    #: the members the inventory records: a hook's previous run among them is the sync's own
    recorded: frozenset[ObjectKey] = frozenset()

    @classmethod
    def plan(
        cls,
        mgr: Manager,
        desired: list[Desired],
        result: Result,
        *,
        event: Event,
        recorded: Mapping[ObjectKey, str],
        requested: bool,
        timeout: float,
        dry_run: bool,
        fail_fast: bool,
        interrupt: Callable[[], None] | None,
        custom: CustomHealth | None = None,
    ) -> tuple[list[Desired], Steps]:
        """Read the waves and hooks of ``desired`` (``sequence.plan``); the objects as sent and
        the steps, whose ``items`` are the members (every object that is applied)."""
        desired, order = sequence.plan(
            desired, event=event, digest=result.digest, recorded=recorded, requested=requested
        )
        items = {d.key: d for d in desired if d.policy.applies and d.key not in order.never}
        hashes = {key: recorded[key] for key in order.hooks if key in recorded}
        steps = cls(
            mgr,
            order,
            items,
            result,
            event,
            timeout,
            dry_run,
            fail_fast,
            interrupt,
            hashes,
            custom=custom,
            recorded=frozenset(recorded),
        )
        return desired, steps

    def preflight_items(self, desired: list[Desired]) -> list[Desired]:
        """What the pre-flight dry-runs: every object but the hooks that do not run, and the due
        hooks as forced (the previous run is deleted before the hook is created again)."""
        chosen: list[Desired] = []
        for item in desired:
            if item.key in self.sequence.hooks:
                if item.key not in self.sequence.due:
                    continue
                forced = dataclasses.replace(item.policy, force=True)
                item = dataclasses.replace(item, policy=forced)
            chosen.append(item)
        return chosen

    def check(self, live: Collection[ObjectKey]) -> None:
        """Refuse, before any write, a due hook that cannot run again or whose name another's
        object has (``hooks.check_replaceable``); ``live``: our members the pre-flight listed."""
        due = [(self.items[key], self.sequence.hooks[key]) for key in self.sequence.due]
        hooks.check_replaceable(self.mgr, due, live, recorded=self.recorded, sync=self.result.name)

    def skipped(self) -> ChangeSet:
        """Entries for the objects never applied and the hooks that do not run in this pass."""
        changeset = ChangeSet()
        for key, why in self.sequence.never.items():
            changeset.add(Entry(key, Action.SKIPPED, f"never applied ({why})"))
        for key, hook in self.sequence.hooks.items():
            if key in self.sequence.due:
                continue
            if hook.phases(self.event) - {Phase.ON_FAILURE}:
                changeset.add(Entry(key, Action.SKIPPED, "hook: ran for this revision already"))
            elif not hook.phases(self.event):
                changeset.add(Entry(key, Action.SKIPPED, f"hook: does not run on {self.event.value}"))
        return changeset

    def run_hooks(self, phase: Phase, changeset: ChangeSet, *, wave: int | None = None) -> None:
        """The due hooks of ``phase`` (only those of ``wave`` when given), wave by wave."""
        for at, keys in self.sequence.hook_waves(phase):
            if wave is not None and at != wave:
                continue
            due = [(self.items[key], self.sequence.hooks[key]) for key in keys]
            options = hooks.HookOptions(
                timeout=self.timeout, dry_run=self.dry_run, recorded=self.recorded, sync=self.result.name
            )
            try:
                done = hooks.run(self.mgr, due, phase=phase, options=options, interrupt=self.interrupt)
            except (hooks.HookFailed, apply.ApplyFailed, apply.StageAbandoned) as exc:
                changeset.extend(exc.changeset)
                raise
            changeset.extend(done)
            for key in keys:
                if self.sequence.settles(key, phase):
                    self.hashes[key] = self.items[key].hash

    def wait_wave(self, index: int, changeset: ChangeSet) -> None:
        """Wait until the ``index``-th wave is healthy (asked only when more is to be written)."""
        if self.dry_run:
            return
        wave, keys = self.sequence.waves[index]
        skipped = {e.key for e in changeset.of(Action.SKIPPED)}
        awaited = [
            (key, self.mgr.resource(self.items[key].api_version, key.kind))
            for key in keys
            if key in self.items and key not in skipped
        ]
        settings = wait.WaitOptions(timeout=self.timeout, fail_fast=self.fail_fast, custom=self.custom)
        try:
            self.health.update(wait.wait(self.mgr, awaited, settings, interrupt=self.interrupt))
        except wait.HealthFailed as exc:
            self.health.update(exc.report)
            status = {key: exc.report[key].status for key, _ in awaited}
            failed = [k for k, s in status.items() if s is HealthStatus.FAILED]
            named = failed or [k for k, s in status.items() if s is not HealthStatus.CURRENT]
            raise wait.HealthFailed(
                f"wave {wave}: {exc.headline}; the waves after it were not applied", exc.report, named
            ) from None
        finally:
            self.result.health = {str(k): h for k, h in self.health.items()}
