"""The serve process's HTTP side: webhooks that trigger passes, health, readiness and metrics.

``build_app`` is a Starlette application with four routes; ``HttpServers`` runs it on
uvicorn (timeouts, connection limits, graceful shutdown) in one background thread with
its own asyncio loop, beside the scheduler's threads. Everything the app needs from the
service comes through the narrow ``Endpoints`` protocol, and every call into it runs in a
worker thread, so a scheduler busy under its lock never stalls ``/healthz``.

``POST /hook/<sync>`` takes, with the Runner's webhook token (the ``token`` key of its
Secret, as Flux's Receiver): GitHub's ``X-Hub-Signature-256`` (HMAC-SHA256 of the raw
body), Flux's generic-hmac ``X-Signature: sha1|sha256|sha512=<hex>``, or
``Authorization: Bearer <token>``; any one suffices, each compared in constant time. The
order of the checks keeps strangers from learning anything: no token configured answers
404 (Flux's Receiver cannot exist without one either), then the body limit (413, from
``Content-Length`` before reading, else while the body streams in), then authentication
(401, nothing triggered), and only then whether the sync exists (404). A body sent as JSON
(``Content-Type: application/json``) is then parsed within the parsing bounds
(``lockgate.bounded``): malformed or over a bound answers 400 and triggers nothing, and a
GitHub push names its ref and commit in the pass's reason. GitHub's ``ping`` answers 200
without a pass; ``push``, ``package`` and ``registry_package`` trigger one; other GitHub
events answer 200 and say they were ignored. Coalescing bursts into one pass
is the scheduler's business (``Endpoints.trigger``).
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
from runner.serve.metrics import Metrics

log = logging.getLogger(__name__)

GITHUB_TRIGGERS = frozenset({"push", "package", "registry_package"})
BODY_SECONDS = 10.0
NOT_CONFIGURED = "webhooks are not configured (set webhook.secretRef in the Runner document)"
# generic-hmac as Flux checks it (go-github's ValidateSignature): the prefix names the hash
_HMAC_DIGESTS = ("sha1", "sha256", "sha512")


class Endpoints(Protocol):
    """What the HTTP side asks of the service; each call may block briefly (it runs off the loop)."""

    def trigger(self, sync: str, reason: str) -> bool:
        """Ask for a pass of ``sync`` soon; False when there is no such sync."""
        ...

    def knows(self, sync: str) -> bool: ...

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
    """Which scheme proved the request (``github``, ``generic-hmac``, ``bearer``), or None."""
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


def build_app(endpoints: Endpoints, metrics: Metrics, *, max_body_bytes: int) -> Starlette:
    """The application: ``POST /hook/{sync}``, ``GET /healthz``, ``GET /readyz``, ``GET /metrics``."""

    async def hook(request: Request) -> Response:
        sync = request.path_params["sync"]
        token = await run_in_threadpool(endpoints.webhook_token)
        if token is None:
            return _answer(sync, 404, message=NOT_CONFIGURED)
        try:
            body = await _read_body(request, max_body_bytes)
        except _Refused as refused:
            return _answer(sync, refused.status, message=refused.message, close=True)
        scheme = authenticate(request.headers, body, token)
        if scheme is None:
            client = request.client.host if request.client else "unknown"
            log.warning("webhook for %s refused: no valid signature or token (from %s)", sync, client)
            return _answer(sync, 401, message="missing or invalid signature or token")
        if not await run_in_threadpool(endpoints.knows, sync):
            return _answer(sync, 404, message=f"no sync named {sync!r}")
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
        log.info("webhook triggered %s (%s)", sync, reason)
        return _answer(sync, 200, triggered=True, message=f"a pass of {sync} is requested ({reason})")

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        ok, reason = await run_in_threadpool(endpoints.ready)
        return PlainTextResponse(reason or ("ok" if ok else "not ready"), status_code=200 if ok else 503)

    async def metrics_page(request: Request) -> Response:
        body, content_type = await run_in_threadpool(metrics.exposition)
        return Response(body, headers={"Content-Type": content_type})

    return Starlette(
        routes=[
            Route("/hook/{sync}", hook, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
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
    """One uvicorn server listening on each distinct address, on a loop in a background thread."""

    def __init__(
        self,
        app: Starlette,
        addresses: list[str],
        *,
        timeout_keep_alive: int = 5,
        limit_concurrency: int = 64,
        max_header_bytes: int = 16 * 1024,
    ) -> None:
        self.app = app
        self.addresses = list(dict.fromkeys(a.strip() for a in addresses))
        self.timeout_keep_alive = timeout_keep_alive
        self.limit_concurrency = limit_concurrency
        self.max_header_bytes = max_header_bytes
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
        config = uvicorn.Config(
            self.app,
            http="h11",
            ws="none",
            lifespan="off",
            loop="asyncio",
            # errors reach the process's logging through the "uvicorn.error" logger; no access log
            log_config=None,
            log_level="warning",
            access_log=False,
            server_header=False,
            timeout_keep_alive=self.timeout_keep_alive,
            limit_concurrency=self.limit_concurrency,
            h11_max_incomplete_event_size=self.max_header_bytes,
        )
        server = self._server = _Server(config)
        self._thread = threading.Thread(target=self._run, args=(server, sockets), name="lockgate-http")
        self._thread.daemon = True
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                why = self._failure or "timed out"
                raise LockgateError(f"the HTTP server on {', '.join(self.addresses)} did not start: {why}")
            time.sleep(0.01)

    def _run(self, server: _Server, sockets: list[socket.socket]) -> None:
        try:
            # one server, several listening sockets: one loop and one housekeeping tick for all
            asyncio.run(server.serve(sockets=sockets))
        except BaseException as exc:  # uvicorn ends a failed startup with SystemExit
            self._failure = exc
            log.error("the HTTP server stopped: %s", exc, exc_info=not isinstance(exc, SystemExit))
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
