"""Hostile HTTP callers as plain sockets, for the listener tests (unit and against ``serve``).

Connections that say nothing, headers sent a byte at a time; and the checks that the server
ended them (EOF or reset) and when.
"""

from __future__ import annotations

import select
import socket
import threading
import time

import requests


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def closed_by_server(conn: socket.socket, *, within: float) -> bool:
    """True when the server ends the connection (EOF or reset) within ``within`` seconds;
    whatever it sends before that is read and dropped."""
    deadline = time.monotonic() + within
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([conn], [], [], left)
        if not readable:
            return False
        try:
            if conn.recv(65536) == b"":
                return True
        except ConnectionResetError:
            return True
    return False


def still_open(conns: list[socket.socket], *, within: float) -> list[socket.socket]:
    """The connections the server has not ended after ``within`` seconds."""
    open_ = {c.fileno(): c for c in conns}
    deadline = time.monotonic() + within
    while open_ and (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select(list(open_.values()), [], [], left)
        for conn in readable:
            try:
                data = conn.recv(65536)
            except ConnectionResetError:
                data = b""
            if data == b"":
                del open_[conn.fileno()]
    return list(open_.values())


class Trickle:
    """A slowloris: a request line and one header, sent one byte every ``every`` seconds."""

    def __init__(self, port: int, *, path: str = "/hook/app", every: float = 0.1) -> None:
        self.conn = connect(port)
        self.started = time.monotonic()
        self._stop = threading.Event()
        line = f"POST {path} HTTP/1.1\r\nHost: lockgate\r\nX-Slow: ".encode() + b"a" * 100_000
        self._thread = threading.Thread(target=self._send, args=(line, every), daemon=True)
        self._thread.start()

    def _send(self, line: bytes, every: float) -> None:
        for byte in line:
            if self._stop.wait(every):
                return
            try:
                self.conn.send(bytes([byte]))
            except OSError:
                return

    def cut_after(self, *, within: float) -> float | None:
        """Seconds from connecting until the server ended it, or None if it did not within ``within``."""
        if not closed_by_server(self.conn, within=within):
            return None
        return time.monotonic() - self.started

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.conn.close()


def probe_seconds(url: str) -> float:
    """How long the slowest of ``/healthz``, ``/readyz`` and ``/metrics`` took; each must be 200."""
    slowest = 0.0
    for path in ("/healthz", "/readyz", "/metrics"):
        started = time.monotonic()
        reply = requests.get(url + path, timeout=5)
        slowest = max(slowest, time.monotonic() - started)
        assert reply.status_code == 200, (path, reply.status_code, reply.text)
    return slowest
