"""``lockgate serve``: the scheduler, the HTTP endpoints, the Leases and the reloads, wired together.

One process: the scheduler's pool runs passes (``pipeline.reconcile``) on one shared
Kubernetes client; registry clients are kept per host and credentials (``registries``) so the cheap checks
reuse their connections. ``start`` opens the listeners before this replica joins the
membership (``replica``), so one that cannot start never gets syncs. With a Runner's
``spec.capabilities``, a thread of its own publishes what the cluster serves every
``interval`` it changed (``pipeline.capabilities``; a registry away delays nothing else). A housekeeping
thread reloads the configuration when the file's bytes change (a mounted ConfigMap
changes by symlink swap, so the file is re-read rather than watched for events), renews
this replica's membership, checks that the API server answers (for ``/readyz``), marks the
inventories of suspended syncs (``inventory.suspended``, for ``lockgate sync``) and moves
request counts into the metrics. A watch per runner namespace turns
``lockgate.dev/requestedAt`` annotations into requested passes. What holds a sync without
a pass (a ``dependsOn`` sync not ready, a source that cannot be checked) is recorded on its
parent (``holds``), so ``lockgate status`` tells it too. A sync that left the configuration
(a reload dropped it, or ``serve`` started without it) is deleted by its ``deletionPolicy``
(``departures``), only by the replica that may and under its Lease.

``stop`` (SIGTERM) stops taking work, lets running passes end at their next write, or at
once in a health wait (``ShuttingDown``; the inventory already holds the union, so nothing
is half-written, and the pass records that it was abandoned), releases Leases, leaves the
membership and stops the HTTP servers, inside the grace period; "stopped" is the last line.
"""

from __future__ import annotations

import hashlib
import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import prometheus_client

from lockgate import registry
from lockgate.errors import Abandoned, LockgateError, UsageError
from runner.inventory import requested, store, suspended
from runner.kube.client import Kube
from runner.pipeline import capabilities, records, secretrefs, source, status
from runner.pipeline import config as config_mod
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from runner.serve import departures, holds, http, leases, listener, receivers, registries
from runner.serve import log as log_mod
from runner.serve.metrics import Metrics
from runner.serve.notify import delivery, notifier
from runner.serve.replica import Replica
from runner.serve.scheduler import Outcome, Scheduler
from runner.serve.web import served

log = logging.getLogger("lockgate.serve")

RELOAD_EVERY = 2.0
READY_EVERY = 10.0
TOKEN_CACHE_SECONDS = 30.0
WEBHOOK_FIELD = "spec.webhook.secretRef.name"
DEFAULT_GRACE = 25.0


@dataclass
class Health:
    """What ``/readyz`` answers: the configuration is loaded and the API server answers."""

    api_ok: bool = False
    api_reason: str = "the API server has not been checked yet"
    reload_error: str = ""


class Service:
    def __init__(
        self,
        config_path: Path,
        *,
        kubeconfig: Path | None = None,
        context: str | None = None,
        identity: str | None = None,
        grace: float = DEFAULT_GRACE,
        leases_enabled: bool = True,
        config: config_mod.Config | None = None,
    ) -> None:
        self.config_path = config_path
        self.config = config or config_mod.load(config_path)
        self.grace = grace
        settings = self.config.runner
        self.namespace = pipeline.runner_namespace(settings.namespace)
        passes = settings.concurrency
        self.kube = Kube.from_kubeconfig(kubeconfig, context=context, pool=passes * 8 + 8)
        self.metrics = Metrics()
        self.health = Health()
        self.identity = identity or leases.default_identity()
        self.keeper = (
            leases.LeaseKeeper(self.kube, identity=self.identity, duration=settings.lease_duration)
            if leases_enabled
            else None
        )
        self.scheduler = Scheduler(
            check=self._check,
            run=self._run,
            concurrency=passes,
            owns=self._owns,
            dependency_ready=self._dependency_ready,
            observe=self._observe,
            elsewhere=self._elsewhere,
        )
        self.replica = (
            Replica(
                leases.Membership(
                    self.kube,
                    namespace=self.namespace,
                    identity=self.identity,
                    duration=settings.membership_duration,
                    config=self.config.shared_digest,
                ),
                on_change=self.scheduler.wake,
            )
            if leases_enabled
            else None
        )
        self.notifier = notifier.Notifier(
            delivery.Queue(failed=self.metrics.notification_failed, sent=self.metrics.notification_sent),
            kube=lambda: self.kube,
            cluster=settings.cluster_name,
            instance=self.identity,
        )
        self.registries = registries.Registries(self.kube)
        self._token: tuple[float, bytes | None] = (0.0, None)
        self._stop = threading.Event()
        self._watched: set[str] = set()
        self._api_counts: dict[str, int] = {}
        #: sync name -> runner namespace, for syncs the configuration names
        self._namespaces: dict[str, str] = {}
        #: sync -> the requestedAt value a person set and the next pass answers
        self._requests: dict[str, str] = {}
        #: runner namespaces of syncs a reload removed: where their inventories wait for deletion
        self._left: set[str] = set()
        #: (sync, runner namespace) -> the ServiceAccount its passes ran as in this process
        self._accounts: dict[tuple[str, str], str | None] = {}
        self.departures = departures.Departures(
            self.kube,
            self.keeper,
            departures.Hooks(
                runner=self.namespace,
                configured=lambda: {o.name for o in self.config.syncs},
                namespaces=lambda: {self.namespace, *self._namespaces.values(), *self._left},
                blocked=self._deletion_blocked,
                owns=self._owns,
                guard=self.scheduler.guard,
                service_account=self._service_account,
                deleted=self.metrics.forget,
            ),
        )
        #: the inventories' suspended marks are to be brought in step with the configuration
        self._suspension_due = True
        self.holds = holds.Holds(self.kube, self.keeper, self.scheduler)
        http.check_apart(settings.webhook_address, settings.metrics_address, where=f"--config {config_path}")
        # one listener each, so webhook callers never take what the kubelet's probes need
        self.probes = http.HttpServers(
            http.probes_app(self, self.metrics), [settings.metrics_address], limits=listener.PROBES
        )
        self.receivers = receivers.Directory(
            lambda: self.kube,
            self.namespace,
            lambda: self.config.runner.receivers,
            lambda: [(o.name, o.source.url) for o in self.config.syncs],
            cache_seconds=TOKEN_CACHE_SECONDS,
        )
        self.hooks = http.HttpServers(
            http.hooks_app(self, max_body_bytes=settings.max_body_bytes, registries=self.receivers),
            [settings.webhook_address],
            limits=listener.WEBHOOK,
        )
        self.page = served.create(
            settings.status_page,
            where=f"--config {config_path}",
            taken=[settings.metrics_address, settings.webhook_address],
            kube=self.kube,
            namespace=self.namespace,
            snapshot=self.scheduler.snapshot,
            namespaces=lambda: dict(self._namespaces),
            registry_for=self._page_registry,
        )

    # ---- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        """Listen, then join the replicas and run; a failure on the way leaves nothing behind."""
        self._check_tokens()
        self._configure(self.config)
        self.metrics.reload(True)
        self._check_api()
        try:
            # a port in use raises here, before this replica is a member
            self.probes.start()
            self.hooks.start()
            if self.page is not None:
                self.page.start()
            if self.replica is not None:
                self.replica.join()
            self.scheduler.start()
            threading.Thread(target=self._housekeeping, name="lockgate-housekeeping", daemon=True).start()
            threading.Thread(target=self._capabilities, name="lockgate-capabilities", daemon=True).start()
        except BaseException:
            self._stop.set()
            if self.replica is not None:
                self.replica.leave()
            self.hooks.stop(timeout=1.0)
            self.probes.stop(timeout=1.0)
            if self.page is not None:
                self.page.stop(timeout=1.0)
            raise
        log.info(
            "serving",
            extra={
                "syncs": len(self.config.syncs),
                "identity": self.identity,
                "addresses": ",".join([*self.probes.addresses, *self.hooks.addresses]),
            },
        )

    def wait(self) -> None:
        self._stop.wait()

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self) -> bool:
        """Stop within the grace period; True when every pass ended cleanly."""
        self._stop.set()
        deadline = time.monotonic() + self.grace
        clean = self.scheduler.stop(grace=max(1.0, self.grace - 3.0))
        # what the last passes reported, within what is left of the grace period
        self.notifier.flush(min(notifier.FLUSH_SECONDS, max(0.0, deadline - time.monotonic() - 2.0)))
        if self.replica is not None:
            self.replica.leave()
        self.hooks.stop(timeout=max(0.5, deadline - time.monotonic()))
        self.probes.stop(timeout=max(0.5, deadline - time.monotonic()))
        if self.page is not None:
            self.page.stop(timeout=max(0.5, deadline - time.monotonic()))
        log.info("stopped", extra={"clean": clean})
        return clean

    # ---- configuration -------------------------------------------------------------
    def _configure(self, cfg: config_mod.Config) -> None:
        for options in cfg.syncs:  # at each (re)load: a risk the file's author should hear about
            for warning in options.source.warnings:
                log.warning(warning, extra={"sync": options.name})
        removed = self.scheduler.configure(cfg.syncs, concurrency=cfg.runner.concurrency)
        for name in removed:
            self.metrics.forget(name, self._namespaces.get(name, self.namespace))
            self._left.add(self._namespaces.get(name, self.namespace))
        self.departures.wanted()
        for options in cfg.syncs:
            namespace = pipeline.runner_namespace(options.namespace)
            if namespace not in self._watched:
                self._watched.add(namespace)
                threading.Thread(
                    target=requested.watch_requests,
                    args=(self.kube, namespace, self._on_request, self._stop),
                    name=f"lockgate-requests-{namespace}",
                    daemon=True,
                ).start()
        self._namespaces = {o.name: pipeline.runner_namespace(o.namespace) for o in cfg.syncs}
        # kept after a reload removes the sync: its deletion is made as it ran
        self._accounts.update(
            {(o.name, pipeline.runner_namespace(o.namespace)): o.service_account_name for o in cfg.syncs}
        )

    def _service_account(self, name: str, namespace: str) -> str | None:
        """The ServiceAccount a departed sync is deleted as: the one it ran as in this process,
        else the Runner's defaultServiceAccount (``departures``); never its inventory's."""
        if (name, namespace) in self._accounts:
            return self._accounts[(name, namespace)]
        return self.config.runner.default_service_account

    def reload(self) -> bool:
        """Load the file again if its bytes changed; a bad file is refused and the old one kept."""
        try:
            data = self.config_path.read_bytes()
        except OSError as exc:
            return self._refuse(f"--config {self.config_path}: {exc.strerror}")
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if digest == self.config.digest:
            return False
        try:
            cfg = config_mod.load(self.config_path)
        except LockgateError as exc:
            self.config = _refused(self.config, digest)
            return self._refuse(exc.message)
        old = self.config.runner
        if (old.metrics_address, old.webhook_address, old.status_page) != (
            cfg.runner.metrics_address,
            cfg.runner.webhook_address,
            cfg.runner.status_page,
        ):
            log.warning(
                "listen addresses change on restart, not on reload", extra={"file": str(self.config_path)}
            )
        self.config = cfg
        self._configure(cfg)
        if self.replica is not None:
            self.replica.reconfigured(cfg.shared_digest)
        self._suspension_due = True
        self.notifier.cluster = cfg.runner.cluster_name
        self.health.reload_error = ""
        self.metrics.reload(True)
        log.info("configuration reloaded", extra={"file": str(self.config_path), "syncs": len(cfg.syncs)})
        return True

    def _refuse(self, message: str) -> bool:
        self.health.reload_error = message
        self.metrics.reload(False)
        log.error(
            "configuration refused; the previous one keeps running",
            extra={"file": str(self.config_path), "reason": message},
        )
        return False

    # ---- scheduler hooks ---------------------------------------------------------------
    def _owns(self, name: str) -> bool:
        return self.replica is None or self.replica.owns(name)

    def _deletion_blocked(self) -> str:
        """Why this replica may not delete a sync that left its configuration now ("": it may)."""
        if self.health.reload_error:
            return "the last reload was refused"
        if self.replica is not None:
            if not self.replica.listed:
                return "the other replicas are not known yet"
            if self.replica.standing_by:
                return self.replica.elsewhere()
        return ""

    def _elsewhere(self) -> str:
        return "run by another replica" if self.replica is None else self.replica.elsewhere()

    def _dependency_ready(self, name: str) -> bool:
        """A dependency run by another replica: its parent's Ready condition."""
        namespace = self._namespaces.get(name)
        if namespace is None:
            return False
        try:
            inventory = store.read(self.kube, name, namespace)
        except LockgateError:
            return False
        return inventory.exists and status.readiness(inventory).ready

    def _page_registry(self, sync: str, url: str) -> registry.RegistryClient | None:
        """The status page's client for a sync's registry: the one its passes use."""
        options = next((o for o in self.config.syncs if o.name == sync), None)
        return None if options is None else self.registries.client(options)

    def _check(self, options: pipeline.SyncOptions) -> str:
        client = self.registries.client(options)
        secrets = None
        if options.source.attestations:  # their keys may be in Secrets of the runner namespace
            secrets = secretrefs.SecretReader(self.kube, pipeline.runner_namespace(options.namespace))
        return source.current_digest(options.source, client, secrets=secrets)

    def _run(self, options: pipeline.SyncOptions, requested_by_person: bool, guard: Any) -> Result:
        return self.notifier.around(
            options, lambda applying: self._pass(options, requested_by_person, guard, applying)
        )

    def _pass(
        self,
        options: pipeline.SyncOptions,
        requested_by_person: bool,
        guard: Any,
        applying: Callable[[Result], None] | None,
    ) -> Result:
        with self.holds.lock(options.name):
            return self._pass_locked(options, requested_by_person, guard, applying)

    def _pass_locked(
        self,
        options: pipeline.SyncOptions,
        requested_by_person: bool,
        guard: Any,
        applying: Callable[[Result], None] | None,
    ) -> Result:
        namespace = pipeline.runner_namespace(options.namespace)
        held: leases.Held | None = None
        if self.keeper is not None:
            held = self.keeper.hold(namespace, options.name)
            if held is None:
                result = Result(name=options.name, namespace=namespace)
                result.error = Abandoned(
                    f"Lease lockgate-{options.name} in {namespace} is held by another runner; "
                    "it runs this sync now"
                )
                return result
        lease = held

        def check() -> None:
            # the Lease first: a pass whose Lease is lost may not even record that it stopped
            if lease is not None:
                lease.guard()
            guard()

        requested_at = self._requests.pop(options.name, "") if requested_by_person else ""
        try:
            self.holds.forget(options.name)  # a pass clears what held the sync
            try:
                client = self.registries.client(options)
            except LockgateError as exc:  # e.g. the credentials Secret is missing
                failed = Result(name=options.name, namespace=namespace, url=options.source.url)
                failed.error = exc
                records.early_failure(
                    holds.writer(self.kube, options, namespace, records.recording(check)), failed, exc
                )
                return failed
            return pipeline.reconcile(
                options,
                kube=self.kube,
                guard=check,
                retry_rejected=requested_by_person,
                requested_at=requested_at,
                registry_client=client,
                applying=applying,
                served_by=self.namespace,
            )
        finally:
            if held is not None:
                held.release()

    def _observe(self, outcome: Outcome) -> None:
        self.holds.observe(outcome)
        state = outcome.state
        options = state.options
        namespace = pipeline.runner_namespace(options.namespace)
        result = outcome.result
        fields: dict[str, Any] = {
            "sync": state.name,
            "outcome": outcome.outcome,
            "revision": state.revision,
            "digest": state.digest,
        }
        if result is not None:
            fields["seconds"] = round(result.seconds, 3)
            fields["summary"] = result.changeset.summary()
            if result.error is not None:
                fields["error"] = result.error.message  # whole, with every object it names
            if result.waiting:
                fields["waiting"] = result.waiting
            if result.notes:  # what reconcile prints as notes (an overlay patch that selected nothing)
                fields["notes"] = "; ".join(result.notes)
            self.metrics.observe_pass(options, result, outcome.outcome)
            log.log(
                logging.WARNING if result.error is not None else logging.INFO,
                "pass finished",
                extra={**fields, "reason": outcome.reason},
            )
        elif outcome.outcome != "waiting":  # waiting for a dependency is not a pass
            checked = Result(name=state.name, namespace=namespace, seconds=state.last_seconds)
            self.metrics.observe_pass(options, checked, outcome.outcome)
            level = logging.WARNING if outcome.outcome == "failed" else logging.DEBUG
            log.log(level, "checked", extra={**fields, "reason": outcome.reason})
        self.metrics.set_sync_info(
            state.name,
            namespace,
            options.source.url,
            state.revision,
            state.digest,
            ready=state.ready,
            suspended=options.schedule.suspend,
        )
        if self.page is not None:
            self.page.observe(outcome)

    def _on_request(self, sync: str, value: str) -> None:
        self._requests[sync] = value
        self.scheduler.trigger(sync, f"requestedAt {value}", requested=True)

    # ---- HTTP endpoints (runner.serve.http.Endpoints) -------------------------------------
    def trigger(self, sync: str, reason: str) -> bool:
        return self.scheduler.trigger(sync, reason)

    def knows(self, sync: str) -> bool:
        return self.scheduler.knows(sync)

    def suspended(self, sync: str) -> bool:
        return self.scheduler.suspended(sync)

    def webhook_token(self) -> bytes | None:
        """The webhook token; None without ``webhook.secretRef``; ``b""`` (every hook answers 503,
        closed rather than open) while the Secret cannot be read or its token is unusable."""
        ref = self.config.runner.webhook.secret_ref
        if ref is None:
            return None
        at, token = self._token
        if time.monotonic() - at < TOKEN_CACHE_SECONDS and token is not None:
            return token
        reader = secretrefs.SecretReader(self.kube, self.namespace)
        try:
            data = reader.read(ref, field=WEBHOOK_FIELD)
        except LockgateError as exc:
            log.warning("cannot read the webhook Secret", extra={"reason": exc.message})
            token = token or b""  # the last good token while the API server is away
        else:
            try:
                token = secretrefs.usable_token(data, where=reader.where(ref, WEBHOOK_FIELD), what="webhook")
            except UsageError as exc:
                log.error("webhook token refused; every hook answers 503", extra={"reason": exc.message})
                token = b""
        self._token = (time.monotonic(), token)
        return token

    def _check_tokens(self) -> None:
        """Refuse to start with a webhook or status page token that is missing or too short; a
        Secret that cannot be read yet is checked again whenever the token is needed."""
        ref = self.config.runner.webhook.secret_ref
        if ref is not None:
            reader = secretrefs.SecretReader(self.kube, self.namespace)
            try:
                data = reader.read(ref, field=WEBHOOK_FIELD)
            except LockgateError as exc:
                log.warning("cannot read the webhook Secret yet", extra={"reason": exc.message})
            else:
                secretrefs.usable_token(data, where=reader.where(ref, WEBHOOK_FIELD), what="webhook")
        self.receivers.check()
        if self.page is not None:
            self.page.check_token()

    def ready(self) -> tuple[bool, str]:
        if not self.health.api_ok:
            return False, self.health.api_reason
        notes = [f"last reload refused: {self.health.reload_error}"] if self.health.reload_error else []
        if self.replica is not None and self.replica.standing_by:
            # ready all the same: a rollout to a new configuration must be able to go on
            notes.append(self.replica.elsewhere())
        return True, "ok" + "".join(f" ({note})" for note in notes)

    # ---- housekeeping ----------------------------------------------------------------------
    def _check_api(self) -> None:
        try:
            self.kube.version()
            self.health.api_ok, self.health.api_reason = True, "ok"
        except LockgateError as exc:
            self.health.api_ok = False
            self.health.api_reason = f"the API server does not answer: {exc.message.splitlines()[0]}"

    def _housekeeping(self) -> None:
        last = {"reload": 0.0, "ready": time.monotonic(), "suspension": 0.0}
        while not self._stop.wait(1.0):
            now = time.monotonic()
            if now - last["reload"] >= RELOAD_EVERY:
                last["reload"] = now
                self.reload()
            if now - last["ready"] >= READY_EVERY:
                last["ready"] = now
                self._check_api()
            if self.replica is not None:
                self.replica.tick()
            self.departures.tick(now)
            if self._suspension_due and now >= last["suspension"]:
                # a failure (the API server away, a missing right) is tried again later
                last["suspension"] = now + READY_EVERY
                self._publish_suspension()
            self._move_counts()

    def _capabilities(self) -> None:
        """Publish the cluster's capabilities when ``spec.capabilities`` asks, then every
        ``interval`` (at once after a reload that changes them); a failure is tried again
        within a minute."""
        due, seen = 0.0, None
        while True:
            settings = self.config.runner
            if (settings.capabilities, settings.cluster_name) != seen:
                seen, due = (settings.capabilities, settings.cluster_name), 0.0
            now = time.monotonic()
            interval = settings.capabilities.interval
            if settings.capabilities.url is not None and now >= due:
                due = now + interval
                try:
                    done = capabilities.publish(settings, self.kube, self.namespace)
                except LockgateError as exc:
                    due = now + min(interval, 60.0)
                    log.warning("capabilities not published; trying again", extra={"reason": exc.message})
                else:
                    log.log(logging.INFO if done.written else logging.DEBUG, done.text)
            if self._stop.wait(1.0):
                return

    def _publish_suspension(self) -> None:
        """Mark the inventories of suspended syncs (and unmark resumed ones) so ``lockgate sync``
        can say so; a replica standing by leaves that to the replicas that run the syncs."""
        if self.replica is not None and self.replica.standing_by:
            return
        wanted: dict[str, dict[str, bool]] = {}
        writers: dict[str, Kube] = {}
        for options in self.config.syncs:
            namespace = pipeline.runner_namespace(options.namespace)
            wanted.setdefault(namespace, {})[options.name] = options.schedule.suspend
            user = options.impersonated_user(namespace)  # as its passes write its inventory
            writers[options.name] = self.kube if user is None else self.kube.impersonating(user)
        try:
            for namespace, syncs in wanted.items():
                for name in suspended.publish(self.kube, namespace, syncs, writer=writers.__getitem__):
                    log.info("inventory marked", extra={"sync": name, "suspended": syncs[name]})
        except LockgateError as exc:
            log.warning(
                "could not mark suspended syncs on their inventories; retrying",
                extra={"reason": exc.message.splitlines()[0]},
            )
            return
        self._suspension_due = False

    def _move_counts(self) -> None:
        counts = self.kube.counts
        delta = {verb: n - self._api_counts.get(verb, 0) for verb, n in counts.items()}
        self._api_counts = counts
        self.metrics.count_api({k: v for k, v in delta.items() if v})
        for verb, n in self.registries.new_counts().items():
            self.metrics.count_registry(verb, n)


def _refused(cfg: config_mod.Config, digest: str) -> config_mod.Config:
    """The running configuration, marked as having seen (and refused) ``digest``."""
    from dataclasses import replace

    return replace(cfg, digest=digest)


def run(
    config_path: Path,
    *,
    kubeconfig: Path | None = None,
    context: str | None = None,
    log_format: str | None = None,
    identity: str | None = None,
    grace: float = DEFAULT_GRACE,
) -> bool:
    """``lockgate serve``: run until SIGTERM or SIGINT; True when the stop was clean.

    A configuration that does not load is a ``UsageError`` before anything starts.
    """
    # the file is read before anything logs, so every line is in the format it asks for
    config = config_mod.load(config_path)
    log_mod.configure(log_format or config.runner.log_format)
    # Flux's controllers expose no *_created series; dashboards built for them expect none
    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
    service = Service(
        config_path, kubeconfig=kubeconfig, context=context, identity=identity, grace=grace, config=config
    )

    def on_signal(signum: int, _frame: object) -> None:
        log.info("stopping", extra={"signal": signal.Signals(signum).name})
        service.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    service.start()
    service.wait()
    return service.stop()
