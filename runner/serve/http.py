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
Secret, as Flux's Receiver): GitHub's ``X-Hub-Signature-256`` (HMAC-SHA256 of the raw
body), Flux's generic-hmac ``X-Signature: sha1|sha256|sha512=<hex>``, or
``Authorization: Bearer <token>``; any one suffices, each compared in constant time. The
order of the checks keeps strangers from learning anything: no token configured answers
404 (Flux's Receiver cannot exist without one either), a token that cannot be read or is
shorter than 16 bytes 503 (closed: an HMAC with an empty key lets anyone in), then the
body limit (413, from ``Content-Length`` before reading, else while the body streams in),
then authentication (401, nothing triggered), and only then whether the sync exists (404)
and whether it is suspended (409, nothing triggered). A body sent as JSON
(``Content-Type: application/json``) is then parsed within the parsing bounds
(``lockgate.bounded``): malformed or over a bound answers 400 and triggers nothing, and a
GitHub push names its ref and commit in the pass's reason. GitHub's ``ping`` answers 200
without a pass; ``push``, ``package`` and ``registry_package`` trigger one; other GitHub
events answer 200 and say they were ignored. Coalescing bursts into one pass is the
scheduler's business (``Endpoints.trigger``). Each answer that is not a trigger is one log
event with its fields.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
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
from runner.serve import listener
from runner.serve.metrics import Metrics

log = logging.getLogger("lockgate.serve.http")

GITHUB_TRIGGERS = frozenset({"push", "package", "registry_package"})
BODY_SECONDS = 10.0
NOT_CONFIGURED = "webhooks are not configured (set webhook.secretRef in the Runner document)"
UNUSABLE = (
    "the webhook token cannot be read, or is missing or shorter than "
    f"{MIN_TOKEN_BYTES} bytes; the runner's log says which"
)
# generic-hmac as Flux checks it (go-github's ValidateSignature): the prefix names the hash
_HMAC_DIGESTS = ("sha1", "sha256", "sha512")


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


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def authenticate(headers: Mapping[str, str], body: bytes, token: bytes) -> str | None:
    """Which scheme proved the request (``github``, ``generic-hmac``, ``bearer``), or None.

    A token shorter than ``MIN_TOKEN_BYTES`` proves nothing: an HMAC with an empty key is
    one anybody can compute.
    """
    if len(token) < MIN_TOKEN_BYTES:
        return None
    github = headers.get("x-hub-signature-256")
    if github is not None and _signed(github, body, token, allowed=("sha256",)):
        return "github"
    generic = headers.get("x-signature")
    if generic is not None and _signed(generic, body, token, allowed=_HMAC_DIGESTS):
        return "generic-hmac"
    scheme, _, value = headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() == "bearer" and value and hmac.compare_digest(value.strip().encode("latin-1"), token):
        return "bearer"
    return None


def _signed(header: str, body: bytes, token: bytes, *, allowed: tuple[str, ...]) -> bool:
    algorithm, sep, given = header.strip().partition("=")
    algorithm = algorithm.lower()
    if not sep or algorithm not in allowed:
        return False
    expected = hmac.new(token, body, algorithm).hexdigest().encode()
    # headers arrive decoded as latin-1, so this is the exact bytes the client sent
    return hmac.compare_digest(expected, given.strip().lower().encode("latin-1"))


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


def _pushed(event: str, payload: Any) -> str:
    """`` refs/heads/main@6d1e2f3a4b5c`` for a GitHub push payload, else nothing."""
    if event != "push" or not isinstance(payload, dict):
        return ""
    ref, after = payload.get("ref"), payload.get("after")
    if not isinstance(ref, str) or not ref:
        return ""
    return f" {ref}" + (f"@{after[:12]}" if isinstance(after, str) and after else "")


def _answer(
    sync: str, status: int, *, triggered: bool = False, message: str, close: bool = False
) -> Response:
    body = {"sync": sync, "triggered": triggered, "message" if status < 400 else "error": message}
    return JSONResponse(body, status_code=status, headers={"Connection": "close"} if close else None)


async def _healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


def hooks_app(endpoints: Endpoints, *, max_body_bytes: int) -> Starlette:
    """The webhook listener's application: ``POST /hook/{sync}`` and ``GET /healthz``."""

    async def hook(request: Request) -> Response:
        sync = request.path_params["sync"]
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
            return _answer(sync, 401, message="missing or invalid signature or token")
        if not await run_in_threadpool(endpoints.knows, sync):
            return _answer(sync, 404, message=f"no sync named {sync!r}")
        if await run_in_threadpool(endpoints.suspended, sync):
            log.info("webhook for a suspended sync", extra={"sync": sync, "status": 409, "client": client})
            return _answer(
                sync,
                409,
                message=f"sync {sync} is suspended (spec.suspend in the configuration); nothing triggered",
            )
        event = request.headers.get("x-github-event", "").strip().lower()
        try:
            payload = _payload(request.headers, body, max_body_bytes)
        except _Refused as refused:
            return _answer(sync, refused.status, message=refused.message)
        if event == "ping":
            return _answer(sync, 200, message="pong: the webhook reaches lockgate; nothing triggered")
        if event and event not in GITHUB_TRIGGERS:
            return _answer(
                sync,
                200,
                message=f"GitHub event {event!r} ignored: only push, package and registry_package trigger",
            )
        reason = f"webhook: GitHub {event}{_pushed(event, payload)}" if event else f"webhook ({scheme})"
        if not await run_in_threadpool(endpoints.trigger, sync, reason):
            return _answer(sync, 404, message=f"no sync named {sync!r}")
        log.info("webhook triggered a pass", extra={"sync": sync, "reason": reason, "client": client})
        return _answer(sync, 200, triggered=True, message=f"a pass of {sync} is requested ({reason})")

    return Starlette(
        routes=[Route("/hook/{sync}", hook, methods=["POST"]), Route("/healthz", _healthz, methods=["GET"])]
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
