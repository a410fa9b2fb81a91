"""The serve process's HTTP side: webhooks that trigger passes, health, readiness and metrics.

Two Starlette applications on two listeners: ``probes_app`` (``/healthz``, ``/readyz``,
``/metrics`` on ``metricsAddress``, for the kubelet and Prometheus) and ``hooks_app``
(``/hook/<sync>`` on ``webhookAddress``, the one reachable from outside, plus a ``/healthz``
for load balancers). ``HttpServers`` runs one application on uvicorn in a background thread
with its own asyncio loop, worker threads and ``listener.Limits`` (connection cap, header,
body, answer and idle deadlines), so callers of one listener cannot starve another: a
flood of webhook connections leaves the kubelet's probes answering. Everything the apps need
from the service comes through the narrow ``Endpoints`` protocol, and every call into it
runs in a worker thread, so a scheduler busy under its lock never stalls ``/healthz``.

``POST /hook/<sync>`` takes, with the Runner's webhook token (the ``token`` key of its
Secret, as Flux's Receiver), the proof of any forge ``runner.serve.forges`` knows: GitHub's
``X-Hub-Signature-256``, GitLab's ``X-Gitlab-Token``, Gitea's and Forgejo's
``X-Gitea-Signature`` / ``X-Forgejo-Signature``, Bitbucket's ``X-Hub-Signature``, Flux's
generic-hmac ``X-Signature``, or ``Authorization: Bearer <token>``; any one suffices, each
compared in constant time (``runner.serve.proofs``). The order of the checks keeps strangers
from learning anything: no token configured answers 404 (Flux's Receiver cannot exist
without one either), a token that cannot be read or is shorter than 16 bytes 503 (closed:
an HMAC with an empty key lets anyone in), then the body limit (413, from
``Content-Length`` before reading, else while the body streams in), then authentication
(401, nothing triggered), and only then whether the sync exists (404) and whether it is
suspended (409, nothing triggered). A body sent as JSON (``Content-Type:
application/json``) is then parsed within the parsing bounds (``lockgate.bounded``):
malformed or over a bound answers 400 and triggers nothing. The forge's ping
(GitHub ``ping``, Bitbucket ``diagnostics:ping``) answers 200 without a pass, its push and
package events trigger one (naming the ref and commit in the pass's reason), other events
answer 200 and say they were ignored (``forges.classify``). Coalescing bursts into one pass
is the scheduler's business (``Endpoints.trigger``). Each answer that is not a trigger is one
log event with its fields.

``POST /hook/<64 hex digits>`` is a registry receiver's secret path (``runner.serve.receivers``,
found through ``RegistryHooks``): a path no receiver has, or Harbor's or Nexus's proof
missing, answers 401; the payload names the repository, and only the receiver's syncs whose
url is that repository are triggered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any, Protocol

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from lockgate import bounded
from lockgate.errors import LockgateError, UsageError
from runner.pipeline.secretrefs import MIN_TOKEN_BYTES
from runner.serve import forges, listener, receivers
from runner.serve.forges import authenticate as authenticate  # re-exported: the tests call http.authenticate
from runner.serve.metrics import Metrics

log = logging.getLogger("lockgate.serve.http")

BODY_SECONDS = 10.0
NOT_CONFIGURED = "webhooks are not configured (set webhook.secretRef in the Runner document)"
UNUSABLE = (
    "the webhook token cannot be read, or is missing or shorter than "
    f"{MIN_TOKEN_BYTES} bytes; the runner's log says which"
)


class Endpoints(Protocol):
    """What the HTTP side asks of the service; each call may block briefly (it runs off the loop)."""

    def trigger(self, sync: str, reason: str) -> bool:
        """Ask for a pass of ``sync`` soon; False when there is no such sync."""
        ...

    def knows(self, sync: str) -> bool: ...

    def suspended(self, sync: str) -> bool:
        """Whether the configuration suspends ``sync`` (a webhook then triggers nothing)."""
        ...

    def webhook_token(self) -> bytes | None:
        """The current webhook token; None when webhooks are not configured."""
        ...

    def ready(self) -> tuple[bool, str]:
        """Whether the service is ready, and why not (or a short status when it is)."""
        ...


class RegistryHooks(Protocol):
    """How the HTTP side finds a registry receiver by its hook path (``runner.serve.receivers``)."""

    def receiver(self, digest: str) -> receivers.Found | None:
        """The receiver whose hook path is ``/hook/<digest>``; None when there is none."""
        ...


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise _Refused(400, f"invalid Content-Length {declared!r}")
        if int(declared) > limit:
            raise _Refused(413, f"the body of {int(declared)} bytes is over the limit of {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(BODY_SECONDS), contextlib.aclosing(request.stream()) as stream:
            async for chunk in stream:
                size += len(chunk)
                if size > limit:
                    raise _Refused(413, f"the body is over the limit of {limit} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise _Refused(408, f"the body did not arrive within {BODY_SECONDS:g} s") from None
    except ClientDisconnect:
        raise _Refused(400, "the client went away before sending the whole body") from None
    return b"".join(chunks)


def _payload(headers: Mapping[str, str], body: bytes, limit: int) -> Any:
    """The JSON body, when it is sent as JSON and there is one; else None."""
    media_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if not body or not (media_type == "application/json" or media_type.endswith("+json")):
        return None
    try:
        return bounded.json_value(body, "the webhook body", max_bytes=limit)
    except bounded.LimitExceeded as exc:
        raise _Refused(400, exc.message) from None
    except ValueError:
        raise _Refused(400, "the body is sent as JSON but is not valid JSON; nothing triggered") from None


def _answer(
    sync: str, status: int, *, triggered: bool = False, message: str, close: bool = False
) -> Response:
    body = {"sync": sync, "triggered": triggered, "message" if status < 400 else "error": message}
    return JSONResponse(body, status_code=status, headers={"Connection": "close"} if close else None)


def _received(
    receiver: str | None,
    status: int,
    *,
    message: str,
    triggered: list[str] | None = None,
    close: bool = False,
) -> Response:
    body: dict[str, Any] = {"triggered": triggered or [], "message" if status < 400 else "error": message}
    if receiver is not None:
        body["receiver"] = receiver
    return JSONResponse(body, status_code=status, headers={"Connection": "close"} if close else None)


async def _healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


def hooks_app(
    endpoints: Endpoints, *, max_body_bytes: int, registries: RegistryHooks | None = None
) -> Starlette:
    """The webhook listener's application: ``POST /hook/{sync}`` (and the registry receivers'
    secret paths, found through ``registries``) and ``GET /healthz``."""

    async def hook(request: Request) -> Response:
        sync = request.path_params["sync"]
        if registries is not None and receivers.is_digest(sync):
            return await registry_hook(request, sync)
        token = await run_in_threadpool(endpoints.webhook_token)
        if token is None:
            return _answer(sync, 404, message=NOT_CONFIGURED)
        if len(token) < MIN_TOKEN_BYTES:
            return _answer(sync, 503, message=UNUSABLE)
        try:
            body = await _read_body(request, max_body_bytes)
        except _Refused as refused:
            return _answer(sync, refused.status, message=refused.message, close=True)
        scheme = authenticate(request.headers, body, token)
        client = request.client.host if request.client else "unknown"
        if scheme is None:
            log.warning(
                "webhook refused",
                extra={
                    "sync": sync,
                    "status": 401,
                    "reason": "no valid signature or token",
                    "client": client,
                },
            )
            return _answer(sync, 401, message="missing or invalid signature or token", close=True)
        if not await run_in_threadpool(endpoints.knows, sync):
            return _answer(sync, 404, message=f"no sync named {sync!r}", close=True)
        if await run_in_threadpool(endpoints.suspended, sync):
            log.info("webhook for a suspended sync", extra={"sync": sync, "status": 409, "client": client})
            return _answer(
                sync,
                409,
                message=f"sync {sync} is suspended (spec.suspend in the configuration); nothing triggered",
            )
        try:
            payload = _payload(request.headers, body, max_body_bytes)
        except _Refused as refused:
            return _answer(sync, refused.status, message=refused.message)
        event = forges.classify(scheme, request.headers, payload)
        if event.kind != "trigger":
            return _answer(sync, 200, message=event.text)
        reason = event.text
        if not await run_in_threadpool(endpoints.trigger, sync, reason):
            return _answer(sync, 404, message=f"no sync named {sync!r}")
        log.info("webhook triggered a pass", extra={"sync": sync, "reason": reason, "client": client})
        return _answer(sync, 200, triggered=True, message=f"a pass of {sync} is requested ({reason})")

    async def registry_hook(request: Request, digest: str) -> Response:
        """A registry receiver's secret path: the path proves the token (and Harbor's header or
        Nexus's signature with it); the syncs whose url is the pushed repository are triggered."""
        assert registries is not None
        found = await run_in_threadpool(registries.receiver, digest)
        try:
            body = await _read_body(request, max_body_bytes)
        except _Refused as refused:
            return _received(None, refused.status, message=refused.message, close=True)
        client = request.client.host if request.client else "unknown"
        if found is None or not receivers.authenticate(found.kind, request.headers, body, found.token):
            why = "no receiver has this path" if found is None else f"{found.kind} proof missing or wrong"
            log.warning("webhook refused", extra={"status": 401, "reason": why, "client": client})
            return _received(
                None, 401, message="missing or invalid hook path, signature or token", close=True
            )
        try:
            payload = bounded.json_value(body, "the webhook body", max_bytes=max_body_bytes)
            event = receivers.pushed(found.kind, request.headers, payload)
        except bounded.LimitExceeded as exc:
            return _received(found.name, 400, message=exc.message)
        except receivers.BadPayload as exc:
            return _received(found.name, 400, message=f"{exc}; nothing triggered")
        except ValueError:
            return _received(found.name, 400, message="the body is not valid JSON; nothing triggered")
        if event.ignored:
            return _received(found.name, 200, message=f"{event.ignored} ignored: only pushes trigger")
        reason = f"webhook: {found.kind} {event}"
        triggered, suspended = [], []
        for name, url in found.syncs:
            if not receivers.matches(event, url):
                continue
            if await run_in_threadpool(endpoints.suspended, name):
                suspended.append(name)
            elif await run_in_threadpool(endpoints.trigger, name, reason):
                triggered.append(name)
        log.info(
            "registry webhook received",
            extra={"receiver": found.name, "reason": reason, "client": client, "syncs": ",".join(triggered)},
        )
        if triggered or suspended:
            message = f"passes requested ({reason})" if triggered else "nothing triggered"
            if suspended:
                message += f"; suspended (spec.suspend), not triggered: {', '.join(suspended)}"
        else:
            message = f"no sync of receiver {found.name} has url {event}; nothing triggered"
        return _received(found.name, 200, message=message, triggered=triggered)

    return Starlette(
        routes=[Route("/hook/{sync}", hook, methods=["POST"]), Route("/healthz", _healthz, methods=["GET"])],
        exception_handlers={404: _refused_route, 405: _refused_route},
    )


async def _refused_route(request: Request, exc: Exception) -> Response:
    """A path or method the webhook listener has no route for: answered and the connection
    closed, so a caller probing for paths holds no keep-alive slot (docs/security.md §21)."""
    status = int(getattr(exc, "status_code", 404))
    return PlainTextResponse(
        str(getattr(exc, "detail", "")) or "Not Found", status_code=status, headers={"Connection": "close"}
    )


def probes_app(endpoints: Endpoints, metrics: Metrics) -> Starlette:
    """The probes listener's application: ``GET /healthz``, ``GET /readyz``, ``GET /metrics``."""

    async def readyz(request: Request) -> Response:
        ok, reason = await run_in_threadpool(endpoints.ready)
        return PlainTextResponse(reason or ("ok" if ok else "not ready"), status_code=200 if ok else 503)

    async def metrics_page(request: Request) -> Response:
        body, content_type = await run_in_threadpool(metrics.exposition)
        return Response(body, headers={"Content-Type": content_type})

    return Starlette(
        routes=[
            Route("/healthz", _healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics_page, methods=["GET"]),
        ]
    )


def parse_address(address: str) -> tuple[str, int]:
    """``":8080"`` (all interfaces), ``"127.0.0.1:0"`` (a free port), ``"[::1]:9292"``."""
    host, sep, port = address.strip().rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"listen address {address!r}: expected HOST:PORT or :PORT (e.g. :8080)")
    return host.strip("[]"), int(port)


def check_apart(webhook_address: str, metrics_address: str, *, where: str) -> None:
    """Refuse a webhook listener on the probes' port: the probes keep a listener of their own."""
    port = parse_address(webhook_address)[1]
    if port and port == parse_address(metrics_address)[1]:
        raise UsageError(
            f"{where}: Runner spec.webhookAddress {webhook_address!r} uses the port of spec.metricsAddress "
            f"{metrics_address!r}: /healthz, /readyz and /metrics keep a listener of their own so that "
            "webhook callers cannot starve the probes; pick another port (the default is :9292)"
        )


def _listen(address: str) -> socket.socket:
    host, port = parse_address(address)
    try:
        if not host:
            # all interfaces, IPv6 too where the host has it (as Go's ":8080")
            if socket.has_dualstack_ipv6():
                with contextlib.suppress(OSError):
                    return socket.create_server(("::", port), family=socket.AF_INET6, dualstack_ipv6=True)
            return socket.create_server(("0.0.0.0", port))
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise LockgateError(f"cannot listen on {address}: {exc.strerror or exc}") from None


class _Server(uvicorn.Server):
    """uvicorn's server with a once-a-second housekeeping tick (its own wakes ten times a second,
    which an idle runner pays for in CPU and GIL hand-offs); ``wake`` ends the wait at once."""

    _loop: asyncio.AbstractEventLoop | None = None
    _wake: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        # counter 0: on_tick refreshes the Date header on every call
        while not await self.on_tick(0):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 1.0)

    def wake(self) -> None:
        loop, event = self._loop, self._wake
        if loop is not None and event is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                loop.call_soon_threadsafe(event.set)


class HttpServers:
    """One uvicorn server for one application, on each distinct address, on a loop in a thread.

    ``limits`` are the listener's (``listener.PROBES``, ``WEBHOOK``, ``PAGE``): its own
    connection cap and deadlines, counted apart from every other ``HttpServers``.
    """

    def __init__(self, app: Starlette, addresses: list[str], *, limits: listener.Limits) -> None:
        self.app = app
        self.addresses = list(dict.fromkeys(a.strip() for a in addresses))
        self.limits = limits
        self._ports: list[int] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    @property
    def ports(self) -> list[int]:
        """The bound port of each distinct address, in order (after ``start``)."""
        return list(self._ports)

    @property
    def serving(self) -> bool:
        """True from ``start`` until the server's thread has ended."""
        return self._thread is not None and self._thread.is_alive()

    def start(self, *, timeout: float = 10.0) -> None:
        """Listen on every address (errors raise here), then serve until ``stop``."""
        if self._thread is not None:
            raise RuntimeError("HttpServers.start called twice")
        sockets: list[socket.socket] = []
        try:
            for address in self.addresses:
                sockets.append(_listen(address))
        except LockgateError:
            for sock in sockets:
                sock.close()
            raise
        self._ports = [sock.getsockname()[1] for sock in sockets]
        config = listener.GuardedConfig(
            self.app,
            limits=self.limits,
            ws="none",
            lifespan="off",
            loop="asyncio",
            # errors reach the process's logging through the "uvicorn.error" logger; no access log
            log_config=None,
            log_level="warning",
            access_log=False,
            server_header=False,
        )
        server = self._server = _Server(config)
        name = f"lockgate-http-{self.limits.name.replace(' ', '-')}"
        self._thread = threading.Thread(target=self._run, args=(server, sockets), name=name)
        self._thread.daemon = True
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                why = self._failure or "timed out"
                raise LockgateError(
                    f"the {self.limits.name} listener on {', '.join(self.addresses)} did not start: {why}"
                )
            time.sleep(0.01)

    def _run(self, server: _Server, sockets: list[socket.socket]) -> None:
        try:
            # one server, several listening sockets: one loop and one housekeeping tick for all
            asyncio.run(server.serve(sockets=sockets))
        except BaseException as exc:  # uvicorn ends a failed startup with SystemExit
            self._failure = exc
            log.error(
                "the %s listener stopped: %s", self.limits.name, exc, exc_info=not isinstance(exc, SystemExit)
            )
        finally:
            for sock in sockets:
                sock.close()

    def stop(self, timeout: float) -> None:
        """Stop listening, let requests in flight finish for up to ``timeout`` seconds, then end them."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        server.wake()
        thread.join(timeout)
        if thread.is_alive():
            log.warning("HTTP requests still running after %.1f s; ending them", timeout)
            server.force_exit = True
            thread.join(1.0)
