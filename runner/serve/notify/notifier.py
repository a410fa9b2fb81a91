"""What a pass reports, and to whom: commit statuses, events and messages for one ``Notifier``.

A forge (github, gitlab, gitea, bitbucket, bitbucketserver, azuredevops; each one's request
is ``lockgate.forge``'s): ``pending`` when a pass starts applying a digest the inventory did
not hold yet (a new revision, not a drift correction or a retry), then ``success`` or ``failure`` when it
ends. A status equal to the last one sent for that sync, commit and context is not sent
again. The last one sent is kept in memory; after a restart (and in every ``lockgate
reconcile`` run) the inventory stands in for it: a pass of the digest the inventory already
holds, ending as the inventory's last result did, posts nothing. So a restart posts at most
one status per sync that the forge already shows.

Where a status goes is the provider's configuration's alone (``lockgate.forge.destination``):
the host, and with ``address`` the repository, it names; the artifact (whose annotations its
signer writes, a tenant perhaps) picks only the commit. A status the artifact would send
elsewhere is not sent: logged and recorded as a ``CommitStatusRefused`` Event on the sync,
once per digest.

Generic and Slack: an event when a pass changed something, failed, or succeeded after a
failure; the same failure again (a retry) is not sent twice in a row. A failure before the
artifact was pulled has no commit: it reaches generic and Slack, not a forge. Drift a pass
left (``driftDetection.mode: warn``) is one ``DriftDetected`` event when the pass reported it
(``Result.drift_reported``: new drift, not the same drift again, whatever the process).

Microsoft Teams gets the generic events as an Adaptive Card (``teams``). Alertmanager gets one
alert per sync while it fails, resolved when it recovers (``alerts``; after a restart the
inventory's last result stands in for the alert fired before). Event providers send only the
events their filters admit (``eventSeverity``, ``inclusionList``, ``exclusionList``); a
recovery resolves an alert whatever the filters.

Secrets are read when a notification is sent (by the delivery worker, not the pass).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from lockgate import forge
from lockgate.errors import Abandoned, UsageError
from lockgate.forge import destination
from lockgate.forge.base import Credentials, Status
from runner.inventory import events
from runner.kube.client import Kube
from runner.pipeline import reconcile as pipeline
from runner.pipeline.notifications import Provider
from runner.pipeline.result import Result
from runner.pipeline.secretrefs import SecretReader
from runner.plan.inventory import Inventory
from runner.serve.notify import alerts, delivery, messages, teams

log = logging.getLogger("lockgate.notify")

SECRET_FIELD = "spec.notify.secretRef.name"
CERT_FIELD = "spec.notify.certSecretRef.name"
#: how long ``lockgate reconcile`` waits at the end for notifications still being delivered
FLUSH_SECONDS = 10.0
#: the Warning reason of a commit status not sent because the artifact names another host or repository
STATUS_REFUSED = "CommitStatusRefused"
_STATUS_OF = {"success": "Succeeded", "failure": "Failed"}

_StatusKey = tuple[Provider, str, str, str]


class Notifier:
    """Decides per pass; ``queue`` delivers. ``kube`` gives the client that reads Secrets."""

    def __init__(
        self, queue: delivery.Queue, *, kube: Callable[[], Kube], cluster: str = "", instance: str = ""
    ) -> None:
        self.queue = queue
        self._kube = kube
        self.cluster, self.instance = cluster, instance
        self._lock = threading.Lock()
        self._statuses: dict[_StatusKey, tuple[str, str]] = {}
        self._events: dict[tuple[Provider, str], tuple[str, ...]] = {}
        self._waits: dict[tuple[Provider, str], str] = {}
        #: (sync, digest, provider) already told about: no commit named, or a refused destination
        self._told: set[tuple[str, str, Provider]] = set()
        #: alertmanager: the ``startsAt`` of each sync's firing alert
        self._firing: dict[tuple[Provider, str], str] = {}

    # ---- the pass's hooks ---------------------------------------------------------------
    def applying(self, options: pipeline.SyncOptions, result: Result) -> None:
        """``reconcile``'s ``applying`` hook: ``pending`` on a new revision's commit."""
        if options.dry_run or result.previous_digest == result.digest:
            return
        for provider in options.notify:
            if not provider.forge:
                continue
            target = self._target(provider, result)
            if target is None:
                continue
            key = (provider, options.name, target.sha, provider.context)
            with self._lock:
                if key in self._statuses:
                    continue
                state = messages.pending(result)
                self._statuses[key] = state
            self._status(provider, options, result, target, key, state)

    def around(
        self, options: pipeline.SyncOptions, run: Callable[[Callable[[Result], None] | None], Result]
    ) -> Result:
        """``run(applying)`` one pass (``applying`` is None without providers), then report it."""
        if not options.notify:
            return run(None)
        result = run(lambda r: self._safely(self.applying, options, r))
        self._safely(self.finished, options, result)
        return result

    def _safely(
        self,
        hook: Callable[[pipeline.SyncOptions, Result], None],
        options: pipeline.SyncOptions,
        result: Result,
    ) -> None:
        try:
            hook(options, result)
        except Exception:  # a notification must never fail a pass
            log.exception("notification hook failed", extra={"sync": options.name})

    def finished(self, options: pipeline.SyncOptions, result: Result) -> None:
        """After a pass: the final status and the events."""
        if options.dry_run or isinstance(result.error, Abandoned):
            return
        if result.waiting and result.error is None:
            for provider in options.notify:
                if _gets_events(provider):  # the waiting digest's commit is not known: not pulled
                    self._waiting(provider, options, result)
        if result.drift_reported:
            for provider in options.notify:
                if _gets_events(provider):
                    self._drift(provider, options, result)
        if result.skipped:
            return
        for provider in options.notify:
            if provider.forge:
                self._final_status(provider, options, result)
            elif provider.type == "alertmanager":
                self._alert(provider, options, result)
            else:
                self._event(provider, options, result)

    def flush(self, timeout: float = FLUSH_SECONDS) -> int:
        """Deliver what is queued within ``timeout``; how many were given up."""
        return self.queue.flush(timeout)

    # ---- forges -------------------------------------------------------------------------
    def _target(self, provider: Provider, result: Result) -> destination.Target | None:
        """Where ``provider`` posts the status of ``result``'s commit: decided by the provider's
        own configuration (``provider.pin``), the artifact picking only the commit. A refusal
        is logged and recorded as an Event once per digest; nothing is sent."""
        assert provider.pin is not None  # every forge provider is pinned when it is loaded
        found = destination.target(provider.pin, result.source_url, result.source_revision)
        once = (result.name, result.digest, provider)
        if isinstance(found, destination.Target):
            return found
        with self._lock:
            if once in self._told:
                return None
            self._told.add(once)
        if found is None:
            name = provider.type
            log.warning(
                f"sync {result.name}: no {name} commit status: the artifact's "
                f"org.opencontainers.image.source and .revision annotations do not name a {name} "
                "repository and commit",
                extra={"sync": result.name, "digest": result.digest, "provider": name},
            )
            return None
        message = f"commit status to {provider.type} refused ({provider.where}): {found.reason}"
        log.warning(
            f"sync {result.name}: {message}",
            extra={"sync": result.name, "digest": result.digest, "provider": provider.type},
        )
        if result.namespace:
            failed = events.emit(
                self._kube(),
                Inventory(result.name, result.namespace),
                warning=True,
                reason=STATUS_REFUSED,
                message=message,
            )
            if failed:
                log.warning(f"sync {result.name}: could not record the {STATUS_REFUSED} Event: {failed}")
        return None

    def _final_status(self, provider: Provider, options: pipeline.SyncOptions, result: Result) -> None:
        if not result.digest:
            return  # failed before the artifact was pulled: no commit to report on
        target = self._target(provider, result)
        if target is None:
            return
        key = (provider, options.name, target.sha, provider.context)
        state = messages.outcome(result)
        with self._lock:
            last = self._statuses.get(key)
            reported = (
                last is None
                and result.previous_digest == result.digest
                and result.previous_status == _STATUS_OF[state[0]]
            )
            self._statuses[key] = state
            if last == state or reported:
                return
        self._status(provider, options, result, target, key, state)

    def _status(
        self,
        provider: Provider,
        options: pipeline.SyncOptions,
        result: Result,
        target: destination.Target,
        key: _StatusKey,
        state: tuple[messages.State, str],
    ) -> None:
        status = Status(state[0], state[1], provider.context, provider.target_url)

        def prepare() -> delivery.Request:
            credentials = self._credentials(provider, result)
            request = forge.status_request(
                target.repository, target.sha, status, credentials, api_url=target.api_root
            )
            headers = {"User-Agent": messages.CONTROLLER, **request.headers}
            body = messages.status_body(request.body)
            return delivery.Request(request.url, body, headers, ca=self._ca(provider, result))

        def forget() -> None:
            with self._lock:
                if self._statuses.get(key) == state:
                    del self._statuses[key]

        self.queue.submit(
            delivery.Job(
                provider=provider.type,
                sync=options.name,
                what=f"commit status {state[0]} on {target} ({provider.context})",
                prepare=prepare,
                forget=forget,
            )
        )

    # ---- generic and slack ------------------------------------------------------------
    def _event(self, provider: Provider, options: pipeline.SyncOptions, result: Result) -> None:
        failed = result.error is not None
        signature = (
            ("error", messages.reason_of(result), result.revision, messages.message_of(result))
            if failed
            else ("info",)
        )
        key = (provider, options.name)
        with self._lock:
            last = self._events.get(key)
            self._events[key] = signature
        recovered = not failed and last is not None and last[0] == "error"
        if failed and last == signature:
            return  # the same failure again
        if not failed and not result.changeset.changed and not recovered and not result.rolled_back_to:
            return
        if not provider.events.admits("error" if failed else "info", messages.message_of(result)):
            return
        if provider.type == "slack":
            body = messages.slack_message(result, cluster=self.cluster)
        else:
            event = messages.flux_event(result, now=dt.datetime.now(dt.UTC), instance=self.instance)
            body = self._flux(provider, event)

        def prepare() -> delivery.Request:
            return self._event_request(provider, result, body)

        def forget() -> None:
            with self._lock:
                if self._events.get(key) == signature:
                    del self._events[key]

        self.queue.submit(
            delivery.Job(
                provider=provider.type,
                sync=options.name,
                what=f"{'error' if failed else 'info'} event {messages.reason_of(result)}",
                prepare=prepare,
                forget=forget,
            )
        )

    def _event_request(self, provider: Provider, result: Result, body: bytes) -> delivery.Request:
        """The POST of a generic or Slack event: the address (a Secret's wins) and, for generic,
        Flux's component header and the HMAC signature when the Secret has a token."""
        secret = self._secret(provider, result) if provider.secret_ref else {}
        address = secret.get("address", b"").decode().strip() or provider.address
        if not address:
            raise UsageError(
                f"Secret/{self._namespace(provider, result)}/{provider.secret_ref} ({SECRET_FIELD}): "
                "has no 'address' entry, and the provider no address"
            )
        headers: dict[str, str] = alerts.auth_headers(secret) if provider.type == "alertmanager" else {}
        if provider.type == "generic":
            headers["gotk-component"] = messages.CONTROLLER
            token = secret.get("token")
            if token:
                headers["X-Signature"] = messages.signature(token.strip(), body)
        return delivery.Request(address, body, headers)

    def _waiting(self, provider: Provider, options: pipeline.SyncOptions, result: Result) -> None:
        """An event when what the sync waits for changes (not at every pass, nor the countdown);
        after a restart the inventory's last waiting stands in for the last one sent."""
        about = messages.waiting_key(result.waiting)
        key = (provider, options.name)
        with self._lock:
            last = self._waits.get(key)
            self._waits[key] = about
        if last == about or (last is None and about == messages.waiting_key(result.previous_waiting)):
            return
        if not provider.events.admits("info", result.waiting):
            return
        if provider.type == "slack":
            body = messages.slack_waiting(result, cluster=self.cluster)
        else:
            body = self._flux(
                provider, messages.waiting_event(result, now=dt.datetime.now(dt.UTC), instance=self.instance)
            )

        def prepare() -> delivery.Request:
            return self._event_request(provider, result, body)

        def forget() -> None:
            with self._lock:
                if self._waits.get(key) == about:
                    del self._waits[key]

        self.queue.submit(
            delivery.Job(
                provider=provider.type,
                sync=options.name,
                what=f"info event {messages.WAITING}",
                prepare=prepare,
                forget=forget,
            )
        )

    def _drift(self, provider: Provider, options: pipeline.SyncOptions, result: Result) -> None:
        if not provider.events.admits("error", result.drift_reported):
            return
        if provider.type == "slack":
            body = messages.slack_drift(result, cluster=self.cluster)
        else:
            body = self._flux(
                provider, messages.drift_event(result, now=dt.datetime.now(dt.UTC), instance=self.instance)
            )
        self.queue.submit(
            delivery.Job(
                provider=provider.type,
                sync=options.name,
                what=f"error event {messages.DRIFT_DETECTED}",
                prepare=lambda: self._event_request(provider, result, body),
                forget=lambda: None,
            )
        )

    @staticmethod
    def _flux(provider: Provider, event: bytes) -> bytes:
        """Flux's event JSON as ``provider`` takes it: Teams as an Adaptive Card, else as is."""
        return teams.card(json.loads(event)) if provider.type == "msteams" else event

    # ---- alertmanager -----------------------------------------------------------------------
    def _alert(self, provider: Provider, options: pipeline.SyncOptions, result: Result) -> None:
        """Fire (again, at every failing pass) while the sync fails; resolve when it recovers."""
        key = (provider, options.name)
        clock = dt.datetime.now(dt.UTC)
        now = alerts.timestamp(clock)
        if result.error is not None:
            if not provider.events.admits("error", messages.message_of(result)):
                return
            with self._lock:
                starts_at = self._firing.setdefault(key, now)
            lifetime = dt.timedelta(seconds=alerts.LIFETIME_INTERVALS * options.schedule.interval)
            ends_at = alerts.timestamp(clock + lifetime)
            body = alerts.firing(result, cluster=self.cluster, starts_at=starts_at, ends_at=ends_at)
            what = f"alert {alerts.ALERTNAME} firing ({messages.reason_of(result)})"
        else:
            with self._lock:
                fired = self._firing.pop(key, None)
            if fired is None and result.previous_status != "Failed":
                return
            body = alerts.resolved(result, cluster=self.cluster, starts_at=fired, ends_at=now)
            what = f"alert {alerts.ALERTNAME} resolved"

        def forget() -> None:
            if result.error is None:  # the resolve is lost: the next pass tries again
                with self._lock:
                    self._firing.setdefault(key, now)

        self.queue.submit(
            delivery.Job(
                provider=provider.type,
                sync=options.name,
                what=what,
                prepare=lambda: self._event_request(provider, result, body),
                forget=forget,
            )
        )

    # ---- secrets ---------------------------------------------------------------------------
    def _namespace(self, provider: Provider, result: Result) -> str:
        return provider.secret_namespace or result.namespace

    def _credentials(self, provider: Provider, result: Result) -> Credentials:
        secret = self._secret(provider, result)
        token = secret.get("token", b"").decode().strip()
        username = secret.get("username", b"").decode().strip()
        password = secret.get("password", b"").decode().strip()
        if token or (provider.type == "bitbucketserver" and username and password):
            return Credentials(token=token, username=username, password=password)
        also = " (or 'username' and 'password' entries)" if provider.type == "bitbucketserver" else ""
        raise UsageError(
            f"Secret/{self._namespace(provider, result)}/{provider.secret_ref} ({SECRET_FIELD}): "
            f"has no 'token' entry{also}"
        )

    def _ca(self, provider: Provider, result: Result) -> bytes | None:
        if provider.cert_secret_ref is None:
            return None
        namespace = self._namespace(provider, result)
        reader = SecretReader(self._kube(), namespace)
        ca = reader.read(provider.cert_secret_ref, field=CERT_FIELD).get("ca.crt")
        if not ca:
            raise UsageError(
                f"Secret/{namespace}/{provider.cert_secret_ref} ({CERT_FIELD}): has no 'ca.crt' entry "
                "(the PEM CA certificate the forge's TLS certificate chains to)"
            )
        return ca

    def _secret(self, provider: Provider, result: Result) -> dict[str, bytes]:
        if provider.secret_ref is None:
            return {}
        reader = SecretReader(self._kube(), self._namespace(provider, result))
        return reader.read(provider.secret_ref, field=SECRET_FIELD)


def _gets_events(provider: Provider) -> bool:
    """Waiting and drift events: not for commit statuses, nor Alertmanager (its alert is the failure)."""
    return not provider.forge and provider.type != "alertmanager"


def one_shot(kubeconfig: Path | None, *, cluster: str = "", context: str | None = None) -> Notifier:
    """A ``Notifier`` for ``lockgate reconcile``: ``flush`` it before exiting."""
    made: list[Kube] = []

    def kube() -> Kube:
        if not made:
            made.append(Kube.from_kubeconfig(kubeconfig, context=context))
        return made[0]

    return Notifier(delivery.Queue(), kube=kube, cluster=cluster)
