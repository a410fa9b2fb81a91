"""Server-side apply of one stage: list what is live, classify, send only what changed.

Per stage, the live members are listed once per resource and namespace (label selector
``applyset.kubernetes.io/part-of=<id>``, paged) instead of one GET per object, and the
no-op fast path (``classify.fast_unchanged``) is decided while listing, so only drifted
objects are kept in memory. Objects not yet labelled as members are applied directly
(the server answers 201 when it created them) unless a dry run or ``IfNotPresent`` needs
to know first. A listed object that may have changed is applied at once and classified
by comparing the server's answer with the listed copy (a dry run first only in
``--dry-run``). Kinds are sent in Flux's order; objects of one kind go concurrently.
Immutable-field errors recreate the object only when forced. An object with ignored fields
(``spec.ignore``) is sent as ``runner.plan.ignore.payload`` makes it from the live copy; an
object whose drift the mode leaves (``spec.driftDetection``, ``runner.plan.drift``) is only
dry-run (``warn``) or not looked at (``disabled``), never written.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from lockgate.diff.changeset import Action, ChangeSet, Entry
from lockgate.errors import Abandoned, ApplyError, LockgateError
from lockgate.manifests import ObjectKey
from runner.kube.discovery import Resource
from runner.kube.errors import KubeError, NotFoundError
from runner.plan import applyset, classify, drift, ignore, kinds, takeover
from runner.plan.desired import Desired
from runner.plan.objects import labels_of
from runner.plan.policy import SSAMode
from runner.plan.reserved import Reserved
from runner.ssa import owners
from runner.ssa.manager import Manager

MAX_LISTED = 20
FORCE_HINT = "pass --force or annotate the object with lockgate.dev/force: enabled to recreate it"


@dataclass(frozen=True)
class ApplyOptions:
    force: bool = False
    dry_run: bool = False
    recreate_timeout: float = 60.0
    #: ``spec.driftDetection.mode``: what to do with an object changed in the cluster
    drift: drift.Mode = drift.Mode.ENABLED
    #: the sync and the runner namespaces whose records no object may take (``runner.plan.reserved``)
    reserved: Reserved | None = None


class ApplyFailed(ApplyError):
    """Some objects were refused; ``changeset`` holds what was done before the failure."""

    def __init__(self, errors: Sequence[LockgateError], changeset: ChangeSet) -> None:
        lines = [e.message for e in errors]
        if len(lines) == 1:
            super().__init__(lines[0])
        else:
            shown = lines[:MAX_LISTED]
            if len(lines) > MAX_LISTED:
                shown.append(f"... and {len(lines) - MAX_LISTED} more")
            super().__init__(f"{len(lines)} objects failed to apply", details=shown)
        self.errors = list(errors)
        self.changeset = changeset
        codes = {e.exit_code for e in errors}
        if len(codes) == 1:  # e.g. every request met a dead cluster: exit as that, not "refused"
            self.exit_code = codes.pop()


#: what ``StageApplier.index`` lists: our members, another set's members, ApplySet parents
_OURS, _FOREIGN, _PARENTS = "ours", "foreign", "parents"


def _may_be_parent(res: Resource) -> bool:
    """Secrets and ConfigMaps: the kinds an ApplySet parent is (kubectl's, lockgate's Secrets)."""
    return not res.group and res.kind in ("Secret", "ConfigMap")


class _Unchanged:
    """Marker: decided unchanged while listing."""


UNCHANGED = _Unchanged()
Live = dict[str, Any] | _Unchanged


def _about(item: Desired, exc: LockgateError) -> LockgateError:
    """A refusal of ``item``, named in the message; other failures (the cluster is unreachable,
    the credentials are refused) are not about the object and keep their class and exit code."""
    if not isinstance(exc, ApplyError):
        return exc
    detail = item.secret.scrub(exc.message)  # a server may quote the value it refused
    message = f"{item.key} (from {item.origin}): {detail}" if item.origin else f"{item.key}: {detail}"
    return exc.about(message) if isinstance(exc, KubeError) else ApplyError(message)


#: the same naming for the other verbs (the hook runner)
about = _about


class StageApplier:
    def __init__(self, mgr: Manager, options: ApplyOptions, recorded: Mapping[ObjectKey, str]) -> None:
        self.mgr = mgr
        self.options = options
        self.recorded = recorded

    # ---- listing -------------------------------------------------------------------
    def index(
        self, items: Sequence[Desired], resources: Mapping[ObjectKey, Resource], *, foreign: bool = True
    ) -> dict[ObjectKey, Live]:
        """The live members of our set, and a refusal of any object that is another's.

        First, without a request, the objects that take a name or label only lockgate writes
        (``runner.plan.reserved``). Then two selective LISTs per resource and namespace: our
        members (the fast path), and objects labelled part of a *different* ApplySet (usually
        none, so a small answer). An object found there is refused unless annotated
        ``lockgate.dev/adopt: enabled``: two syncs would otherwise take it from each other on
        every pass (kapp refuses too). For Secrets and ConfigMaps, the kinds a parent is, a
        third LIST finds the ApplySet parents among them (in a namespace the configuration
        does not know as a runner namespace too), which no adoption takes.

        ``foreign=False`` leaves out the second LIST: the pre-flight asks instead, by its dry
        runs, which objects outside our set exist at all, and reads only those
        (``refuse_foreign``). In a namespace many syncs share, that LIST answered with every
        other sync's objects on every pass, which made converging N syncs cost N² objects read.
        """
        self._refuse_reserved(items)
        groups: dict[tuple[Resource, str], dict[str, Desired]] = {}
        for item in items:
            res = resources.get(item.key)
            if res is not None:
                groups.setdefault((res, item.key.namespace), {})[item.key.name] = item

        def list_group(task: tuple[str, tuple[Resource, str], dict[str, Desired]]) -> dict[ObjectKey, Live]:
            which, (res, namespace), wanted = task
            selector = {
                _OURS: self.mgr.member_selector,
                _FOREIGN: self.mgr.foreign_selector,
                _PARENTS: applyset.ID_LABEL,
            }[which]
            found: dict[ObjectKey, Live] = {}
            for live in self.mgr.kube.list_all(res, namespace, label_selector=selector):
                item = wanted.get(live.get("metadata", {}).get("name", ""))
                if item is None:
                    continue
                if which == _PARENTS or (which == _FOREIGN and not item.policy.adopt):
                    found[item.key] = live
                if which != _OURS:
                    continue
                fast = classify.fast_unchanged(
                    item,
                    live,
                    recorded_hash=self.recorded.get(item.key, ""),
                    manager=self.mgr.field_manager,
                    overrides=self.mgr.override_managers,
                )
                found[item.key] = UNCHANGED if fast else live
            return found

        tasks = [
            (which, group, wanted)
            for group, wanted in groups.items()
            for which in (
                _OURS,
                *((_FOREIGN,) if foreign else ()),
                *((_PARENTS,) if _may_be_parent(group[0]) else ()),
            )
        ]
        index: dict[ObjectKey, Live] = {}
        refused: dict[ObjectKey, LockgateError] = {}
        by_key = {item.key: item for item in items}
        for (which, _, _), result in zip(tasks, self.mgr.each(list_group, tasks), strict=True):
            if isinstance(result, LockgateError):
                raise result
            for key, live in result.items():
                if which == _OURS:
                    index[key] = live
                elif isinstance(live, dict) and (which == _PARENTS or key not in refused):
                    refused[key] = (self._parent if which == _PARENTS else self._owned_elsewhere)(
                        by_key[key], live
                    )
        if refused:
            raise ApplyFailed([refused[key] for key in sorted(refused, key=str)], ChangeSet())
        return index

    def refuse_foreign(self, existing: Sequence[tuple[Desired, Resource]]) -> None:
        """Refuse any of ``existing`` (objects outside our set that the cluster holds) that is
        another ApplySet's member, as the foreign LIST of ``index`` would have."""

        def owned_elsewhere(task: tuple[Desired, Resource]) -> LockgateError | None:
            item, res = task
            if item.policy.adopt:
                return None
            live = self.mgr.kube.get(res, item.key.namespace, item.key.name)
            if live is None:
                return None
            other = labels_of(live).get(applyset.PART_OF_LABEL)
            if other is None or other == self.mgr.set_id:
                return None
            return self._owned_elsewhere(item, live)

        found = self.mgr.each(owned_elsewhere, existing)
        errors = [e for e in found if isinstance(e, LockgateError)]
        if errors:
            raise ApplyFailed(sorted(errors, key=lambda e: e.message), ChangeSet())

    def _sync(self) -> str:
        reserved = self.options.reserved
        return f"Sync {reserved.sync} may not apply it: " if reserved is not None else ""

    def _refuse_reserved(self, items: Sequence[Desired]) -> None:
        reserved = self.options.reserved
        if reserved is None:
            return
        errors = []
        for item in items:
            if not item.policy.applies:
                continue  # never written by a pass (ssa: Ignore, reconcile: disabled)
            why = reserved.why(item.key, item.body)
            if why is not None:
                errors.append(_about(item, ApplyError(reserved.message(why))))
        if errors:
            raise ApplyFailed(errors, ChangeSet())

    def _parent(self, item: Desired, live: dict[str, Any]) -> LockgateError:
        owner = owners.parent(live)
        return _about(
            item,
            ApplyError(
                f"{self._sync()}it is the ApplySet parent of {owner}, whose records it would replace; "
                "no adoption takes a parent: rename the object or remove it from the artifact"
            ),
        )

    def _owned_elsewhere(self, item: Desired, live: dict[str, Any]) -> LockgateError:
        other = labels_of(live).get(applyset.PART_OF_LABEL, "")
        owner = owners.describe(self.mgr.kube, other)
        return _about(
            item,
            ApplyError(
                f"{self._sync()}already applied by {owner}; one object has one owner: remove it from one "
                "of the two, or annotate it lockgate.dev/adopt: enabled to take it over"
            ),
        )

    # ---- drift ---------------------------------------------------------------------
    def leaves(self, item: Desired) -> drift.Mode | None:
        """``warn`` or ``disabled`` when a difference from the live object is drift the mode
        leaves: the artifact's version is the one last applied (same hash). None: send it."""
        mode = self.options.drift if item.policy.drift_detection else drift.Mode.DISABLED
        if mode is drift.Mode.ENABLED or item.policy.ssa is SSAMode.IF_NOT_PRESENT:
            return None
        recorded = self.recorded.get(item.key, "")
        return mode if recorded and recorded == item.hash else None

    def _detect(self, item: Desired, res: Resource, live: dict[str, Any]) -> Entry:
        """``warn``: what a correction would change, by a dry run; nothing is written."""
        try:
            found = self._dry_run(item, res, live)
        except KubeError as exc:
            if not exc.is_immutable:
                raise
            why = f"{drift.NOT_CORRECTED}; correcting it needs the object recreated"
            return Entry(item.key, Action.UNCHANGED, why, drifted=True)
        if not found.changes:
            return Entry(item.key, Action.UNCHANGED)
        return Entry(item.key, Action.UNCHANGED, drift.NOT_CORRECTED, found.changes, drifted=True)

    def payload_for(self, item: Desired, live: dict[str, Any]) -> dict[str, Any]:
        """What is sent for ``item`` when ``live`` is its live object."""
        if not item.ignored:
            return item.body
        return ignore.payload(
            item.body,
            live,
            item.ignored,
            manager=self.mgr.field_manager,
            takes_over=item.policy.takes_over,
            overrides=self.mgr.override_managers,
        )

    # ---- one object ----------------------------------------------------------------
    def one(self, item: Desired, res: Resource | None, state: Live | None) -> Entry:
        if not item.policy.applies:
            why = "ssa: Ignore" if item.policy.ssa is SSAMode.IGNORE else "reconcile: disabled"
            return Entry(item.key, Action.SKIPPED, why)
        if res is None:
            return Entry(item.key, Action.CREATED, "kind not installed yet; not validated (dry run)")
        if isinstance(state, _Unchanged):
            return Entry(item.key, Action.UNCHANGED)
        left = self.leaves(item)
        if left is drift.Mode.DISABLED:
            return Entry(item.key, Action.UNCHANGED)  # not looked at
        kube = self.mgr.kube
        try:
            live = state
            if live is None:
                # with ignored fields the live copy decides what is sent: fetched first; so under
                # override managers (adopt), whose fields are taken over before the one apply
                fetch = (
                    self.options.dry_run
                    or item.policy.ssa is SSAMode.IF_NOT_PRESENT
                    or bool(self.mgr.override_managers)
                )
                if not (fetch or item.ignored or left):
                    return self._apply_unlisted(item, res)
                live = kube.get(res, item.key.namespace, item.key.name)
            if live is None:
                if left:
                    return Entry(item.key, Action.SKIPPED, drift.NOT_RECREATED, drifted=True)
                return self._create(item, res)
            if item.policy.ssa is SSAMode.IF_NOT_PRESENT:
                return Entry(item.key, Action.SKIPPED, "exists; ssa: IfNotPresent")
            if left:
                return self._detect(item, res, live)
            if not self.options.dry_run:
                return self._update(item, res, live)
            try:
                found = self._dry_run(item, res, live)
            except KubeError as exc:
                if exc.is_immutable:
                    return self._recreate(item, res, exc)
                raise
            return Entry(item.key, found.action, found.reason, found.changes)
        except LockgateError as exc:
            raise _about(item, exc) from None

    def _dry_run(self, item: Desired, res: Resource, live: dict[str, Any]) -> classify.Classification:
        """Dry-run ``item`` against its live object; raises ``KubeError`` (e.g. immutable fields)."""
        manager, overrides = self.mgr.field_manager, self.mgr.override_managers
        body = self.payload_for(item, live)
        took_over = item.policy.takes_over and takeover.needs_takeover(live, manager, overrides)
        # an override manager's Apply entry becomes ours whole: a dry run under its name shows
        # what our apply does then (its fields we do not send removed, and defaulted again
        # by the server, as the real apply's are)
        acting = takeover.acting_as(live, manager, overrides) if took_over else manager
        _, dry = self.mgr.kube.apply(res, body, manager=acting, dry_run=True)
        if took_over:
            # the real pass takes kubectl's fields over first, so its apply removes those we
            # do not set: show exactly that, field by field
            dry = takeover.predict_after_takeover(live, dry, body, acting, overrides)
        return classify.compare(
            live, dry, took_over=took_over, secret=item.secret, ignored=item.ignored, desired=body
        )

    def _update(self, item: Desired, res: Resource, live: dict[str, Any]) -> Entry:
        """Apply at once and classify by comparing the answer with the live copy.

        A server-side apply that changes nothing writes nothing, so no dry run is needed
        first: one request per object that is not known unchanged, as kubectl sends.
        """
        kube, manager, overrides = self.mgr.kube, self.mgr.field_manager, self.mgr.override_managers
        took_over = item.policy.takes_over and takeover.needs_takeover(live, manager, overrides)
        body = self.payload_for(item, live)
        if took_over:
            patch = takeover.takeover_patch(live, manager, overrides)
            kube.json_patch(res, item.key.namespace, item.key.name, patch)
        try:
            _, after = kube.apply(res, body, manager=manager)
        except KubeError as exc:
            if exc.is_immutable:
                return self._recreate(item, res, exc)
            raise
        found = classify.compare(
            live, after, took_over=took_over, secret=item.secret, ignored=item.ignored, desired=body
        )
        return Entry(item.key, found.action, found.reason, found.changes)

    def _create(self, item: Desired, res: Resource) -> Entry:
        if self.options.dry_run:
            try:
                self.mgr.kube.apply(res, item.body, manager=self.mgr.field_manager, dry_run=True)
            except NotFoundError:
                return Entry(item.key, Action.CREATED, "its namespace is created by this pass")
            return Entry(item.key, Action.CREATED)
        self.mgr.kube.apply(res, item.body, manager=self.mgr.field_manager)
        return Entry(item.key, Action.CREATED)

    def _apply_unlisted(self, item: Desired, res: Resource) -> Entry:
        kube, manager = self.mgr.kube, self.mgr.field_manager
        try:
            created, live = kube.apply(res, item.body, manager=manager)
        except KubeError as exc:
            if exc.is_immutable:
                return self._recreate(item, res, exc)
            raise
        if created:
            return Entry(item.key, Action.CREATED)
        overrides = self.mgr.override_managers
        if item.policy.takes_over and takeover.needs_takeover(live, manager, overrides):
            patch = takeover.takeover_patch(live, manager, overrides)
            kube.json_patch(res, item.key.namespace, item.key.name, patch)
            kube.apply(res, item.body, manager=manager)
        return Entry(item.key, Action.CONFIGURED, "adopted an existing object")

    def _recreate(self, item: Desired, res: Resource, exc: KubeError) -> Entry:
        if not (self.options.force or item.policy.force):
            raise ApplyError(f"{exc.server_message}; the change needs the object recreated: {FORCE_HINT}")
        if self.options.dry_run:
            return Entry(item.key, Action.CONFIGURED, "would be recreated (immutable field changed)")
        kube = self.mgr.kube
        kube.delete(res, item.key.namespace, item.key.name)
        deadline = time.monotonic() + self.options.recreate_timeout
        while kube.get(res, item.key.namespace, item.key.name) is not None:
            if time.monotonic() > deadline:
                raise ApplyError(
                    f"deleted to recreate it, but it is still there after {self.options.recreate_timeout:g}s"
                )
            time.sleep(0.2)
        kube.apply(res, item.body, manager=self.mgr.field_manager)
        return Entry(item.key, Action.CONFIGURED, "recreated (immutable field changed)")


def record_wave(results: Sequence[Entry | LockgateError], changeset: ChangeSet) -> None:
    """Add a wave's entries to ``changeset``; raise ``ApplyFailed`` carrying them if any failed."""
    errors = [r for r in results if isinstance(r, LockgateError)]
    for result in results:
        if isinstance(result, Entry):
            changeset.add(result)
    if errors:
        raise failure(errors, changeset)


class StageAbandoned(Abandoned):
    """The guard refused a wave's remaining writes; ``changeset`` holds what was applied before."""

    def __init__(self, message: str, changeset: ChangeSet) -> None:
        super().__init__(message)
        self.changeset = changeset


def failure(errors: Sequence[LockgateError], changeset: ChangeSet) -> LockgateError:
    """What a wave's failures amount to: the pass stopped (``Abandoned``: the guard refused the
    wave's remaining writes, so that is the one story to tell), or the objects were refused."""
    abandoned = next((e for e in errors if isinstance(e, Abandoned)), None)
    if abandoned is not None:
        return StageAbandoned(abandoned.message, changeset)
    return ApplyFailed(errors, changeset)


def _resolved(mgr: Manager, items: Sequence[Desired]) -> Iterator[tuple[Desired, Resource | ApplyError]]:
    """Each applied item with its resource, or the error of a kind the server does not serve."""
    for item in items:
        if item.policy.applies:
            try:
                yield item, mgr.resource(item.api_version, item.key.kind)
            except ApplyError as exc:
                yield item, exc


def resolve_resources(mgr: Manager, items: Sequence[Desired], *, dry_run: bool) -> dict[ObjectKey, Resource]:
    resources: dict[ObjectKey, Resource] = {}
    for item, found in _resolved(mgr, items):
        if not isinstance(found, ApplyError):
            resources[item.key] = found
        elif not dry_run:
            raise _about(item, found) from None
    return resources


def _crd_kinds(items: Sequence[Desired]) -> set[tuple[str, str]]:
    """(apiVersion, kind) that the CRDs among ``items`` will serve."""
    found: set[tuple[str, str]] = set()
    for item in items:
        if item.key.kind == "CustomResourceDefinition":
            spec = item.body.get("spec") or {}
            kind, group = str((spec.get("names") or {}).get("kind", "")), str(spec.get("group", ""))
            for version in spec.get("versions") or []:
                if isinstance(version, dict) and "name" in version:
                    found.add((f"{group}/{version['name']}", kind))
    return found


@dataclass(frozen=True)
class Preflight:
    """What the pre-flight learnt: the live index of every object it could list (reused by
    ``apply_stage``, so a pass lists once) and the objects left for after the CRD stage."""

    index: dict[ObjectKey, Live]
    deferred: frozenset[ObjectKey]


def preflight(
    mgr: Manager,
    items: Sequence[Desired],
    *,
    recorded: Mapping[ObjectKey, str],
    options: ApplyOptions,
    created_namespaces: Set[str] = frozenset(),
) -> Preflight:
    """A server-side dry run of every object the pass would write, before its first write.

    An object the API server refuses (an invalid field, a quota, an admission webhook, a
    forbidden namespace) stops the pass with the cluster unchanged, instead of after the
    objects before it were applied. Objects known unchanged are not sent (a no-op pass costs
    nothing more); objects whose kind comes from a CRD of the same set wait for the CRD stage
    (``deferred``); an object whose namespace this pass creates is accepted at NotFound.
    """
    crd_kinds = _crd_kinds(items)
    namespaces = {item.key.name for item in items if item.key.kind == "Namespace" and not item.key.group}
    namespaces |= created_namespaces
    resources: dict[ObjectKey, Resource] = {}
    errors: list[LockgateError] = []
    deferred: set[ObjectKey] = set()
    for item, found in _resolved(mgr, items):
        if not isinstance(found, ApplyError):
            resources[item.key] = found
        elif (item.api_version, item.key.kind) in crd_kinds:
            deferred.add(item.key)
        else:
            errors.append(_about(item, found))
    if errors:
        raise ApplyFailed(errors, ChangeSet())
    applier = StageApplier(mgr, options, recorded)
    index = applier.index([i for i in items if i.key in resources], resources, foreign=False)
    todo = [
        item
        for item in items
        if item.key in resources
        and index.get(item.key) is not UNCHANGED
        and item.policy.ssa is not SSAMode.IF_NOT_PRESENT
        and applier.leaves(item) is None  # never written by this pass
    ]

    def check(item: Desired) -> bool:
        """Dry-run ``item``; True when the cluster already holds it (the answer has a
        resourceVersion, which a dry-run create never has)."""
        live = index.get(item.key)
        body = applier.payload_for(item, live) if isinstance(live, dict) else item.body
        try:
            _, answer = mgr.kube.apply(resources[item.key], body, manager=mgr.field_manager, dry_run=True)
        except NotFoundError:
            if item.key.namespace in namespaces:
                return False  # its namespace comes in this pass (the Namespace stage goes first)
            raise
        except KubeError as exc:
            if exc.is_immutable and (options.force or item.policy.force):
                return True  # it exists, and the apply recreates it
            if exc.is_immutable:
                raise ApplyError(
                    f"{exc.server_message}; the change needs the object recreated: {FORCE_HINT}"
                ) from None
            raise
        return bool((answer.get("metadata") or {}).get("resourceVersion"))

    def guarded(item: Desired) -> bool:
        try:
            return check(item)
        except LockgateError as exc:
            raise _about(item, exc) from None

    checked = mgr.each(guarded, todo)
    errors = [r for r in checked if isinstance(r, LockgateError)]
    if errors:
        raise ApplyFailed(errors, ChangeSet())
    # outside our set and in the cluster: another set's member unless shown otherwise;
    # IfNotPresent objects are not dry-run, so each unlisted one is looked at
    existing = [
        item for item, held in zip(todo, checked, strict=True) if held is True and item.key not in index
    ]
    existing += [
        item
        for item in items
        if item.key in resources and item.key not in index and item.policy.ssa is SSAMode.IF_NOT_PRESENT
    ]
    applier.refuse_foreign([(item, resources[item.key]) for item in existing])
    return Preflight(index=index, deferred=frozenset(deferred))


def apply_stage(
    mgr: Manager,
    items: Sequence[Desired],
    *,
    recorded: Mapping[ObjectKey, str],
    options: ApplyOptions,
    known: Preflight | None = None,
) -> ChangeSet:
    """Apply one stage in Flux's kind order; raises ``ApplyFailed`` after the first failing wave.

    ``known``: the pass's pre-flight; its index is reused, so only its deferred objects are listed."""
    changeset = ChangeSet()
    resources = resolve_resources(mgr, items, dry_run=options.dry_run)
    applier = StageApplier(mgr, options, recorded)
    if known is None:
        index = applier.index(items, resources)
    else:
        later = [i for i in items if i.key in known.deferred]
        index = {i.key: known.index[i.key] for i in items if i.key in known.index}
        if later:
            index.update(applier.index(later, resources))
    by_key = {item.key: item for item in items}
    for wave in kinds.waves(sorted(by_key, key=kinds.sort_key)):
        # what is decided without a request (most of a no-op pass) does not go to the pool
        slow = [k for k in wave if index.get(k) is not UNCHANGED and by_key[k].policy.applies]
        done = mgr.each(lambda k: applier.one(by_key[k], resources.get(k), index.get(k)), slow)
        sent = dict(zip(slow, done, strict=True))
        results = [
            sent[k] if k in sent else applier.one(by_key[k], resources.get(k), index.get(k)) for k in wave
        ]
        record_wave(results, changeset)
    return changeset
