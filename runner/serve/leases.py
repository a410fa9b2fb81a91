"""Leases (coordination.k8s.io/v1): one runner at a time per sync, and the replicas that share them.

A sync's Lease ``lockgate-<sync>`` in its runner namespace is held only while a full pass
runs: ``LeaseKeeper.hold`` takes it with optimistic concurrency (a create, or an update
carrying the resourceVersion it read; a 409 means another runner won), a daemon thread
renews it every third of its duration, and ``Held.release`` clears the holder at the end
(client-go's ``ReleaseOnCancel``), so an idle sync costs no API writes. The pass gets
``Held.guard`` as its guard (``Kube.guarded``): once a renewal found the Lease taken, or
the local clock passed the last renewal plus the duration, the pass stops before its next
write with ``Abandoned``. Another runner takes a Lease only ``shard.CLOCK_SKEW`` seconds
after that point, so the two never write at once while the clocks agree within the skew.

``Membership`` is one Lease per replica, ``lockgate-runner-<identity>`` labelled
``lockgate.dev/runner-member=true``, renewed by ``heartbeat`` (rarely: every 30 s with 90 s
duration); ``owns`` assigns syncs among the live members by rendezvous hashing
(``runner.plan.shard``), so ownership moves minimally as replicas come and go, and the
per-sync Lease makes the short overlap while they disagree safe. Each member Lease carries
the digest of the configuration its replica runs (``lockgate.dev/config-digest``): only
members on the same configuration share the syncs, and a replica whose configuration
differs from the longest-running member's stands by (``shard.sharing``). A heartbeat also
deletes member Leases that ran out (a killed replica's), with the resourceVersion it read
as a precondition, so one renewed meanwhile stays. The decisions are pure functions in
``shard``; this module only reads and writes.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from lockgate.errors import Abandoned, LockgateError
from runner.inventory import store
from runner.kube.client import Kube
from runner.kube.discovery import LEASE
from runner.kube.errors import KubeError, NotFoundError
from runner.pipeline import reconcile as pipeline
from runner.pipeline import rollback as rollback_mod
from runner.pipeline.reconcile import SyncOptions
from runner.pipeline.result import Result
from runner.plan import shard

PREFIX = "lockgate-"
MEMBER_PREFIX = "lockgate-runner-"
MEMBER_LABEL = "lockgate.dev/runner-member"
#: on a member Lease: the digest of the configuration that replica runs
CONFIG_ANNOTATION = "lockgate.dev/config-digest"
SYNC_LABEL = "lockgate.dev/sync"
FIELD_MANAGER = "lockgate"
#: how soon a failed renewal is tried again (a normal renewal waits a third of the duration)
RETRY = 1.0
_INVALID = re.compile(r"[^a-z0-9.-]+")

Clock = Callable[[], float]


def default_identity() -> str:
    """``$POD_NAME`` (a Deployment's pod), else the host name and process id."""
    return os.environ.get("POD_NAME") or f"{os.uname().nodename}-{os.getpid()}"


def lease_name(sync: str) -> str:
    return PREFIX + sync


def member_name(identity: str) -> str:
    """The member Lease's name: the identity as a DNS subdomain (lower case, no odd characters)."""
    cleaned = _INVALID.sub("-", identity.lower()).strip("-.")
    return (MEMBER_PREFIX + cleaned)[:253].rstrip("-.")


def _lease(
    namespace: str,
    name: str,
    spec: dict[str, Any],
    labels: dict[str, str],
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": {"app.kubernetes.io/managed-by": "lockgate", **labels},
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": LEASE.api_version, "kind": LEASE.kind, "metadata": metadata, "spec": spec}


def _conflict(exc: KubeError) -> bool:
    return exc.status == 409


def _with_spec(live: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    metadata = {k: v for k, v in live.get("metadata", {}).items() if k != "managedFields"}
    return {"apiVersion": LEASE.api_version, "kind": LEASE.kind, "metadata": metadata, "spec": spec}


class LeaseKeeper:
    """Takes the per-sync Leases for one runner ``identity``."""

    def __init__(
        self,
        kube: Kube,
        *,
        identity: str | None = None,
        duration: float = 30.0,
        clock: Clock = time.time,
        skew: float = shard.CLOCK_SKEW,
    ) -> None:
        if duration < 1:
            raise ValueError("a Lease lasts at least one second")
        self.kube = kube
        self.identity = identity or default_identity()
        self.duration = duration
        self.clock = clock
        self.skew = skew
        self._lock = threading.Lock()
        self._held: set[tuple[str, str]] = set()

    @classmethod
    def from_kubeconfig(
        cls, path: Path | None = None, *, context: str | None = None, **settings: Any
    ) -> LeaseKeeper:
        """A keeper with its own small client (``Kube.from_kubeconfig``: the file, or in-cluster)."""
        return cls(Kube.from_kubeconfig(path, context=context, pool=2), **settings)

    def hold(self, namespace: str, sync: str) -> Held | None:
        """Take the sync's Lease and keep renewing it; None when another live holder has it.

        Also None when this keeper already holds it (a second pass of one sync never runs).
        """
        taken = self.take(namespace, sync)
        return taken if isinstance(taken, Held) else None

    def take(self, namespace: str, sync: str) -> Held | str:
        """As ``hold``, but a refusal says who holds the Lease (the identity, or this runner's own)."""
        with self._lock:
            if (namespace, sync) in self._held:
                return self.identity
            self._held.add((namespace, sync))
        try:
            written, holder, now = self._take(namespace, sync)
        except BaseException:
            self._forget(namespace, sync)
            raise
        if written is None:
            self._forget(namespace, sync)
            return holder
        held = Held(self, namespace, sync, written, taken=now)
        held.start()
        return held

    def _take(self, namespace: str, sync: str) -> tuple[dict[str, Any] | None, str, float]:
        name = lease_name(sync)
        live = self.kube.get(LEASE, namespace, name)
        now = self.clock()
        try:
            if live is None:
                spec = shard.acquired(None, self.identity, now, self.duration)
                body = _lease(namespace, name, spec, {SYNC_LABEL: sync})
                try:
                    return self.kube.create(LEASE, namespace, body), "", now
                except NotFoundError:  # the runner namespace does not exist yet
                    store.ensure_namespace(self.kube, namespace, manager=FIELD_MANAGER)
                    return self.kube.create(LEASE, namespace, body), "", now
            spec = live.get("spec") or {}
            holder = shard.holder_of(spec, self.identity, now, skew=self.skew)
            if holder:
                return None, holder, now
            body = _with_spec(live, shard.acquired(spec, self.identity, now, self.duration))
            return self.kube.replace(LEASE, namespace, body), "", now
        except KubeError as exc:
            if not _conflict(exc):
                raise
        # another runner created or updated it between our read and our write
        won = self.kube.get(LEASE, namespace, name)
        return None, str(((won or {}).get("spec") or {}).get("holderIdentity") or "another runner"), now

    def _forget(self, namespace: str, sync: str) -> None:
        with self._lock:
            self._held.discard((namespace, sync))


class Held:
    """A sync's Lease while this runner holds it; a context manager that releases it on exit."""

    def __init__(
        self, keeper: LeaseKeeper, namespace: str, sync: str, written: dict[str, Any], *, taken: float
    ) -> None:
        self.keeper = keeper
        self.namespace = namespace
        self.sync = sync
        self.name = lease_name(sync)
        self._lock = threading.Lock()
        self._body = written
        self._renewed = taken
        self._expires = taken + keeper.duration
        self._lost: str | None = None
        self._error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew_loop, name=f"lease-{sync}", daemon=True)

    @property
    def where(self) -> str:
        return f"Lease {self.namespace}/{self.name}"

    @property
    def lease(self) -> dict[str, Any]:
        """The Lease as last written by this holder."""
        with self._lock:
            return dict(self._body)

    def start(self) -> None:
        self._thread.start()

    def guard(self) -> None:
        """Raise ``Abandoned`` once the Lease is lost or ran out locally (called before every write)."""
        with self._lock:
            lost, expires, renewed, error = self._lost, self._expires, self._renewed, self._error
        if lost is not None:
            raise Abandoned(lost)
        now = self.keeper.clock()
        if now >= expires:
            raise Abandoned(self._ran_out(now, renewed, error))

    def _ran_out(self, now: float, renewed: float, error: str) -> str:
        why = f" ({error})" if error else ""
        return f"could not renew {self.where} for {now - renewed:.0f}s{why}; stopping before the next write"

    def _renew_loop(self) -> None:
        interval = self.keeper.duration / 3
        wait = interval
        while not self._stop.wait(wait):
            wait = interval if self._renew() else min(interval, RETRY)
            with self._lock:
                if self._lost is not None:
                    return

    def _renew(self) -> bool:
        keeper = self.keeper
        now = keeper.clock()
        with self._lock:
            body, renewed, expires, error = self._body, self._renewed, self._expires, self._error
        if now >= expires:
            self._lose(self._ran_out(now, renewed, error))
            return False
        try:
            spec = shard.renewed(body.get("spec") or {}, now, keeper.duration)
            written = keeper.kube.replace(LEASE, self.namespace, _with_spec(body, spec))
        except KubeError as exc:
            if exc.status == 404:
                self._lose(f"{self.where} was deleted while the pass held it")
                return False
            if _conflict(exc):
                return self._after_conflict()
            self._failed(exc)
            return False
        except LockgateError as exc:
            self._failed(exc)
            return False
        with self._lock:
            self._body, self._renewed, self._expires, self._error = written, now, now + keeper.duration, ""
        return True

    def _after_conflict(self) -> bool:
        """Someone wrote the Lease since our last write: lost unless it still names us."""
        try:
            live = self.keeper.kube.get(LEASE, self.namespace, self.name)
        except LockgateError as exc:
            self._failed(exc)
            return False
        holder = str(((live or {}).get("spec") or {}).get("holderIdentity") or "")
        if live is not None and holder == self.keeper.identity:
            with self._lock:
                self._body = live  # e.g. a label edited by hand: renew on top of it, soon
            return False
        self._lose(f"{self.where} was taken by {holder or 'nobody (released)'}")
        return False

    def _failed(self, exc: LockgateError) -> None:
        with self._lock:
            self._error = exc.message.splitlines()[0]

    def _lose(self, message: str) -> None:
        with self._lock:
            if self._lost is None:
                self._lost = message

    def release(self) -> None:
        """Stop renewing and clear the holder; a Lease already lost is left as it is. Idempotent."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            lost, body = self._lost, self._body
            self._lost = lost or f"{self.where} was released"
        try:
            if lost is None:
                spec = shard.released(body.get("spec") or {}, self.keeper.clock())
                self.keeper.kube.replace(LEASE, self.namespace, _with_spec(body, spec))
        except LockgateError:
            pass  # unreleased, it runs out by itself after its duration
        finally:
            self.keeper._forget(self.namespace, self.sync)

    def __enter__(self) -> Held:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


class Membership:
    """This replica's member Lease and the live members it shares the syncs with."""

    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str,
        identity: str | None = None,
        duration: float = 90.0,
        clock: Clock = time.time,
        skew: float = shard.CLOCK_SKEW,
        config: str = "",
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.identity = identity or default_identity()
        self.duration = duration
        self.clock = clock
        self.skew = skew
        #: the digest of the configuration this replica runs (``Config.shared_digest``)
        self.config = config
        self.name = member_name(self.identity)
        self._lock = threading.Lock()
        self._acquired: float | None = None
        self._last: dict[str, Any] | None = None
        self._known: dict[str, tuple[shard.LeaseState, str]] | None = None
        #: member Leases this replica deleted because they ran out (for its log)
        self.expired: list[str] = []

    def heartbeat(self) -> None:
        """Renew this replica's member Lease (one update; created when missing) and re-read the members.

        Updates, not server-side apply, so the Role needs no ``patch`` on Leases.
        """
        now = self.clock()
        acquired = self._acquired if self._acquired is not None else now
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.duration)),
            "acquireTime": shard.micro_time(acquired),
            "renewTime": shard.micro_time(now),
        }
        last = self._last if self._last is not None else self.kube.get(LEASE, self.namespace, self.name)
        try:
            written = self._create(spec) if last is None else self._replace(last, spec)
        except KubeError as exc:
            if not _conflict(exc):
                raise
            # written since we read it (by hand, or this replica's previous incarnation): on top of it
            live = self.kube.get(LEASE, self.namespace, self.name)
            written = self._create(spec) if live is None else self._replace(live, spec)
        self._last, self._acquired = written, acquired
        self.members()

    def _annotations(self) -> dict[str, str]:
        return {CONFIG_ANNOTATION: self.config} if self.config else {}

    def _create(self, spec: dict[str, Any]) -> dict[str, Any]:
        body = _lease(self.namespace, self.name, spec, {MEMBER_LABEL: "true"}, self._annotations())
        try:
            return self.kube.create(LEASE, self.namespace, body)
        except NotFoundError:
            store.ensure_namespace(self.kube, self.namespace, manager=FIELD_MANAGER)
            return self.kube.create(LEASE, self.namespace, body)

    def _replace(self, live: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        body = _with_spec(live, spec)
        annotations = {
            k: v for k, v in (body["metadata"].get("annotations") or {}).items() if k != CONFIG_ANNOTATION
        }
        body["metadata"]["annotations"] = {**annotations, **self._annotations()}
        try:
            return self.kube.replace(LEASE, self.namespace, body)
        except NotFoundError:  # deleted meanwhile
            return self._create(spec)

    def members(self) -> list[str]:
        """The identities of the live members (listed now). Leases that ran out are ignored, and
        deleted once they ran out with ``skew`` to spare: a killed replica leaves no Lease behind."""
        states: dict[str, tuple[shard.LeaseState, str]] = {}
        now = self.clock()
        for item in self.kube.list_all(LEASE, self.namespace, label_selector=f"{MEMBER_LABEL}=true"):
            state = shard.LeaseState.from_spec(item.get("spec"))
            metadata = item.get("metadata") or {}
            if not state.live(now, skew=self.skew) and metadata.get("name") != self.name:
                self._delete_expired(metadata)
                continue
            if state.holder:
                states[state.holder] = (
                    state,
                    str((metadata.get("annotations") or {}).get(CONFIG_ANNOTATION, "")),
                )
        with self._lock:
            self._known = states
        return sorted(states)

    def _delete_expired(self, metadata: dict[str, Any]) -> None:
        name = str(metadata.get("name", ""))
        try:
            if self.kube.delete(
                LEASE, self.namespace, name, resource_version=str(metadata.get("resourceVersion", ""))
            ):
                self.expired.append(name)
        except KubeError as exc:
            if not _conflict(exc):  # 409: renewed since we listed it, so it stays
                raise

    @property
    def listed(self) -> bool:
        """The members were listed at least once: until then this replica cannot tell whether
        it stands by (``sharing`` counts it as alone)."""
        with self._lock:
            return self._known is not None

    def sharing(self) -> shard.Sharing:
        """Whom this replica shares the syncs with, as of the last ``heartbeat`` or ``members``;
        members whose Lease ran out since are dropped. Never a request: the scheduler asks
        under its lock, and until the first listing succeeds this replica counts as alone."""
        with self._lock:
            known = dict(self._known or {})
        now = self.clock()
        mine = known.pop(self.identity, None)
        joined = mine[0].acquire_time if mine is not None else None
        me = shard.Member(self.identity, joined=joined, config=self.config)
        others = [
            shard.Member(holder, joined=state.acquire_time, config=config)
            for holder, (state, config) in known.items()
            if state.live(now, skew=self.skew)
        ]
        return shard.sharing(me, others)

    def live(self) -> list[str]:
        """The members this replica shares the syncs with (``sharing``), itself among them unless
        it stands by."""
        return list(self.sharing().peers)

    def owns(self, sync: str) -> bool:
        """Whether this replica runs ``sync`` (rendezvous hashing over ``live()``; no request)."""
        return shard.owner(sync, self.live()) == self.identity

    def leave(self) -> None:
        """Delete this replica's member Lease (a stopping replica), so the others take its syncs now."""
        self.kube.delete(LEASE, self.namespace, self.name)
        self._acquired = self._last = None


def _take(keeper: LeaseKeeper, options: SyncOptions) -> tuple[str, Held | str] | Result:
    """The sync's runner namespace and its Lease (or who holds it); a failed attempt as a Result."""
    try:
        pipeline.check_name(options.name)
        namespace = pipeline.runner_namespace(options.namespace)
        return namespace, keeper.take(namespace, options.name)
    except LockgateError as exc:
        return Result(name=options.name, error=exc)


def reconcile(
    keeper: LeaseKeeper,
    options: SyncOptions,
    *,
    kubeconfig: Path | None = None,
    kube: Kube | None = None,
    applying: Callable[[Result], None] | None = None,
    context: str | None = None,
    guard: Callable[[], None] | None = None,
) -> Result:
    """One pass under the sync's Lease (``lockgate reconcile --config``, the CronJob mode).

    A sync whose Lease another live runner holds is skipped (``Result.skipped``), not run and
    not failed; a dry run takes no Lease. ``guard`` is asked before the Lease's own (an
    interrupted command stops the pass). Never raises ``LockgateError``, as ``reconcile``.
    """
    if options.dry_run:
        return pipeline.reconcile(
            options, kube=kube, kubeconfig=kubeconfig, context=context, applying=applying, guard=guard
        )
    taken = _take(keeper, options)
    if isinstance(taken, Result):
        return taken
    namespace, held = taken
    if not isinstance(held, Held):
        return Result(name=options.name, namespace=namespace, skipped=f"held by {held}")

    def both() -> None:
        if guard is not None:
            guard()
        held.guard()

    with held:
        return pipeline.reconcile(
            options, kube=kube, kubeconfig=kubeconfig, context=context, guard=both, applying=applying
        )


def rollback(
    keeper: LeaseKeeper,
    options: SyncOptions,
    *,
    to: str | None = None,
    kubeconfig: Path | None = None,
    context: str | None = None,
) -> Result:
    """``lockgate rollback``: the rollback under the sync's Lease, so it never runs beside a pass.

    A Lease another runner holds is an ``Abandoned`` error naming the holder (try again when
    its pass ends), not a skip: a person asked for this one.
    """
    taken = _take(keeper, options)
    if isinstance(taken, Result):
        return taken
    namespace, held = taken
    if not isinstance(held, Held):
        return Result(
            name=options.name,
            namespace=namespace,
            error=Abandoned(
                f"sync {options.name} is being reconciled by {held} right now (its Lease "
                f"{namespace}/{lease_name(options.name)}); run the rollback again when that pass ends"
            ),
        )
    with held:
        return rollback_mod.by_hand(options, to=to, kubeconfig=kubeconfig, context=context, guard=held.guard)
