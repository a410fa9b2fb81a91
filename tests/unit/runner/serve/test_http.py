"""runner.serve.http through real uvicorn servers on loopback, driven with ``requests``.

``Service`` is a small implementation of our own ``Endpoints`` protocol that records what
was triggered; the HTTP side, the server and the sockets are all real.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import requests

from lockgate.errors import LockgateError, UsageError
from runner.pipeline import source
from runner.pipeline.reconcile import SyncOptions
from runner.pipeline.result import Result
from runner.serve import http, listener
from runner.serve.metrics import Metrics

TOKEN = b"webhook-s3cret-of-32-bytes-0123"
LIMIT = 8192
BODY = b'{"ref": "refs/heads/main"}'


@dataclass
class Service:
    syncs: set[str] = field(default_factory=lambda: {"web"})
    paused: set[str] = field(default_factory=set)
    token: bytes | None = TOKEN
    readiness: tuple[bool, str] = (True, "")
    triggered: list[tuple[str, str]] = field(default_factory=list)
    gate: threading.Event | None = None  # when set up, ready() waits for it
    entered: threading.Event = field(default_factory=threading.Event)

    def trigger(self, sync: str, reason: str) -> bool:
        if sync not in self.syncs:
            return False
        self.triggered.append((sync, reason))
        return True

    def knows(self, sync: str) -> bool:
        return sync in self.syncs

    def suspended(self, sync: str) -> bool:
        return sync in self.paused

    def webhook_token(self) -> bytes | None:
        return self.token

    def ready(self) -> tuple[bool, str]:
        self.entered.set()
        if self.gate is not None:
            self.gate.wait(30)
        return self.readiness


@dataclass
class Running:
    """The two listeners of ``serve``: ``url`` the webhooks', ``probes`` the probes' and metrics'."""

    url: str
    probes: str
    service: Service
    metrics: Metrics
    servers: http.HttpServers
    probe_servers: http.HttpServers

    def stop(self, timeout: float = 5) -> None:
        self.servers.stop(timeout)
        self.probe_servers.stop(timeout)


def serve(service: Service, addresses: list[str] | None = None) -> Running:
    metrics = Metrics()
    servers = http.HttpServers(
        http.hooks_app(service, max_body_bytes=LIMIT), addresses or ["127.0.0.1:0"], limits=listener.WEBHOOK
    )
    probes = http.HttpServers(
        http.probes_app(service, metrics), addresses or ["127.0.0.1:0"], limits=listener.PROBES
    )
    servers.start()
    probes.start()
    return Running(
        f"http://127.0.0.1:{servers.ports[0]}",
        f"http://127.0.0.1:{probes.ports[0]}",
        service,
        metrics,
        servers,
        probes,
    )


@pytest.fixture
def running() -> Iterator[Running]:
    run = serve(Service())
    yield run
    run.stop()


def signature(body: bytes, algorithm: str = "sha256", key: bytes = TOKEN) -> str:
    return f"{algorithm}={hmac.new(key, body, getattr(hashlib, algorithm)).hexdigest()}"


def hook(run: Running, headers: dict[str, str], body: bytes = BODY, sync: str = "web") -> requests.Response:
    return requests.post(f"{run.url}/hook/{sync}", data=body, headers=headers, timeout=10)


# --- authentication -------------------------------------------------------------------------


def test_github_push_with_a_valid_signature_triggers(running: Running) -> None:
    reply = hook(running, {"X-Hub-Signature-256": signature(BODY), "X-GitHub-Event": "push"})
    assert reply.status_code == 200
    assert reply.json() == {
        "sync": "web",
        "triggered": True,
        "message": "a pass of web is requested (webhook: GitHub push)",
    }
    assert running.service.triggered == [("web", "webhook: GitHub push")]


@pytest.mark.parametrize("event", ["package", "registry_package"])
def test_github_package_events_trigger(running: Running, event: str) -> None:
    reply = hook(running, {"X-Hub-Signature-256": signature(BODY), "X-GitHub-Event": event})
    assert reply.status_code == 200 and reply.json()["triggered"] is True
    assert running.service.triggered == [("web", f"webhook: GitHub {event}")]


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"X-Hub-Signature-256": signature(BODY, key=b"wrong")}, id="github-wrong-key"),
        pytest.param({"X-Hub-Signature-256": signature(BODY + b" ")}, id="github-other-body"),
        pytest.param({"X-Hub-Signature-256": signature(BODY, "sha1")}, id="github-sha1-not-accepted"),
        pytest.param({"X-Signature": signature(BODY, key=b"wrong")}, id="generic-wrong-key"),
        pytest.param({"X-Signature": "md5=" + hashlib.md5(BODY).hexdigest()}, id="generic-unknown-hash"),
        pytest.param({"X-Signature": hmac.new(TOKEN, BODY, "sha256").hexdigest()}, id="generic-no-prefix"),
        pytest.param({"Authorization": "Bearer webhook-s3cre"}, id="bearer-wrong"),
        pytest.param({"Authorization": "Basic " + TOKEN.decode()}, id="basic-scheme"),
        pytest.param({"X-Signature": "sha256=\u00e9\u00e9"}, id="non-ascii-signature"),
        pytest.param({}, id="nothing"),
    ],
)
def test_bad_or_missing_authentication_is_401_and_triggers_nothing(
    running: Running, headers: dict[str, str]
) -> None:
    reply = hook(running, {**headers, "X-GitHub-Event": "push"})
    assert reply.status_code == 401
    assert reply.json() == {
        "sync": "web",
        "triggered": False,
        "error": "missing or invalid signature or token",
    }
    assert running.service.triggered == []


@pytest.mark.parametrize("algorithm", ["sha1", "sha256", "sha512"])
def test_generic_hmac_signature_triggers(running: Running, algorithm: str) -> None:
    reply = hook(running, {"X-Signature": signature(BODY, algorithm)})
    assert reply.status_code == 200 and reply.json()["triggered"] is True
    assert running.service.triggered == [("web", "webhook (generic-hmac)")]


def test_bearer_token_triggers(running: Running) -> None:
    reply = hook(running, {"Authorization": "Bearer " + TOKEN.decode()}, body=b"")
    assert reply.status_code == 200 and reply.json()["triggered"] is True
    assert running.service.triggered == [("web", "webhook (bearer)")]


def test_any_one_valid_scheme_suffices(running: Running) -> None:
    headers = {"X-Hub-Signature-256": "sha256=00", "Authorization": "Bearer " + TOKEN.decode()}
    assert hook(running, headers).status_code == 200


# --- GitHub events, syncs, configuration ----------------------------------------------------------


def test_github_ping_answers_without_triggering(running: Running) -> None:
    reply = hook(running, {"X-Hub-Signature-256": signature(BODY), "X-GitHub-Event": "ping"})
    assert reply.status_code == 200
    assert reply.json()["triggered"] is False and "pong" in reply.json()["message"]
    assert running.service.triggered == []


def test_other_github_events_are_ignored_and_say_so(running: Running) -> None:
    reply = hook(running, {"X-Hub-Signature-256": signature(BODY), "X-GitHub-Event": "issues"})
    assert reply.status_code == 200
    assert reply.json()["triggered"] is False
    assert reply.json()["message"].startswith("GitHub event 'issues' ignored")
    assert running.service.triggered == []


def test_unknown_sync_is_404_once_authenticated(running: Running) -> None:
    reply = hook(running, {"Authorization": "Bearer " + TOKEN.decode()}, sync="nope")
    assert reply.status_code == 404
    assert reply.json() == {"sync": "nope", "triggered": False, "error": "no sync named 'nope'"}


def test_a_suspended_sync_is_409_and_says_so(running: Running) -> None:
    running.service.paused.add("web")
    reply = hook(running, {"Authorization": "Bearer " + TOKEN.decode()})
    assert reply.status_code == 409
    assert reply.json() == {
        "sync": "web",
        "triggered": False,
        "error": "sync web is suspended (spec.suspend in the configuration); nothing triggered",
    }
    assert running.service.triggered == []


def test_unknown_sync_without_authentication_is_401_so_names_do_not_leak(running: Running) -> None:
    assert hook(running, {}, sync="nope").status_code == 401


def test_no_webhook_token_configured_is_404() -> None:
    run = serve(Service(token=None))
    try:
        reply = hook(run, {"Authorization": "Bearer anything"})
        assert reply.status_code == 404
        assert reply.json()["error"] == http.NOT_CONFIGURED
        assert run.service.triggered == []
    finally:
        run.stop()


@pytest.mark.parametrize("short", [b"", b"fifteen-bytes!!"], ids=["empty", "15-bytes"])
def test_a_short_token_authenticates_nobody(short: bytes) -> None:
    """An HMAC with an empty (or short) key is one anybody can compute or guess: such a token
    proves nothing, and the listener answers 503 rather than opening up."""
    assert http.authenticate({"x-hub-signature-256": signature(BODY, key=short)}, BODY, short) is None
    assert http.authenticate({"x-signature": signature(BODY, key=short)}, BODY, short) is None
    assert http.authenticate({"authorization": f"Bearer {short.decode()}"}, BODY, short) is None
    run = serve(Service(token=short))
    try:
        reply = hook(run, {"X-Hub-Signature-256": signature(BODY, key=short), "X-GitHub-Event": "push"})
        assert reply.status_code == 503
        assert reply.json()["error"] == http.UNUSABLE
        assert run.service.triggered == []
    finally:
        run.stop()


def test_a_hook_must_be_posted(running: Running) -> None:
    assert requests.get(f"{running.url}/hook/web", timeout=10).status_code == 405


# --- body limit -----------------------------------------------------------------------------------


def test_body_over_the_limit_with_content_length_is_413(running: Running) -> None:
    big = b"x" * (LIMIT + 1)
    reply = hook(running, {"X-Hub-Signature-256": signature(big), "X-GitHub-Event": "push"}, body=big)
    assert reply.status_code == 413
    assert reply.json()["error"] == f"the body of {LIMIT + 1} bytes is over the limit of {LIMIT} bytes"
    assert running.service.triggered == []


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_sent(running: Running) -> None:
    host, port = running.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(
            b"POST /hook/web HTTP/1.1\r\nHost: lockgate\r\nContent-Length: 1000000000\r\n"
            b"Authorization: Bearer " + TOKEN + b"\r\n\r\n"
        )
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b"connection: close" in answer.lower()
    assert running.service.triggered == []


def test_chunked_body_over_the_limit_is_413_while_it_streams(running: Running) -> None:
    sent = []

    def chunks() -> Iterator[bytes]:
        for _ in range(40):
            sent.append(1024)
            yield b"y" * 1024

    reply = requests.post(
        f"{running.url}/hook/web",
        data=chunks(),
        headers={"Authorization": "Bearer " + TOKEN.decode()},
        timeout=10,
    )
    assert reply.request.headers.get("Transfer-Encoding") == "chunked"
    assert reply.status_code == 413
    assert reply.json()["error"] == f"the body is over the limit of {LIMIT} bytes"
    assert running.service.triggered == []


def test_body_at_the_limit_is_accepted(running: Running) -> None:
    body = b"z" * LIMIT
    assert hook(running, {"X-Signature": signature(body)}, body=body).status_code == 200


# --- health, readiness, metrics -------------------------------------------------------------------


def test_healthz_answers_ok(running: Running) -> None:
    for url in (running.probes, running.url):  # the webhook listener has one for load balancers
        reply = requests.get(f"{url}/healthz", timeout=10)
        assert (reply.status_code, reply.text) == (200, "ok")


def test_the_webhook_listener_serves_neither_metrics_nor_readiness(running: Running) -> None:
    """Metrics name syncs, URLs and digests, readiness the API server's errors: not for outside."""
    for path in ("/metrics", "/readyz"):
        assert requests.get(f"{running.url}{path}", timeout=10).status_code == 404
    assert requests.post(f"{running.probes}/hook/web", timeout=10).status_code == 404


def test_readyz_is_503_with_the_reason(running: Running) -> None:
    running.service.readiness = (False, "registry.example unreachable: connection refused")
    reply = requests.get(f"{running.probes}/readyz", timeout=10)
    assert (reply.status_code, reply.text) == (503, "registry.example unreachable: connection refused")
    running.service.readiness = (True, "")
    reply = requests.get(f"{running.probes}/readyz", timeout=10)
    assert (reply.status_code, reply.text) == (200, "ok")


def test_metrics_exposition_names_the_series(running: Running) -> None:
    sync = SyncOptions(name="web", source=source.SourceSpec(url="oci://registry.example/web:v1"))
    running.metrics.observe_pass(sync, Result(name="web", namespace="lockgate", seconds=0.2), "applied")
    running.metrics.set_sync_info("web", "lockgate", "oci://r/web:v1", "v1", "sha256:1", True, False)
    running.metrics.count_api({"get": 1})
    running.metrics.count_registry("head")
    running.metrics.reload(True)
    reply = requests.get(f"{running.probes}/metrics", timeout=10)
    assert reply.status_code == 200
    assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    for name in (
        'gotk_reconcile_duration_seconds_bucket{kind="Sync",le="0.01",name="web",namespace="lockgate"}',
        'lockgate_sync_info{digest="sha256:1",name="web",namespace="lockgate",ready="True"',
        'lockgate_passes_total{name="web",namespace="lockgate",outcome="applied"} 1.0',
        'lockgate_managed_objects{name="web",namespace="lockgate"} 0.0',
        'lockgate_api_requests_total{verb="get"} 1.0',
        'lockgate_registry_requests_total{verb="head"} 1.0',
        'lockgate_config_reloads_total{result="success"} 1.0',
    ):
        assert name in reply.text
    assert "# TYPE lockgate_drift_corrections_total counter" in reply.text


# --- the servers ----------------------------------------------------------------------------------


def test_each_distinct_address_gets_a_server_and_duplicates_share_one() -> None:
    run = serve(Service(), ["127.0.0.1:0", "127.0.0.1:0", " 127.0.0.1:0", "[::1]:0"])
    try:
        assert run.servers.addresses == ["127.0.0.1:0", "[::1]:0"]
        first, second = run.servers.ports
        assert requests.get(f"http://127.0.0.1:{first}/healthz", timeout=10).text == "ok"
        assert requests.get(f"http://[::1]:{second}/healthz", timeout=10).text == "ok"
    finally:
        run.stop()


def test_a_bare_port_listens_on_all_interfaces() -> None:
    run = serve(Service(), [":0"])
    try:
        (port,) = run.servers.ports
        assert requests.get(f"http://127.0.0.1:{port}/healthz", timeout=10).text == "ok"
        if socket.has_dualstack_ipv6():
            assert requests.get(f"http://[::1]:{port}/healthz", timeout=10).text == "ok"
    finally:
        run.stop()


def test_bad_address_and_taken_port_are_errors(running: Running) -> None:
    with pytest.raises(UsageError, match="listen address 'localhost'"):
        http.HttpServers(running.servers.app, ["localhost"], limits=listener.WEBHOOK).start()
    taken = running.servers.ports[0]
    with pytest.raises(LockgateError, match=f"cannot listen on 127.0.0.1:{taken}"):
        http.HttpServers(running.servers.app, [f"127.0.0.1:{taken}"], limits=listener.WEBHOOK).start()


def test_the_webhook_listener_may_not_share_the_probes_port() -> None:
    with pytest.raises(UsageError) as caught:
        http.check_apart(":8080", "127.0.0.1:8080", where="--config lockgate.yaml")
    assert caught.value.message.startswith(
        "--config lockgate.yaml: Runner spec.webhookAddress ':8080' uses the port of spec.metricsAddress "
        "'127.0.0.1:8080': /healthz, /readyz and /metrics keep a listener of their own"
    )
    http.check_apart(":9292", ":8080", where="x")
    http.check_apart("127.0.0.1:0", "127.0.0.1:0", where="x")  # two free ports


def test_stop_lets_a_request_in_flight_finish_and_refuses_new_ones() -> None:
    run = serve(Service(gate=threading.Event()))
    assert run.service.gate is not None
    port = run.probe_servers.ports[0]
    replies: list[requests.Response] = []
    request = threading.Thread(
        target=lambda: replies.append(requests.get(f"{run.probes}/readyz", timeout=30))
    )
    request.start()
    assert run.service.entered.wait(10)
    stopping = threading.Thread(target=run.probe_servers.stop, args=(20,))
    started = time.monotonic()
    stopping.start()
    deadline = time.monotonic() + 5
    while True:  # the listener closes first
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except (ConnectionRefusedError, ConnectionResetError):
            # a connection caught in the backlog as the listener closes is reset, not refused
            break
        assert time.monotonic() < deadline, "still accepting connections while stopping"
        time.sleep(0.05)
    assert stopping.is_alive()
    run.service.gate.set()
    request.join(10)
    stopping.join(10)
    assert not stopping.is_alive() and time.monotonic() - started < 10
    assert [(r.status_code, r.text) for r in replies] == [(200, "ok")]
    assert not run.probe_servers.serving
    run.stop()


def test_stop_gives_up_on_a_stuck_request_after_its_timeout() -> None:
    run = serve(Service(gate=threading.Event()))
    assert run.service.gate is not None
    request = threading.Thread(target=_ignore_errors, args=(f"{run.probes}/readyz",))
    request.start()
    assert run.service.entered.wait(10)
    started = time.monotonic()
    run.probe_servers.stop(0.5)
    assert time.monotonic() - started < 3
    run.service.gate.set()  # the worker thread returns; the loop's thread then ends too
    request.join(10)
    deadline = time.monotonic() + 10
    while run.probe_servers.serving:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    run.stop()


def _ignore_errors(url: str) -> None:
    with contextlib.suppress(requests.RequestException):
        requests.get(url, timeout=30)
