"""The status page inside ``lockgate serve``: its own listener, its token, its live state.

``create`` returns None when ``Runner.spec.statusPage.address`` is unset (the default: no
page), refuses an address beyond loopback without ``secretRef`` (a ``UsageError`` before
anything starts), and otherwise builds the page's ``HttpServers`` (the same uvicorn stack as
the webhook and metrics endpoints, on a listener of its own so that exposing the webhook
never exposes the page). The token is the ``token`` entry of the Secret, re-read every 30 s
so a rotation takes effect without a restart; one shorter than 16 bytes stops ``serve`` at
start, and a Secret that cannot be read or holds such a token later locks the page (every
request 503) rather than opening it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from lockgate import registry
from lockgate.errors import LockgateError, UsageError
from runner.kube.client import Kube
from runner.pipeline import secretrefs
from runner.pipeline.runnerdoc import StatusPageSettings
from runner.serve import listener
from runner.serve.http import HttpServers, parse_address
from runner.serve.scheduler import Outcome, SyncState
from runner.serve.web import app, cluster, fleet
from runner.serve.web.live import Recorder

log = logging.getLogger("lockgate.serve")

TOKEN_CACHE_SECONDS = 30.0
TOKEN_FIELD = "spec.statusPage.secretRef.name"


def check(settings: StatusPageSettings, *, where: str, taken: Sequence[str] = ()) -> None:
    """Refuse a page reachable beyond loopback without a token, or on another listener's port."""
    if settings.address is None:
        return
    _, port = parse_address(settings.address)
    clash = [a for a in taken if port and parse_address(a)[1] == port]
    if clash:
        raise UsageError(
            f"{where}: Runner spec.statusPage.address {settings.address!r} uses the port of {clash[0]!r} "
            "(metricsAddress or webhookAddress): the page has a listener of its own; pick another port"
        )
    if not app.is_loopback(settings.address) and settings.secret_ref is None:
        raise UsageError(
            f"{where}: Runner spec.statusPage.address {settings.address!r} listens beyond loopback, "
            "so the page needs a token: set spec.statusPage.secretRef to a Secret with a 'token' entry, "
            "or listen on 127.0.0.1 and reach it with kubectl port-forward (docs/status-page.md)"
        )


class ServedPage:
    def __init__(
        self,
        settings: StatusPageSettings,
        *,
        kube: Kube,
        namespace: str,
        snapshot: Callable[[], list[SyncState]],
        namespaces: Callable[[], dict[str, str]],
        registry_for: cluster.RegistryFor,
    ) -> None:
        assert settings.address is not None
        self.settings = settings
        self.kube = kube
        self.namespace = namespace
        self.recorder = Recorder()
        self._snapshot = snapshot
        self._namespaces = namespaces
        self._token: tuple[float, bytes | None] = (0.0, None)
        self._token_lock = threading.Lock()
        self._registry_for = registry_for
        self._halves = fleet.PublicHalves()
        reader = cluster.Reader(
            kube,
            namespaces=lambda: sorted(set(namespaces().values())),
            registry_for=registry_for,
            live=self._live,
            generation=lambda: self.recorder.generation,
            fleet=fleet.FleetCache(self._fleet_source),
        )
        token = self.token if settings.secret_ref is not None else (lambda: None)
        loopback = app.is_loopback(settings.address)
        self.http = HttpServers(
            app.build_app(reader, token=token, loopback_only=loopback),
            [settings.address],
            limits=listener.PAGE,
        )

    def _live(self) -> dict[str, cluster.Configured]:
        states = self._snapshot()
        live = self.recorder.live(states)
        where = self._namespaces()
        return {
            s.name: cluster.Configured(namespace=where.get(s.name, self.namespace), live=live[s.name])
            for s in states
        }

    def _fleet_source(self, sync: str) -> fleet.FleetSource | None:
        """Where the page reads a sync's attestations and whose word counts (its configuration now)."""
        options = next((s.options for s in self._snapshot() if s.name == sync), None)
        if options is None:
            return None
        client = self._registry_for(sync, options.source.url)
        return fleet.served_source(options, kube=self.kube, client=client, halves=self._halves)

    def token(self) -> bytes | None:
        """The page's token; ``b""`` (every request 503) while the Secret cannot be read or its
        token is unusable: closed, never open."""
        ref = self.settings.secret_ref
        assert ref is not None
        with self._token_lock:
            at, token = self._token
            if token is not None and time.monotonic() - at < TOKEN_CACHE_SECONDS:
                return token
            reader = secretrefs.SecretReader(self.kube, self.namespace)
            try:
                data = reader.read(ref, field=TOKEN_FIELD)
            except LockgateError as exc:
                log.warning("cannot read the status page Secret", extra={"reason": exc.message})
                found = token or b""
            else:
                try:
                    found = secretrefs.usable_token(
                        data, where=reader.where(ref, TOKEN_FIELD), what="status page"
                    )
                except UsageError as exc:
                    log.error(
                        "status page token refused; the page answers 503", extra={"reason": exc.message}
                    )
                    found = b""
            self._token = (time.monotonic(), found)
            return found

    def check_token(self) -> None:
        """At start: a token that is missing or too short, or a Secret that does not exist, is a
        ``UsageError``; a Secret that cannot be read yet locks the page until it can."""
        ref = self.settings.secret_ref
        if ref is None:
            return
        reader = secretrefs.SecretReader(self.kube, self.namespace)
        try:
            data = reader.read(ref, field=TOKEN_FIELD)
        except UsageError:
            raise
        except LockgateError as exc:
            log.warning("cannot read the status page Secret yet", extra={"reason": exc.message})
            return
        secretrefs.usable_token(data, where=reader.where(ref, TOKEN_FIELD), what="status page")

    def observe(self, outcome: Outcome) -> None:
        self.recorder.observe(outcome)

    def start(self) -> None:
        self.http.start()
        log.info("status page", extra={"address": self.settings.address})

    def stop(self, timeout: float) -> None:
        self.http.stop(timeout)


def create(
    settings: StatusPageSettings,
    *,
    where: str,
    taken: Sequence[str] = (),
    kube: Kube,
    namespace: str,
    snapshot: Callable[[], list[SyncState]],
    namespaces: Callable[[], dict[str, str]],
    registry_for: Callable[[str, str], registry.RegistryClient | None],
) -> ServedPage | None:
    """The page of a ``serve``, or None when it is off; raises ``UsageError`` for an open one."""
    check(settings, where=where, taken=taken)
    if settings.address is None:
        return None
    return ServedPage(
        settings,
        kube=kube,
        namespace=namespace,
        snapshot=snapshot,
        namespaces=namespaces,
        registry_for=registry_for,
    )
