"""``lockgate.replies`` against a real local HTTP server: the edges of the one bounded reader.

In process: a reply of exactly the cap is read, one byte more is refused, a compressed reply
is counted by what it decompresses to (a gzip bomb costs the cap, not its expansion), a
``HEAD`` or ``204`` announcing a large body is not refused (there is no body), and the
refusal names the endpoint by scheme, host and port only (a path or userinfo may be a
credential). The endless peers, the real CLI and ``serve`` are in ``test_replies_bounded.py``.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from lockgate import replies
from lockgate.errors import ReplyTooLarge

LIMIT = replies.MAX_REPLY_BYTES
#: 64 MiB of zeros, gzipped to about 64 KiB
BOMB = gzip.compress(b"\0" * (64 << 20), compresslevel=9)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _reply(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and status != 204:
            self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/exact":
            self._reply(200, b"x" * LIMIT, {})
        elif path == "/one-more":
            self._reply(200, b"x" * (LIMIT + 1), {"Content-Length": str(LIMIT + 1)})
        elif path == "/unannounced":  # no length: the body runs until the connection closes
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            self.wfile.write(b"x" * (LIMIT + 1))
        elif path == "/bomb":
            self._reply(200, BOMB, {"Content-Encoding": "gzip"})
        elif path == "/no-content":
            self._reply(204, b"", {"Content-Length": str(1 << 40)})
        else:
            self._reply(404, b"{}", {})

    def do_HEAD(self) -> None:
        self._reply(200, b"", {"Content-Length": str(1 << 40)})


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_reply_of_exactly_the_cap_is_read_whole(server: str) -> None:
    with replies.session() as session:
        assert len(session.get(f"{server}/exact", timeout=10).content) == LIMIT


def test_one_byte_more_is_refused_by_its_length_before_it_is_read(server: str) -> None:
    with replies.session() as session, pytest.raises(ReplyTooLarge) as refused:
        session.get(f"{server}/one-more", timeout=10)
    assert "(Content-Length)" in refused.value.message


def test_one_byte_more_without_a_length_is_refused_as_it_is_read(server: str) -> None:
    response = requests.get(f"{server}/unannounced", timeout=10, stream=True)
    assert "Content-Length" not in response.headers
    with pytest.raises(ReplyTooLarge, match="answered more than 1 MiB"):
        replies.read(response)


def test_a_gzip_bomb_is_counted_by_what_it_expands_to(server: str) -> None:
    assert len(BOMB) < LIMIT  # small on the wire: the Content-Length check cannot see it
    with replies.session() as session, pytest.raises(ReplyTooLarge, match="answered more than 1 MiB"):
        session.get(f"{server}/bomb", timeout=10)


def test_no_body_is_no_refusal_whatever_the_length_says(server: str) -> None:
    with replies.session() as session:
        assert session.head(f"{server}/anything", timeout=10).status_code == 200
        assert session.get(f"{server}/no-content", timeout=10).content == b""


def test_the_refusal_names_scheme_host_and_port_only(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    url = f"http://user:s3cret@127.0.0.1:{port}/one-more?token=abc"
    with replies.session() as session, pytest.raises(ReplyTooLarge) as refused:
        session.get(url, timeout=10)
    assert refused.value.endpoint == server
    assert "s3cret" not in refused.value.message and "token" not in refused.value.message
    assert "one-more" not in refused.value.message
