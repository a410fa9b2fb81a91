"""runner.serve.listener: per-listener connection caps and deadlines, through real uvicorn servers.

Hostile callers are plain sockets: connections that say nothing, headers sent a byte at a
time, a body that never ends. The limits are the production ones with shorter deadlines, so
the tests take seconds; ``test_serve_hostile`` drives ``lockgate serve`` with the real ones.
"""

from __future__ import annotations

import dataclasses
import select
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from runner.serve import http, listener
from runner.serve.metrics import Metrics
from tests import hostile_support as hostile
from tests.unit.runner.serve.test_http import TOKEN, Service

HEADER_SECONDS = 1.5


@dataclasses.dataclass
class Pair:
    hooks: http.HttpServers
    probes: http.HttpServers
    service: Service

    @property
    def hook_port(self) -> int:
        return self.hooks.ports[0]

    @property
    def probe_url(self) -> str:
        return f"http://127.0.0.1:{self.probes.ports[0]}"


def _quick(limits: listener.Limits, *, answer_seconds: float = 60.0) -> listener.Limits:
    return dataclasses.replace(
        limits, header_seconds=HEADER_SECONDS, request_seconds=3.0, answer_seconds=answer_seconds
    )


@pytest.fixture
def pair() -> Iterator[Pair]:
    service = Service(gate=threading.Event())
    assert service.gate is not None
    service.gate.set()  # ready() answers at once unless a test clears the gate
    hooks = http.HttpServers(
        http.hooks_app(service, max_body_bytes=4096), ["127.0.0.1:0"], limits=_quick(listener.WEBHOOK)
    )
    probes = http.HttpServers(
        http.probes_app(service, Metrics()),
        ["127.0.0.1:0"],
        limits=_quick(listener.PROBES, answer_seconds=2.0),
    )
    hooks.start()
    probes.start()
    yield Pair(hooks, probes, service)
    if service.gate is not None:
        service.gate.set()
    hooks.stop(2)
    probes.stop(2)


def test_probes_answer_while_hundreds_of_idle_connections_hold_the_webhook_listener(pair: Pair) -> None:
    conns = [hostile.connect(pair.hook_port) for _ in range(300)]
    try:
        slowest = max(hostile.probe_seconds(pair.probe_url) for _ in range(5))
        assert slowest < 1.0, f"a probe took {slowest:.2f}s while the webhook listener was flooded"
        # the webhook listener's own cap closed the connections past it at once, and its header
        # deadline closes the rest; none is left open for long
        left = hostile.still_open(conns, within=HEADER_SECONDS + 2.0)
        assert left == [], f"{len(left)} idle connections still open after {HEADER_SECONDS + 2.0}s"
        # and the listener serves again
        reply = requests.post(
            f"http://127.0.0.1:{pair.hook_port}/hook/web",
            headers={"Authorization": "Bearer " + TOKEN.decode()},
            timeout=5,
        )
        assert reply.status_code == 200
    finally:
        for conn in conns:
            conn.close()


def _from(address: str, port: int) -> socket.socket:
    """A connection from another loopback address: another client, as the listener sees it."""
    return socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(address, 0))


def test_a_client_past_its_share_ends_its_own_oldest_idle_connections(pair: Pair) -> None:
    share = pair.hooks.limits.per_client
    first = [_from("127.0.0.2", pair.hook_port) for _ in range(share)]
    later = [_from("127.0.0.2", pair.hook_port) for _ in range(5)]
    other = [_from("127.0.0.3", pair.hook_port) for _ in range(5)]
    try:
        # the five oldest of the client's own went, its newest stay, another client is untouched
        assert len(hostile.still_open(first, within=0.5)) == share - 5
        assert hostile.still_open(first[:5], within=0.1) == []
        assert len(hostile.still_open(later + other, within=0.3)) == 10
    finally:
        for conn in first + later + other:
            conn.close()


def test_a_full_listener_ends_the_oldest_idle_connection_for_a_new_one(pair: Pair) -> None:
    cap, share = pair.hooks.limits.connections, pair.hooks.limits.per_client
    clients = [f"127.0.0.{2 + i}" for i in range(cap // share)]
    held = [_from(address, pair.hook_port) for address in clients for _ in range(share)]
    assert len(hostile.still_open(held, within=0.3)) == cap
    newcomer = _from("127.0.0.9", pair.hook_port)
    try:
        newcomer.sendall(b"GET /healthz HTTP/1.1\r\nHost: lockgate\r\n\r\n")
        assert newcomer.recv(65536).startswith(b"HTTP/1.1 200 ")
        assert hostile.still_open(held[:1], within=0.3) == []  # the oldest made room
        assert len(hostile.still_open(held[1:], within=0.1)) == cap - 1
    finally:
        for conn in [*held, newcomer]:
            conn.close()


def test_when_no_connection_is_idle_a_new_one_is_closed_at_once(pair: Pair) -> None:
    """Every connection reading a body (headers sent, body owed): none to end, so the new one goes."""
    cap, share = pair.hooks.limits.connections, pair.hooks.limits.per_client
    clients = [f"127.0.0.{2 + i}" for i in range(cap // share)]
    busy = [_from(address, pair.hook_port) for address in clients for _ in range(share)]
    for conn in busy:
        conn.sendall(b"POST /hook/web HTTP/1.1\r\nHost: lockgate\r\nContent-Length: 100\r\n\r\n")
    time.sleep(0.3)
    extra = [_from("127.0.0.9", pair.hook_port) for _ in range(3)]
    try:
        assert hostile.still_open(extra, within=0.5) == []
        readable, _, _ = select.select(busy, [], [], 0.1)  # before the body deadline: all open
        assert readable == []
    finally:
        for conn in busy + extra:
            conn.close()


def test_headers_sent_a_byte_at_a_time_are_cut_at_the_header_deadline(pair: Pair) -> None:
    slow = hostile.Trickle(pair.hook_port, path="/hook/web")
    try:
        cut = slow.cut_after(within=HEADER_SECONDS + 2.0)
        assert cut is not None and HEADER_SECONDS - 0.2 <= cut <= HEADER_SECONDS + 1.0, cut
        assert pair.service.triggered == []
    finally:
        slow.close()


def test_a_second_request_trickled_after_an_answer_is_cut_too(pair: Pair) -> None:
    conn = hostile.connect(pair.probes.ports[0])
    try:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: lockgate\r\n\r\n")
        assert conn.recv(65536).startswith(b"HTTP/1.1 200 ")
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < HEADER_SECONDS + 2.0:  # one byte every 0.3s, below keep-alive
            try:
                conn.send(b"G")
            except OSError:
                closed = True
                break
            if hostile.closed_by_server(conn, within=0.3):
                closed = True
                break
        assert closed
        assert time.monotonic() - started <= HEADER_SECONDS + 1.0
    finally:
        conn.close()


def test_a_body_that_never_ends_is_cut_at_the_request_deadline(pair: Pair) -> None:
    conn = hostile.connect(pair.hook_port)
    try:
        conn.sendall(
            b"POST /hook/web HTTP/1.1\r\nHost: lockgate\r\nContent-Length: 1000\r\n"
            b"Authorization: Bearer " + TOKEN + b"\r\n\r\n" + b"x" * 10
        )
        started = time.monotonic()
        assert hostile.closed_by_server(conn, within=5.0)
        assert time.monotonic() - started <= pair.hooks.limits.request_seconds + 0.5
        assert pair.service.triggered == []
    finally:
        conn.close()


def test_an_answer_not_given_in_time_ends_the_connection(pair: Pair) -> None:
    """A stuck handler (here readiness) holds its connection no longer than ``answer_seconds``;
    the worker thread it waits in is the service's business."""
    assert pair.service.gate is not None
    pair.service.gate.clear()
    conn = hostile.connect(pair.probes.ports[0])
    try:
        conn.sendall(b"GET /readyz HTTP/1.1\r\nHost: lockgate\r\n\r\n")
        started = time.monotonic()
        assert hostile.closed_by_server(conn, within=5.0)
        assert time.monotonic() - started <= pair.probes.limits.answer_seconds + 0.5
    finally:
        pair.service.gate.set()
        conn.close()
