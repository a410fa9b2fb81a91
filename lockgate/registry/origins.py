"""Where a registry's credentials may go, and where a redirect leads: pure decisions for ``transport``.

Docker's rule (its credential store and auth challenges are per registry host): credentials are keyed
by registry host. Basic credentials go to the registry host and to the token realm its 401
challenge names; a bearer token goes to the registry host only. Anything else a registry
names (an upload ``Location``, a ``Link`` to the next page, a redirect to object storage or
a CDN: the OCI distribution spec lets all of these point elsewhere, and signed storage URLs
refuse a second ``Authorization``) gets no credentials at all. "Host" is host and port, so
a plain-http URL on the host of an https registry is another host (port 80, not 443), and
credentials never travel in plain text where the registry spoke TLS.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

_DEFAULT_PORTS = {"http": 80, "https": 443}
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def host_of(url: str) -> tuple[str, int]:
    """``(host, port)`` of an absolute http(s) URL, the port filled in from the scheme."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: matches nothing
        port = -1
    return (parts.hostname or "").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme, -1)


def same_host(url: str, home: str) -> bool:
    """Whether ``url`` is on the host (and port) of ``home``, and no less secure than it."""
    if urllib.parse.urlsplit(home).scheme.lower() == "https" and urllib.parse.urlsplit(url).scheme != "https":
        return False
    here = host_of(url)
    return bool(here[0]) and here == host_of(home)


def shown(url: str) -> str:
    """``host:port`` of ``url`` for messages (never its path or query, which may carry a signature)."""
    host, port = host_of(url)
    return f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"


@dataclass(frozen=True)
class Hop:
    """The next request after a redirect: where, with which method, and whether the body goes."""

    url: str
    method: str
    keep_body: bool


def redirect(method: str, status: int, location: str | None, url: str) -> Hop | None:
    """The request a redirect asks for, as browsers and Go's client make it; None if no redirect.

    303 turns any method but HEAD into GET; 301 and 302 turn POST into GET (what every client
    does); 307 and 308 keep the method and the body.
    """
    if status not in REDIRECT_STATUSES or not location:
        return None
    target = urllib.parse.urljoin(url, location.strip())
    if urllib.parse.urlsplit(target).scheme.lower() not in _DEFAULT_PORTS:
        return None
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        return Hop(target, "GET", keep_body=False)
    return Hop(target, method, keep_body=True)
