"""A registry behind a front, with its token service and its storage on other hosts.

The registry is the real one (Distribution, ``tests/world/registry.py``), configured as a
registry on object storage is: its upload locations name another host (``http.host``) and
its blob GET/HEAD answer 307 to object storage (the ``redirect`` storage middleware). What
cannot run here is stood in by small local HTTP servers, each implementing only the
documented requests it is sent, and recording every request's headers:

- ``TokenService`` stands in for a cloud token service (Docker Hub's auth.docker.io, GHCR's
  /token): the Docker token protocol (``GET realm?service=&scope=`` with basic credentials,
  answering ``{"token": JWT}``), JWTs signed with a key whose certificate the registry trusts.
- ``Elsewhere`` stands in for object storage, an upload endpoint and a CDN, all on one other
  host: it serves blobs from the registry's storage, takes uploads at the locations the
  registry hands out (writing them through to the registry with credentials of its own, as
  storage behind a registry has), and serves further pages of a tag list.
- ``Front`` is the host clients use (a registry's edge): it passes requests through to the
  registry and pages tag lists with a ``Link`` to ``Elsewhere``, which Distribution 2.8 does
  not do itself.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import secrets
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

SERVICE = "lockgate-test-registry"
ISSUER = "lockgate-test-token-service"
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "server", "date"}


@dataclass(frozen=True)
class Seen:
    """One request a stand-in received: what and with which ``Authorization`` (or None)."""

    method: str
    path: str
    authorization: str | None


class _Recording:
    """A threaded HTTP server on loopback whose handler is ``answer``; it records every request.
    With ``tls`` (a server context) it speaks https, the handshake in the request's thread."""

    def __init__(
        self,
        name: str,
        answer: Callable[[BaseHTTPRequestHandler, bytes], None],
        *,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        recording = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with recording._lock:
                    recording.seen.append(Seen(self.command, self.path, self.headers.get("Authorization")))
                answer(self, body)

            do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls is not None:
            self._server.socket = tls.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
        threading.Thread(target=self._server.serve_forever, name=name, daemon=True).start()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def requests(self) -> list[Seen]:
        with self._lock:
            return list(self.seen)

    def forget(self) -> None:
        with self._lock:
            self.seen.clear()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str]) -> None:
    handler.send_response(status)
    length = str(len(body))
    for key, value in headers.items():
        if key.lower() == "content-length" and handler.command == "HEAD":
            length = value  # a HEAD passed through: the length of what a GET would return
        elif key.lower() not in _HOP_BY_HOP:
            handler.send_header(key, value)
    handler.send_header("Content-Length", length)
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenService(_Recording):
    """The Docker token protocol with basic credentials; stands in for a cloud token service."""

    def __init__(self, directory: Path, *, username: str, password: str) -> None:
        self.username, self.password = username, password
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ISSUER)])
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .sign(self._key, hashes.SHA256())
        )
        directory.mkdir(parents=True, exist_ok=True)
        self.certificate = directory / "token-service.pem"
        self.certificate.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        super().__init__("token-service", self._answer)

    @property
    def realm(self) -> str:
        return f"{self.url}/token"

    def _key_id(self) -> str:
        """libtrust's key ID, by which Distribution finds the key in its root certificates."""
        der = self._key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        b32 = base64.b32encode(hashlib.sha256(der).digest()[:30]).decode().rstrip("=")
        return ":".join(b32[i : i + 4] for i in range(0, len(b32), 4))

    def mint(self, scopes: list[str], subject: str) -> str:
        """A JWT granting ``scopes`` (``repository:NAME:ACTIONS``), as the registry checks it."""
        access = []
        for scope in scopes:
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            access.append({"type": kind, "name": name, "actions": [a for a in actions.split(",") if a]})
        now = int(time.time())
        header = {"typ": "JWT", "alg": "ES256", "kid": self._key_id()}
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "aud": SERVICE,
            "exp": now + 600,
            "nbf": now - 60,
            "iat": now,
            "jti": secrets.token_hex(8),
            "access": access,
        }
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        r, s = decode_dss_signature(self._key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return f"{signing_input}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"

    def _answer(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        url = urllib.parse.urlsplit(handler.path)
        query = urllib.parse.parse_qs(url.query)
        expected = "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        if url.path != "/token" or query.get("service") != [SERVICE]:
            _send(handler, 404, b"{}", {"Content-Type": "application/json"})
        elif handler.headers.get("Authorization") != expected:
            _send(handler, 401, b'{"details":"bad credentials"}', {"WWW-Authenticate": 'Basic realm="token"'})
        else:
            token = self.mint(query.get("scope", []), self.username)
            _send(handler, 200, json.dumps({"token": token}).encode(), {"Content-Type": "application/json"})


def _page(
    tags: list[str], query: dict[str, list[str]], next_base: str, repo: str
) -> tuple[bytes, dict[str, str]]:
    """One page of a sorted tag list after ``last``, of ``n`` tags, with a Link to the next."""
    size = int(query.get("n", ["1000"])[0])
    last = query.get("last", [""])[0]
    rest = [t for t in sorted(tags) if t > last]
    page = rest[:size]
    headers = {"Content-Type": "application/json"}
    if len(rest) > size:
        following = urllib.parse.urlencode({"n": size, "last": page[-1]})
        headers["Link"] = f'<{next_base}/v2/{repo}/tags/list?{following}>; rel="next"'
    return json.dumps({"name": repo, "tags": page}).encode(), headers


def _tags_path(path: str) -> str | None:
    """``REPO`` of ``/v2/REPO/tags/list``, else None."""
    if path.startswith("/v2/") and path.endswith("/tags/list"):
        return path[len("/v2/") : -len("/tags/list")]
    return None


class Elsewhere(_Recording):
    """Object storage, an upload endpoint and a CDN page host on one host other than the registry's.

    ``own_auth`` gives the ``Authorization`` it writes through to the registry with, for a repository
    and actions: storage behind a registry has its own access, never the client's.
    """

    def __init__(self) -> None:
        self.registry = ""
        self.data: Path | None = None
        self.own_auth: Callable[[str, str], str] = lambda repo, actions: ""
        super().__init__("elsewhere", self._answer)

    def _answer(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        url = urllib.parse.urlsplit(handler.path)
        if url.path.startswith("/challenge/"):  # a host that asks for credentials it must not get
            realm = f'Bearer realm="{self.url}/steal",service="elsewhere",scope="repository:x:pull"'
            _send(handler, 401, b"{}", {"WWW-Authenticate": realm})
            return
        if url.path.startswith("/docker/registry/v2/") and self.data is not None:  # object storage
            blob = self.data / url.path.lstrip("/")
            if handler.command in ("GET", "HEAD") and blob.is_file() and ".." not in url.path:
                _send(handler, 200, blob.read_bytes(), {"Content-Type": "application/octet-stream"})
            else:
                _send(handler, 404, b"", {})
            return
        repo = _tags_path(url.path)
        if repo is not None and handler.command == "GET":  # further pages of a tag list
            full = requests.get(
                f"{self.registry}/v2/{repo}/tags/list",
                headers={"Authorization": self.own_auth(repo, "pull")},
                timeout=30,
            )
            page, headers = _page(full.json()["tags"], urllib.parse.parse_qs(url.query), self.url, repo)
            _send(handler, 200, page, headers)
            return
        if "/blobs/uploads/" in url.path and url.path.startswith("/v2/"):  # an upload location
            repo = url.path[len("/v2/") : url.path.index("/blobs/uploads/")]
            headers = {
                k: v for k, v in handler.headers.items() if k.lower() in ("content-type", "content-range")
            }
            written = requests.request(
                handler.command,
                f"{self.registry}{handler.path}",
                data=body,
                headers={**headers, "Authorization": self.own_auth(repo, "pull,push")},
                timeout=60,
            )
            _send(handler, written.status_code, written.content, dict(written.headers))
            return
        _send(handler, 404, b"", {})


class Front(_Recording):
    """The registry host clients use: passes every request through, pages tag lists onto ``Elsewhere``."""

    def __init__(self, elsewhere: Elsewhere) -> None:
        self.registry = ""
        self.elsewhere = elsewhere
        super().__init__("front", self._answer)

    def _answer(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        url = urllib.parse.urlsplit(handler.path)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_BY_HOP}
        passed = requests.request(
            handler.command,
            f"{self.registry}{handler.path}",
            data=body or None,
            headers=headers,
            allow_redirects=False,
            timeout=60,
        )
        repo = _tags_path(url.path)
        if repo is not None and passed.status_code == 200 and "n" in urllib.parse.parse_qs(url.query):
            page, page_headers = _page(
                passed.json()["tags"], urllib.parse.parse_qs(url.query), self.elsewhere.url, repo
            )
            _send(handler, 200, page, page_headers)
            return
        _send(handler, passed.status_code, passed.content, dict(passed.headers))
