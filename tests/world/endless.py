"""A peer that never stops answering: the hostile endpoint of the bounded-reply tests.

A notification address, a forge API, a cloud token service or a registry's token realm is a
server lockgate does not control; this one answers every request with ``200`` (a registry's
``/v2/`` with a ``401`` Bearer challenge naming this server's ``/token`` as the realm, so a
registry client reaches its token service; ``/v2/plain/...`` with a ``400``, a registry's error)
and a body that never ends, in one of three ways:

- ``close``: no length at all, the body runs until the connection closes (HTTP/1.0 style);
- ``length``: a ``Content-Length`` of a terabyte, then bytes without end;
- ``chunked``: ``Transfer-Encoding: chunked``, one chunk after another, never the last one.

The body looks like the start of a JSON string (``{"token": "AAAA...``), so a client that
reads it whole and parses it gets nowhere sooner. It records each request (method, path,
headers) so a test can check what was sent, and it stops writing when the client hangs up.
``sent`` is how many body bytes it managed to write, over all requests.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

Mode = Literal["close", "length", "chunked"]
MODES: tuple[Mode, ...] = ("close", "length", "chunked")
_BLOCK = b"A" * (64 * 1024)
_START = b'{"token": "'


@dataclass(frozen=True)
class Asked:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class EndlessPeer:
    mode: Mode
    asked: list[Asked] = field(default_factory=list)
    sent: int = 0
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        if length:
            handler.rfile.read(length)
        with self._lock:
            self.asked.append(Asked(handler.command, handler.path, dict(handler.headers.items())))
        status = 200
        if handler.command == "HEAD" and not handler.path.startswith("/v2/app"):
            # no digest header: a registry client then GETs the manifest (and its error body)
            handler.send_response(200)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        if handler.path.startswith("/v2/plain/"):
            status = 400  # a registry's error, its body without end
        elif handler.path.startswith("/v2/"):
            challenge = f'Bearer realm="{self.url}/token",service="endless"'
            handler.send_response(401)
            handler.send_header("WWW-Authenticate", challenge)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        if self.mode == "length":
            handler.send_header("Content-Length", str(1 << 40))
        elif self.mode == "chunked":
            handler.send_header("Transfer-Encoding", "chunked")
        else:
            handler.send_header("Connection", "close")
            handler.close_connection = True
        handler.end_headers()
        try:
            self._write(handler, _START)
            while True:
                self._write(handler, _BLOCK)
        except OSError:  # the client hung up (or timed out): stop writing
            handler.close_connection = True

    def _write(self, handler: BaseHTTPRequestHandler, data: bytes) -> None:
        if self.mode == "chunked":
            handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        else:
            handler.wfile.write(data)
        with self._lock:
            self.sent += len(data)

    def requests(self, path_prefix: str = "") -> list[Asked]:
        with self._lock:
            return [a for a in self.asked if a.path.startswith(path_prefix)]

    @contextmanager
    def running(self) -> Iterator[EndlessPeer]:
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 120

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                peer._answer(self)

            do_HEAD = do_POST = do_PUT = do_PATCH = do_GET

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, name=f"endless-{self.mode}", daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
