"""The one seam between lockgate and a registry's HTTP API (the httpx ``handle_request`` idea).

``Transport.request`` chooses http or https, answers Basic and Bearer challenges (anonymous
tokens too), retries connection failures, 429 and 5xx with backoff while honouring
``Retry-After``, and rewinds seekable request bodies between attempts so large blobs are
streamed from disk, never held in memory. It follows redirects itself rather than letting
``requests`` do it, so that one rule (``origins``) decides every hop: credentials go to the
registry host (and basic ones to its token realm), never to an upload location, a next page
or a storage redirect on another host, and a challenge from another host is refused. Every
request sent (each attempt and hop, token fetches too) is counted by lower-case HTTP verb in
``counts``, so a long-running runner can report its registry traffic. Errors name the host
and what was attempted, never the credentials. Trust, client certificate, proxy and the
https-then-http probe of loopback registries come from ``connection.TransportOptions``; a TLS
or proxy failure is not retried and reads as ``connection.failure`` says.
"""

from __future__ import annotations

import base64
import email.utils
import re
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any

import requests

from lockgate import __version__, replies
from lockgate.errors import AuthError, RegistryError, ReplyTooLarge
from lockgate.registry import connection, oci, origins
from lockgate.registry.connection import TransportOptions
from lockgate.registry.credentials import Credentials
from lockgate.registry.reference import is_loopback_host

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_REDIRECTS = 10
_BODY_HEADERS = frozenset({"content-type", "content-length", "content-encoding"})
#: a token service's answer is a token and a few fields
_TOKEN_BYTES = replies.MAX_REPLY_BYTES
_CHALLENGE_PARAM = re.compile(r'(\w+)\s*=\s*(?:"([^"]*)"|([^\s,]+))')


@dataclass(frozen=True)
class RetryPolicy:
    """Attempts per request and the backoff between them (seconds; doubled each time, capped)."""

    attempts: int = 4
    backoff: float = 0.5
    cap: float = 30.0

    def delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            seconds = _parse_retry_after(retry_after)
            if seconds is not None:
                return min(max(seconds, 0.0), self.cap)
        return float(min(self.backoff * (2**attempt), self.cap))


def _parse_retry_after(value: str) -> float | None:
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return parsed.timestamp() - time.time()


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """Split ``Bearer realm="...",service="...",scope="..."`` into the scheme and its parameters."""
    scheme, _, rest = header.strip().partition(" ")
    params = {
        m.group(1).lower(): m.group(2) if m.group(2) is not None else m.group(3)
        for m in _CHALLENGE_PARAM.finditer(rest)
    }
    return scheme.lower(), params


class Transport:
    """HTTP to one registry host, with authentication and retries."""

    def __init__(
        self,
        host: str,
        *,
        credentials: Credentials | None = None,
        insecure: bool = False,
        retry: RetryPolicy | None = None,
        timeout: float = 60.0,
        session: requests.Session | None = None,
        options: TransportOptions | None = None,
    ) -> None:
        self.host = host
        self.options = options or TransportOptions()
        plain = insecure or self.options.insecure
        self._base_url = f"{'http' if plain else 'https'}://{host}"
        #: a loopback registry is tried over https, then http (``connection.probe_scheme``)
        self._probe = not plain and is_loopback_host(host)
        self._probe_lock = threading.Lock()
        self.credentials = credentials
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.session = session or connection.session_for(self.options)
        self.session.headers["User-Agent"] = f"lockgate/{__version__}"
        self._basic = False
        self._tokens: dict[str, str] = {}
        #: called when the registry refuses ``credentials`` (a cloud token cache drops them)
        self.on_refused: Callable[[], None] | None = None
        self.counts: Counter[str] = Counter()
        self._count_lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """``https://HOST`` or ``http://HOST``; for a loopback registry, decided on first use."""
        if self._probe:
            with self._probe_lock:
                if self._probe:
                    # nothing listening decides nothing: plain http (as before) until it answers
                    scheme = connection.probe_scheme(self.host)
                    self._base_url = f"{scheme or 'http'}://{self.host}"
                    self._probe = scheme is None
        return self._base_url

    def counted(self) -> dict[str, int]:
        """A copy of ``counts`` (requests sent per lower-case verb), safe while other threads send."""
        with self._count_lock:
            return dict(self.counts)

    def _count(self, method: str) -> None:
        with self._count_lock:
            self.counts[method.lower()] += 1

    def request(
        self,
        method: str,
        url: str,
        *,
        scope: str,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        data: bytes | IO[bytes] | None = None,
        stream: bool = False,
    ) -> requests.Response:
        """Send one request (``url`` absolute or relative to the host), following redirects;
        returns any non-retryable answer. Credentials go to the registry host only (``origins``):
        an upload location, a next page or a redirect elsewhere is sent without them."""
        target = url if "://" in url else self.base_url + url
        start = data.tell() if data is not None and not isinstance(data, bytes) else None
        for _ in range(MAX_REDIRECTS + 1):
            response = self._attempts(
                method, target, scope, headers=headers, params=params, data=data, start=start, stream=stream
            )
            hop = origins.redirect(method, response.status_code, response.headers.get("Location"), target)
            if hop is None:
                return response
            response.close()
            target, method, params = hop.url, hop.method, None
            if not hop.keep_body:
                data = start = None
                headers = {k: v for k, v in (headers or {}).items() if k.lower() not in _BODY_HEADERS}
        raise RegistryError(f"registry {self.host}: more than {MAX_REDIRECTS} redirects for {_path(url)}")

    def _attempts(
        self,
        method: str,
        url: str,
        scope: str,
        *,
        headers: Mapping[str, str] | None,
        params: Mapping[str, str] | None,
        data: bytes | IO[bytes] | None,
        start: int | None,
        stream: bool,
    ) -> requests.Response:
        """One request with its retries and, on the registry host, its authentication."""
        own = origins.same_host(url, self.base_url)
        authenticated_once = False
        attempt = 0
        while True:
            if start is not None and data is not None and not isinstance(data, bytes):
                data.seek(start)
            self._count(method)
            try:
                response = self.session.request(
                    method,
                    url,
                    headers=self._headers(scope, headers) if own else dict(headers or {}),
                    params=params,
                    data=data,
                    # always streamed: a body the caller reads whole is read below, within the cap
                    stream=True,
                    timeout=self.timeout,
                    # redirects are followed by ``request``, which decides who gets credentials
                    allow_redirects=False,
                )
            except (requests.ConnectionError, requests.Timeout) as exc:
                proxy = connection.proxy_for(url, self.session)
                final = connection.failure(self.host, exc, proxy=proxy, options=self.options)
                if final is not None:
                    raise final from None
                if attempt + 1 >= self.retry.attempts:
                    if proxy is not None and isinstance(exc, requests.exceptions.ProxyError):
                        reason = _reason(exc)
                        raise connection.unreachable_proxy(self.host, proxy, self.options, reason) from None
                    where = f"registry {self.host}"
                    if not own:
                        where = f"{origins.shown(url)} (named by registry {self.host})"
                    raise RegistryError(
                        f"cannot reach {where} ({method} {_path(url)}): {_reason(exc)}; "
                        "check the address, the network, and --insecure for plain-http registries"
                    ) from None
                time.sleep(self.retry.delay(attempt, None))
                attempt += 1
                continue
            if response.status_code == 407:  # a plain-http request through a proxy
                response.close()
                proxy = connection.proxy_for(url, self.session) or "(unknown)"
                raise connection.proxy_refused(self.host, proxy, self.options)
            if response.status_code == 401 and not own:
                response.close()
                raise AuthError(
                    f"{origins.shown(url)}, where registry {self.host} sent {method} {_path(url)}, asks for "
                    f"authentication; lockgate sends credentials only to {self.host} and its token service"
                )
            if response.status_code == 401 and not authenticated_once:
                authenticated_once = True
                self._authenticate(response, scope)
                response.close()
                continue
            if response.status_code in RETRY_STATUSES and attempt + 1 < self.retry.attempts:
                delay = self.retry.delay(attempt, response.headers.get("Retry-After"))
                response.close()
                time.sleep(delay)
                attempt += 1
                continue
            if response.status_code == 401:
                response.close()
                raise self._refused(scope)
            if not stream:
                self._read_capped(response, method, url)
            return response

    def _read_capped(self, response: requests.Response, method: str, url: str) -> None:
        """Read the body of a reply the caller takes whole (an upload's answer, an error)
        within ``lockgate.replies``' cap, as ``requests`` would have read it whole."""
        try:
            replies.cap(response).content  # noqa: B018 - the read is the point
        except ReplyTooLarge as exc:
            raise RegistryError(f"registry {self.host} ({method} {_path(url)}): {exc.message}") from None
        except requests.RequestException as exc:
            raise RegistryError(f"registry {self.host} ({method} {_path(url)}): {_reason(exc)}") from None

    def _headers(self, scope: str, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = dict(extra or {})
        token = self._tokens.get(scope)
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        elif self._basic and self.credentials is not None:
            pair = f"{self.credentials.username}:{self.credentials.secret}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        return headers

    def _authenticate(self, response: requests.Response, scope: str) -> None:
        scheme, params = parse_challenge(response.headers.get("WWW-Authenticate", ""))
        if scheme == "basic":
            if self.credentials is None or self.credentials.identity_token:
                raise self._refused(scope)
            self._basic = True
        elif scheme == "bearer" and params.get("realm"):
            self._tokens[scope] = self._fetch_token(params, scope)
        else:
            raise AuthError(f"registry {self.host} asked for unsupported authentication {scheme or 'none'!r}")

    def _fetch_token(self, challenge: Mapping[str, str], scope: str) -> str:
        query = {"scope": scope}
        if challenge.get("service"):
            query["service"] = challenge["service"]
        creds = self.credentials
        realm = challenge["realm"]
        if urllib.parse.urlsplit(realm).scheme.lower() not in ("http", "https"):
            raise RegistryError(f"registry {self.host} named a token service that is not an http(s) URL")
        try:
            if creds is not None and creds.identity_token:
                form = {
                    **query,
                    "grant_type": "refresh_token",
                    "refresh_token": creds.secret,
                    "client_id": "lockgate",
                }
                reply = self._realm_request("POST", realm, form=form, params=None, auth=None)
            else:
                auth = (creds.username, creds.secret) if creds is not None else None
                reply = self._realm_request("GET", realm, form=None, params=query, auth=auth)
        except (requests.ConnectionError, requests.Timeout) as exc:
            proxy = connection.proxy_for(realm, self.session)
            final = connection.failure(self.host, exc, proxy=proxy, options=self.options)
            if final is not None:
                raise final from None
            raise RegistryError(f"cannot reach the token service of {self.host}: {_reason(exc)}") from None
        with reply:
            if reply.status_code in (401, 403):
                raise self._refused(scope)
            if reply.status_code != 200:
                raise RegistryError(
                    f"token service of {self.host} answered HTTP {reply.status_code} for {scope}"
                )
            try:
                content = replies.read(reply, limit=_TOKEN_BYTES)
            except ReplyTooLarge as exc:
                raise RegistryError(f"token service of {self.host}: {exc.message}") from None
            try:
                body: Any = oci.read(content, f"token service of {self.host}", max_bytes=_TOKEN_BYTES)
            except ValueError:
                raise RegistryError(
                    f"token service of {self.host} answered something that is not JSON"
                ) from None
        token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise RegistryError(f"token service of {self.host} returned no token for {scope}")
        return token

    def _realm_request(
        self,
        method: str,
        realm: str,
        *,
        form: dict[str, str] | None,
        params: dict[str, str] | None,
        auth: tuple[str, str] | None,
    ) -> requests.Response:
        """Ask the token realm, following its redirects: the basic credentials (or the refresh
        token in the form) go to the realm's host only."""
        url = realm
        for _ in range(MAX_REDIRECTS + 1):
            own = origins.same_host(url, realm)
            if form is not None and not own:
                # a 307/308 would carry the refresh token to wherever the realm points
                raise RegistryError(
                    f"the token service of {self.host} redirected to {origins.shown(url)}; lockgate "
                    "sends the refresh token only to the token service the registry named"
                )
            self._count(method)
            reply = self.session.request(
                method,
                url,
                params=params,
                data=form,
                auth=auth if own else None,
                timeout=self.timeout,
                allow_redirects=False,
                stream=True,  # read by ``_fetch_token`` within its cap, never whole
            )
            hop = origins.redirect(method, reply.status_code, reply.headers.get("Location"), url)
            if hop is None:
                return reply
            reply.close()
            url, method, params = hop.url, hop.method, None
            if not hop.keep_body:
                form = None
        raise RegistryError(f"the token service of {self.host} redirected more than {MAX_REDIRECTS} times")

    def _refused(self, scope: str) -> AuthError:
        if self.credentials is not None and self.on_refused is not None:
            self.on_refused()
        if self.credentials is None:
            return AuthError(
                f"registry {self.host} requires authentication for {scope}: "
                "pass --creds USER:PASSWORD or log in with 'docker login'"
            )
        return AuthError(
            f"registry {self.host} refused the credentials from {self.credentials.origin} "
            f"(user {self.credentials.username!r}) for {scope}; check them"
        )


def _path(url: str) -> str:
    return "/" + url.split("://", 1)[-1].split("/", 1)[-1].split("?", 1)[0]


def _reason(exc: Exception) -> str:
    text = str(exc)
    for marker in (
        "Connection refused",
        "Name or service not known",
        "timed out",
        "No route to host",
        "Temporary failure in name resolution",
        "Connection reset",
    ):
        if marker.lower() in text.lower():
            return marker.lower()
    return type(exc).__name__
