"""HTTP to one API server: the only module of the runner that sends requests to it.

Requests go straight to the connection pool of the session's adapter (``auth.session_for``
builds both: TLS in one ``ssl.SSLContext``, credentials in the ``Authenticator``), not through
``requests.Session.request``: a pass sends thousands of small requests, and the session's
per-request work (merging environment settings, looking up proxies and CA paths, building a
``PreparedRequest``) cost as much client CPU as the rest of the request together (measured:
1.8 ms against 0.9 ms per apply, bench/results/profile.md). What that work decided is decided
once here instead: the proxy for the server from the environment (``HTTPS_PROXY``,
``NO_PROXY``), TLS from the adapter. A 401 asks the authenticator to renew the credentials
once. Requests are counted per verb, so a pass can report its cost. 429 and 503 (a
just-established CRD answers them while its storage initialises) are retried with backoff
honouring ``Retry-After``; a connection failure is tried again twice. What the server says is
turned into the typed errors of ``errors``; credentials never appear in a message.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import requests
import urllib3
from requests.utils import get_environ_proxies, select_proxy

from lockgate import __version__
from lockgate.errors import AuthError
from runner.kube.discovery import Resource
from runner.kube.errors import ClusterFailing, ClusterUnreachable, KubeError, NotFoundError, PermissionDenied

if TYPE_CHECKING:
    from runner.kube.auth import Authenticator

TIMEOUT = 60.0
CONNECT_TIMEOUT = 10.0
RETRIES = 8
CONNECT_RETRIES = 2
_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
USER_AGENT = f"lockgate/{__version__}"
#: what a streamed body is read in (as requests' ``iter_lines``): a watch event is seen as
#: soon as its chunk arrives
_STREAM_CHUNK = 512


class Reply:
    """One answer of the API server: its status, headers and body, read whole or streamed."""

    def __init__(self, raw: urllib3.BaseHTTPResponse, path: str) -> None:
        self.raw = raw
        self.status_code = raw.status
        self.reason = raw.reason or ""
        self.headers = raw.headers
        #: the request's path without its query, for messages
        self.path = path

    @property
    def content(self) -> bytes:
        return self.raw.data

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)

    def iter_lines(self) -> Iterator[bytes]:
        """The streamed body, line by line (a watch's events)."""
        pending = b""
        for chunk in self.raw.stream(_STREAM_CHUNK, decode_content=True):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            yield from lines
        if pending:
            yield pending

    def close(self) -> None:
        self.raw.release_conn()


class Transport:
    """Requests to ``server`` through ``session``'s adapter (TLS, pool and ``authenticator``
    already set up by ``auth.session_for``); after a 401 the authenticator renews the
    credentials once."""

    def __init__(self, server: str, session: requests.Session, *, authenticator: Authenticator) -> None:
        self.server = server.rstrip("/")
        self.session = session
        self.authenticator = authenticator
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        adapter = session.get_adapter(self.server)
        assert isinstance(adapter, requests.adapters.HTTPAdapter)
        self._adapter = adapter
        # decided once, as requests would per request: the environment's proxy for the server
        proxies = {**get_environ_proxies(self.server), **session.proxies}
        self._proxy = select_proxy(self.server, proxies)
        parsed = urllib3.util.parse_url(self.server)
        self._origin_length = len(f"{parsed.scheme}://{parsed.netloc}")

    def _pool(self) -> urllib3.HTTPConnectionPool:
        # asked each time: a renewed client certificate replaces the adapter's pool manager
        manager = self._adapter.proxy_manager_for(self._proxy) if self._proxy else self._adapter.poolmanager
        pool: urllib3.HTTPConnectionPool = manager.connection_from_url(self.server)
        return pool

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        stream: bool = False,
        timeout: float = TIMEOUT,
        what: str = "",
        resource: Resource | None = None,
        namespace: str = "",
        impersonate: str | None = None,
    ) -> Reply:
        """One request, retried as described above; a 4xx raises, never returns."""
        verb = "list" if method == "GET" and what == "list" else ("watch" if stream else _VERBS[method])
        data = json.dumps(body, separators=(",", ":")).encode() if body is not None else None
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if data is not None:
            headers["Content-Type"] = content_type
        if impersonate:
            headers["Impersonate-User"] = impersonate
        url = self.server + path + ("?" + urlencode(params) if params else "")
        # a plain-http proxy is sent the whole URL; the server (or a CONNECT tunnel) the path,
        # under the server URL's own path (a cluster behind a gateway: https://host/k8s/c1)
        target = url if self._proxy and url.startswith("http://") else url[self._origin_length :]
        limits = urllib3.Timeout(connect=CONNECT_TIMEOUT, read=timeout)
        refreshed = False
        attempt = connect_attempt = 0
        while True:
            with self._lock:
                self.counts[verb] += 1
            authorization = self.authenticator.stamp()
            if authorization:
                headers["Authorization"] = authorization
            else:
                headers.pop("Authorization", None)
            try:
                raw = self._pool().urlopen(
                    method,
                    target,
                    body=data,
                    headers=headers,
                    retries=False,
                    redirect=False,
                    timeout=limits,
                    preload_content=not stream,
                    decode_content=True,
                    assert_same_host=False,
                )
            except urllib3.exceptions.HTTPError as exc:
                if connect_attempt < CONNECT_RETRIES and not isinstance(exc, urllib3.exceptions.SSLError):
                    time.sleep(0.25 * 2**connect_attempt)
                    connect_attempt += 1
                    continue
                raise ClusterUnreachable(
                    f"cannot reach the Kubernetes API at {self.server}: {_reason(exc)}; check that the "
                    "cluster is up and the kubeconfig's server address"
                ) from None
            response = Reply(raw, path)
            if response.status_code == 401 and not refreshed:
                refreshed = True
                if self.authenticator.refresh():
                    response.close()
                    continue
            # 429 also means "storage is (re)initializing" for a just-established CRD
            if response.status_code in (429, 502, 503, 504) and attempt < RETRIES:
                response.close()
                time.sleep(_retry_after(response.headers.get("Retry-After"), attempt))
                attempt += 1
                continue
            break
        if response.status_code >= 400:
            raise _error(response, verb, resource, namespace, what, impersonate)
        return response


def _reason(exc: urllib3.exceptions.HTTPError) -> str:
    text = str(exc).lower()
    if isinstance(exc, urllib3.exceptions.SSLError) or "certificate" in text:
        if "hostname mismatch" in text or "doesn't match" in text:
            return (
                "TLS failed: the server's certificate does not name it (check the server or tls-server-name)"
            )
        if "certificate verify failed" in text:
            return (
                "TLS failed: the server's certificate is not signed by the kubeconfig's certificate-authority"
            )
        return "TLS failed"
    # before the timeout: urllib3's NewConnectionError (a refused connection) is a
    # ConnectTimeoutError by inheritance
    for marker in ("connection refused", "name or service not known", "no route to host", "connection reset"):
        if marker in text:
            return marker
    if isinstance(exc, urllib3.exceptions.TimeoutError):
        return "timed out"
    return type(exc).__name__


def _retry_after(header: str | None, attempt: int) -> float:
    try:
        return min(float(header), 10.0) if header else min(0.25 * 2**attempt, 5.0)
    except ValueError:
        return 1.0


def who(user: str | None) -> str:
    """How an identity is named in messages: ``ServiceAccount team-a/deployer``, or the runner's."""
    if not user:
        return "the runner's identity"
    parts = user.split(":")
    if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
        return f"ServiceAccount {parts[2]}/{parts[3]}"
    return f"user {user}"


def _impersonate_grant(user: str) -> str:
    """The RBAC rule that lets the runner impersonate ``user``, in words."""
    parts = user.split(":")
    if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
        return f"the 'impersonate' verb on 'serviceaccounts' named {parts[3]} in namespace {parts[2]}"
    return f"the 'impersonate' verb on 'users' named {user}"


def _error(
    response: Reply,
    verb: str,
    resource: Resource | None,
    namespace: str,
    what: str,
    impersonate: str | None = None,
) -> Exception:
    try:
        status = response.json()
    except ValueError:
        status = {}
    if not isinstance(status, dict):
        status = {}
    server_message = str(status.get("message") or response.text[:300] or response.reason)
    reason = str(status.get("reason") or "")
    target = resource.display if resource else what or response.path
    where = f" in namespace {namespace}" if namespace else ""
    code = response.status_code
    response.close()
    if code == 401:
        return AuthError(
            "the Kubernetes API refused the credentials (401 Unauthorized): check the kubeconfig"
        )
    if code == 403 and impersonate and "cannot impersonate" in server_message:
        # the runner's own identity was refused the impersonation, not the tenant the request
        return PermissionDenied(
            f"permission denied: the runner's identity cannot impersonate {who(impersonate)}; grant "
            f"the runner's identity {_impersonate_grant(impersonate)} (API server: {server_message})",
            status=403,
            reason=reason,
            server_message=server_message,
        )
    if code == 403:
        return PermissionDenied(
            f"permission denied: {who(impersonate)} cannot {verb} {target}{where}; grant "
            f"{who(impersonate)} the '{verb}' verb on '{target}' (API server: {server_message})",
            status=403,
            reason=reason,
            server_message=server_message,
        )
    if code >= 500:
        return ClusterFailing(
            f"the Kubernetes API server failed to {verb} {target}{where} ({code} {reason}): {server_message}",
            status=code,
        )
    cls = NotFoundError if code == 404 else KubeError
    return cls(
        f"{verb} {target}{where} failed ({code} {reason}): {server_message}",
        status=code,
        reason=reason,
        server_message=server_message,
    )
