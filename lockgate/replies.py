"""Reading HTTP replies from peers lockgate does not control: streamed, and capped at one size.

A peer chooses how much it answers. ``requests`` reads a reply whole into memory unless told
to stream, so a notification endpoint, a forge API, a cloud token service or a registry's
token realm answering a gigabyte (or without end) would take the process with it: under
``serve`` every tenant's runner. So every client that reads a reply it does not need whole
reads it through here, as ``lockgate.bounded`` is the one place YAML from outside is parsed:

- ``session()`` makes a ``requests.Session`` whose every reply is capped: ``.content``,
  ``.text``, ``.json()`` and ``iter_content`` read at most ``MAX_REPLY_BYTES`` (a reply
  announcing more, by ``Content-Length``, is refused before its first byte is read);
- ``cap(response, limit)`` does the same to one reply of another session (the registry's,
  whose blobs are meant to be large and are streamed to disk with their own limit);
- ``read(response)`` is the body within the cap, and the response closed.

Over the cap, ``ReplyTooLarge`` names the endpoint by scheme, host and port only (a Slack or
Teams URL's path is its credential) and the cap; the caller adds what it was asking. A reply
nobody needs (a notification's answer: only its status counts) is never read: send with
``stream=True`` and close it. Decompression is bounded per read by urllib3 (>= 2.6), and the
cap counts the decoded bytes, what memory holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import requests

from lockgate.errors import ReplyTooLarge

__all__ = ["MAX_REPLY_BYTES", "ReplyTooLarge", "cap", "origin", "read", "session"]

#: the most lockgate reads of any reply it does not stream to disk: a status answer, a pull
#: request, a token, an error body are a few kilobytes; a megabyte leaves room and bounds
#: the memory a hostile peer can take (a registry manifest has its own, larger, limit)
MAX_REPLY_BYTES = 1 << 20
_CHUNK = 64 * 1024
#: answers without a body whatever their Content-Length says
_BODILESS = frozenset({204, 304})


def origin(url: str) -> str:
    """``scheme://host[:port]``: what a message may say about an endpoint (never its path,
    query or userinfo, any of which may be a credential)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def _size(limit: int) -> str:
    if limit % (1 << 20) == 0:
        return f"{limit >> 20} MiB"
    return f"{limit:,} bytes"


class _Capped:
    """A response's ``raw`` that yields at most ``limit`` decoded bytes in all, then refuses.

    Everything else (headers, ``close``, ``release_conn``, ``_original_response``) is the
    urllib3 response's own."""

    def __init__(self, raw: Any, limit: int, endpoint: str, *, has_body: bool) -> None:
        self._raw = raw
        self._limit = limit
        self._endpoint = endpoint
        self._has_body = has_body
        self._total = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)

    def _refuse(self, detail: str) -> ReplyTooLarge:
        self._raw.close()  # a half-read connection is never handed back to the pool
        return ReplyTooLarge(self._endpoint, detail)

    def _announced(self) -> None:
        if not self._has_body:
            return
        announced = (self._raw.headers or {}).get("Content-Length", "")
        if announced.strip().isdigit() and int(announced) > self._limit:
            raise self._refuse(
                f"announced {int(announced):,} bytes (Content-Length), more than the "
                f"{_size(self._limit)} lockgate reads of a reply"
            )

    def _count(self, chunk: bytes) -> bytes:
        self._total += len(chunk)
        if self._total > self._limit:
            raise self._refuse(f"answered more than {_size(self._limit)}, the most lockgate reads of a reply")
        return chunk

    def stream(self, amt: int | None = _CHUNK, decode_content: bool | None = None) -> Iterator[bytes]:
        self._announced()
        for chunk in self._raw.stream(min(amt or _CHUNK, _CHUNK), decode_content=decode_content):
            yield self._count(chunk)

    def read(self, amt: int | None = None, *args: Any, **kwargs: Any) -> bytes:
        self._announced()
        room = self._limit - self._total + 1
        data: bytes = self._raw.read(room if amt is None else min(amt, room), *args, **kwargs)
        return self._count(data)


def cap(response: requests.Response, limit: int = MAX_REPLY_BYTES) -> requests.Response:
    """Bound what can be read of ``response`` (sent with ``stream=True``, or by a ``session()``,
    whose hook caps before ``requests`` reads a non-streamed body) to ``limit`` bytes."""
    if response.raw is not None and not isinstance(response.raw, _Capped):
        method = (response.request.method or "") if response.request is not None else ""
        has_body = method.upper() != "HEAD" and response.status_code not in _BODILESS
        response.raw = _Capped(response.raw, limit, origin(response.url or ""), has_body=has_body)
    return response


def read(response: requests.Response, *, limit: int = MAX_REPLY_BYTES) -> bytes:
    """The body of ``response`` within ``limit`` bytes, the response then closed;
    ``ReplyTooLarge`` past it."""
    with response:
        return cap(response, limit).content


def session(*, limit: int = MAX_REPLY_BYTES) -> requests.Session:
    """A ``requests.Session`` every reply of which is capped at ``limit`` bytes."""

    def capped(response: requests.Response, *args: Any, **kwargs: Any) -> requests.Response:
        return cap(response, limit)

    made = requests.Session()
    made.hooks["response"].append(capped)
    return made
