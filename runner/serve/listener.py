"""What one listener of ``serve`` allows a caller, and the HTTP protocol that holds callers to it.

Every listener (probes and metrics, webhooks, the status page) runs its own uvicorn server
on its own event loop, so the limits here are per listener: webhook callers can never use
up the connections, the loop or the worker threads that ``/healthz`` needs. uvicorn itself
closes a connection idle between requests (keep-alive) but not one that connects and then
says nothing, or sends its headers a byte at a time; ``GuardedH11`` (uvicorn's h11 protocol,
handed to it through ``Config(http=...)``) adds Go ``net/http``'s server deadlines:

- the request line and headers must arrive within ``header_seconds`` of the connection
  opening or of the previous answer (``ReadHeaderTimeout``), the body within
  ``request_seconds`` (``ReadTimeout``);
- an answer not taken by the caller within ``answer_seconds`` ends the connection
  (``WriteTimeout``), so a caller that stops reading cannot hold a slot and a full buffer;
- at most ``connections`` are open at once, which bounds the memory a listener can be made
  to hold (each connection buffers at most ``header_bytes`` of headers; bodies are bounded by
  the routes), and one client address holds at most ``per_client`` of them;
- a connection that would go past either bound makes room instead of being refused: the
  oldest connection that still owes its request (its client's own, past ``per_client``; any,
  past ``connections``) is ended. A caller that sends nothing, or its headers a byte at a
  time, cannot hold the listener against a delivery, which sends its request at once; only
  when no connection owes anything (every one is reading a body or being answered) is the
  new one closed. One client address is only a share, not the whole listener, because
  behind an ingress every delivery comes from the ingress's address.

A deadline or an eviction ends the connection with a reset: a hostile caller gets nothing
to read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

log = logging.getLogger("lockgate.serve")

#: how often "connection limit reached" is logged per listener, at most
_CAP_LOG_SECONDS = 60.0


@dataclass(frozen=True)
class Limits:
    """What one listener allows: open connections, deadlines for callers, header size."""

    name: str
    connections: int = 64
    header_seconds: float = 10.0
    request_seconds: float = 30.0
    answer_seconds: float = 60.0
    idle_seconds: int = 5
    header_bytes: int = 16 * 1024
    #: connections one client address may hold (past it, its own oldest idle one is ended)
    per_client: int = 32


#: /healthz, /readyz, /metrics: the kubelet, Prometheus and a person, never many at once
PROBES = Limits(name="probes", connections=32, per_client=32)
#: /hook/SYNC: reachable from outside; bodies up to Runner maxBodyBytes each
WEBHOOK = Limits(name="webhook", connections=64)
#: the status page and its JSON API
PAGE = Limits(name="status page", connections=64)


class GuardedConfig(uvicorn.Config):
    """uvicorn's configuration plus the listener's ``Limits`` (read by ``GuardedH11``)."""

    def __init__(self, app: Any, *, limits: Limits, **options: Any) -> None:
        super().__init__(
            app,
            http=GuardedH11,
            timeout_keep_alive=limits.idle_seconds,
            h11_max_incomplete_event_size=limits.header_bytes,
            # the connection cap below replaces uvicorn's, which answers 503 to every request
            # (probes included) once idle connections fill it, and never closes them
            limit_concurrency=None,
            **options,
        )
        self.limits = limits
        self.last_cap_log = 0.0
        self.last_evict_log = 0.0


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with a connection cap and deadlines for what the caller owes."""

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        assert isinstance(config, GuardedConfig), "GuardedH11 needs a GuardedConfig"
        self.guarded = config
        self.limits = config.limits
        #: when the caller's current obligation began: the connection, or the last answer
        self._since = 0.0
        self._phase: str | None = None
        self._deadline: asyncio.TimerHandle | None = None

    # ---- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._since = self.loop.time()
        if not self._make_room():
            self._over_cap()
            transport.abort()
            return
        self._watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        # the next request's headers are due from now (the keep-alive timer also runs)
        self._since = self.loop.time()
        self._phase = None
        super().on_response_complete()
        self._watch()

    # ---- room ------------------------------------------------------------------------------
    def _host(self) -> str:
        return self.client[0] if self.client else ""

    def _owes_request(self) -> bool:
        """Open, and nothing of a request taken yet: no body being read, no answer owed."""
        return not self.transport.is_closing() and self._current_phase() == "headers"

    def _make_room(self) -> bool:
        """Whether this new connection may stay, ending the oldest that owes its request when
        its client, or the listener, is at its bound."""
        others = [
            c
            for c in self.connections
            if c is not self and isinstance(c, GuardedH11) and not c.transport.is_closing()
        ]
        host = self._host()
        mine = [c for c in others if c._host() == host]
        if len(mine) >= self.limits.per_client:
            if not _evict(mine):
                return False
            self._evicted(f"{host or 'a client'} holds {len(mine)} connections, its share")
            others = [c for c in others if not c.transport.is_closing()]
        if len(others) >= self.limits.connections:
            if not _evict(others):
                return False
            self._evicted(f"{len(others)} connections open, the limit")
        return True

    # ---- deadlines -------------------------------------------------------------------------
    def _current_phase(self) -> str | None:
        if self.transport.is_closing():
            return None
        theirs, ours = self.conn.their_state, self.conn.our_state
        if theirs is h11.IDLE and ours is h11.IDLE:
            return "headers"
        if theirs is h11.SEND_BODY:
            return "body"
        if theirs in (h11.DONE, h11.MUST_CLOSE) and ours in (h11.IDLE, h11.SEND_RESPONSE, h11.SEND_BODY):
            return "answer"
        return None

    def _watch(self) -> None:
        """Arm the deadline of what the caller owes now (no change while the phase stays)."""
        phase = self._current_phase()
        if phase == self._phase:
            return
        self._cancel()
        self._phase = phase
        if phase is None:
            return
        if phase == "headers":
            due = self._since + self.limits.header_seconds
        elif phase == "body":
            due = self._since + self.limits.request_seconds
        else:
            due = self.loop.time() + self.limits.answer_seconds
        self._deadline = self.loop.call_at(due, self._expire)

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        client = f"{self.client[0]}" if self.client else "unknown"
        log.debug("%s listener: closed a connection from %s (%s late)", self.limits.name, client, self._phase)
        # abort, not close: nothing buffered is owed to a caller that is too slow to read it
        self.transport.abort()

    def _over_cap(self) -> None:
        now = time.monotonic()
        if now - self.guarded.last_cap_log >= _CAP_LOG_SECONDS:
            self.guarded.last_cap_log = now
            log.warning(
                "%s listener: %d connections open, the limit, none of them idle; closing new ones "
                "until some end",
                self.limits.name,
                self.limits.connections,
            )

    def _evicted(self, why: str) -> None:
        now = time.monotonic()
        if now - self.guarded.last_evict_log >= _CAP_LOG_SECONDS:
            self.guarded.last_evict_log = now
            log.warning(
                "%s listener: %s; ending the oldest idle one for each new connection", self.limits.name, why
            )


def _evict(connections: list[GuardedH11]) -> bool:
    """End the oldest of ``connections`` that still owes its request; False if none does."""
    idle = [c for c in connections if c._owes_request()]
    if not idle:
        return False
    oldest = min(idle, key=lambda c: c._since)
    oldest._cancel()
    oldest.transport.abort()
    return True
