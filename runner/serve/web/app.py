"""The status page's HTTP side: the page, its JSON API, security headers and the token check.

A Starlette application on its own listener (``Runner.spec.statusPage.address``), run by
the same ``HttpServers`` as the webhook and metrics endpoints; ``lockgate status --web`` runs
it too, on loopback. Read-only: every route is GET (HEAD), nothing it serves can change the
cluster, and there are no actions. Every answer carries a strict Content-Security-Policy
(``default-src 'self'``, no inline script or style exists to need more), ``nosniff``,
``no-referrer`` and frame denial.

Access: on loopback without a token, the ``Host`` header must name a loopback host too, so
a web page elsewhere cannot reach the API through DNS rebinding. With a token (required
beyond loopback; ``service`` refuses to start otherwise), a request proves it with
``Authorization: Bearer TOKEN`` (a proxy in front can add it) or with the session cookie
that ``POST /login`` sets after checking the token: an HMAC of the token, never the token,
``HttpOnly``, ``SameSite=Strict``. The login form checks ``Origin`` (or, where the browser
sends ``Origin: null``, ``Sec-Fetch-Site: same-origin``) so another site cannot log a browser
in; comparisons are constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.resources
import ipaddress
import logging
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from lockgate.errors import LockgateError
from runner.pipeline.secretrefs import MIN_TOKEN_BYTES
from runner.serve import proofs
from runner.serve.http import parse_address
from runner.serve.web import firstview

log = logging.getLogger(__name__)

COOKIE = "lockgate_status"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
_PAGES = ("index.html", "login.html")
NO_STORE = {"Cache-Control": "no-store"}
_ASSETS = ("app.js", "style.css", "login.js", "favicon.svg")
MAX_LOGIN_BYTES = 4096


class Views(Protocol):
    """What the page reads; each call may block (it runs off the loop)."""

    def overview(self) -> dict[str, Any]: ...

    def sync(self, name: str) -> dict[str, Any] | None: ...


def _loopback_name(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback(address: str) -> bool:
    """``127.0.0.1:PORT``, ``[::1]:PORT`` or ``localhost:PORT``; ``:PORT`` is every interface."""
    return _loopback_name(parse_address(address)[0])


def _host_is_loopback(header: str) -> bool:
    """A ``Host`` header naming the loopback (``localhost:9090``, ``[::1]:9090``, ``127.0.0.1``)."""
    host = header.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    else:
        host = host.rpartition(":")[0] if host.count(":") == 1 else host
    return _loopback_name(host)


def session_value(token: bytes) -> str:
    """The cookie's value: proves the token was shown, without being it."""
    return hmac.new(token, b"lockgate status page session", hashlib.sha256).hexdigest()


def _authorised(request: Request, token: bytes) -> bool:
    if len(token) < MIN_TOKEN_BYTES:
        return False
    if proofs.bearer(request.headers.get("authorization", ""), token):
        return True
    cookie = request.cookies.get(COOKIE, "")
    return proofs.same(cookie, session_value(token).encode())


def _load_static() -> dict[str, bytes]:
    root = importlib.resources.files("runner.serve.web") / "static"
    return {name: (root / name).read_bytes() for name in (*_PAGES, *_ASSETS)}


def _file(files: dict[str, bytes], name: str) -> Response:
    suffix = name[name.rfind(".") :]
    return Response(files[name], headers={"Content-Type": _TYPES[suffix], "Cache-Control": "no-cache"})


def build_app(
    views: Views,
    *,
    token: Callable[[], bytes | None] = lambda: None,
    loopback_only: bool = True,
) -> Starlette:
    """The page (``/``, ``/sync/NAME``), its assets, ``/api/syncs[/NAME]`` and the login form.

    ``token`` returns the current bearer token, or None for no token; ``loopback_only`` is
    True when the listener is on loopback (then the Host header must be loopback too).
    """
    files = _load_static()

    class Guard(BaseHTTPMiddleware):
        async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
            response = await self._check(request, call_next)
            for key, value in SECURITY_HEADERS.items():
                response.headers.setdefault(key, value)
            return response

        async def _check(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
            path = request.url.path
            secret = await run_in_threadpool(token)
            if secret is None:
                if loopback_only and not _host_is_loopback(request.headers.get("host", "")):
                    return JSONResponse({"error": "this page answers on loopback host names only"}, 421)
                return await call_next(request)
            if len(secret) < MIN_TOKEN_BYTES:  # configured, but unreadable or unusable: closed, never open
                return JSONResponse(
                    {
                        "error": "the status page's token cannot be read, or is missing or shorter than "
                        f"{MIN_TOKEN_BYTES} bytes; the runner's log says which"
                    },
                    503,
                )
            if path in ("/login", "/static/login.js", "/static/style.css", "/static/favicon.svg"):
                return await call_next(request)
            if _authorised(request, secret):
                return await call_next(request)
            if path.startswith("/api/"):
                return JSONResponse({"error": "a bearer token is required"}, 401)
            return RedirectResponse("/login", 303)

    async def page(request: Request) -> Response:
        # the overview as it is now, for a browser without JavaScript (``firstview``)
        try:
            doc = await run_in_threadpool(views.overview)
            first = firstview.overview(doc, read_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        except LockgateError as exc:
            first = firstview.unavailable(exc.message)
        body = files["index.html"].replace(firstview.MARKER, first.encode())
        return Response(body, headers={"Content-Type": _TYPES[".html"], "Cache-Control": "no-cache"})

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _ASSETS:
            return JSONResponse({"error": "not found"}, 404)
        return _file(files, name)

    async def login_form(request: Request) -> Response:
        return _file(files, "login.html")

    async def login(request: Request) -> Response:
        secret = await run_in_threadpool(token)
        if secret is None:
            return RedirectResponse("/", 303)
        origin = request.headers.get("origin", "")
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        forwarded = request.headers.get("x-forwarded-proto", "")
        allowed = {own} | ({f"{forwarded}://{request.headers.get('host', '')}"} if forwarded else set())
        # with Referrer-Policy no-referrer a browser sends "Origin: null"; Sec-Fetch-Site is
        # then the browser's own word that the form came from this origin
        same_site = request.headers.get("sec-fetch-site", "") == "same-origin"
        if origin not in allowed and not (origin in ("", "null") and same_site):
            return JSONResponse({"error": "the login form must be posted from this page"}, 403)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_LOGIN_BYTES:
                return JSONResponse({"error": "request too large"}, 413)
        given = urllib.parse.parse_qs(body.decode("latin-1")).get("token", [""])[0].strip()
        if not proofs.same(given, secret):
            log.warning("status page login refused (from %s)", request.client.host if request.client else "?")
            return RedirectResponse("/login?refused=1", 303)
        response = RedirectResponse("/", 303)
        secure = request.url.scheme == "https" or forwarded == "https"
        response.set_cookie(
            COOKIE, session_value(secret), httponly=True, samesite="strict", secure=secure, path="/"
        )
        return response

    async def syncs(request: Request) -> Response:
        try:
            body = await run_in_threadpool(views.overview)
        except LockgateError as exc:
            return JSONResponse({"error": exc.message}, 503, headers=NO_STORE)
        return JSONResponse(body, headers=NO_STORE)

    async def one(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            body = await run_in_threadpool(views.sync, name)
        except LockgateError as exc:
            return JSONResponse({"error": exc.message}, 503, headers=NO_STORE)
        if body is None:
            return JSONResponse({"error": f"no sync named {name!r}"}, 404, headers=NO_STORE)
        return JSONResponse(body, headers=NO_STORE)

    return Starlette(
        routes=[
            Route("/", page, methods=["GET"]),
            Route("/sync/{name}", page, methods=["GET"]),
            Route("/static/{name}", asset, methods=["GET"]),
            Route("/login", login_form, methods=["GET"]),
            Route("/login", login, methods=["POST"]),
            Route("/api/syncs", syncs, methods=["GET"]),
            Route("/api/syncs/{name}", one, methods=["GET"]),
        ],
        middleware=[Middleware(Guard)],
    )
