"""The shared half of the cloud stand-ins (``cloud_support.CloudStandIn``): whom the "clouds"
trust, how their answers are minted, and how a refusal is made.

A stand-in is a strict judge: each endpoint checks every field its service documents and
answers a request that differs with that service's documented error body (``Refusal``),
recording the refusal (``refusals``) so a test can say which rule refused. Answers are
minted deterministically from the fields that decide them (``derive``): two clients that send
the same request get the same token, so an SDK and lockgate can be compared by what they
obtained, and a client that sends something else gets another token or a refusal.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from lockgate.registry.cloud import sigv4
from tests.integration.registry_front_support import TokenService, _send

JSON = "application/json"


def jwt_claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    value: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return value


def verify_es256(token: str, public_pem: bytes) -> bool:
    """The API server's ServiceAccount token signature (ES256, the world's EC signing key)."""
    head, payload, signature = token.split(".")
    raw = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
    key = serialization.load_pem_public_key(public_pem)
    assert isinstance(key, ec.EllipticCurvePublicKey)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    try:
        key.verify(der, f"{head}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
    except Exception:
        return False
    return True


class Refusal(Exception):
    """A documented refusal: status, body and content type as the service answers them;
    ``code`` is what ``refusals`` records (the service's error code)."""

    def __init__(self, status: int, code: str, body: bytes, content_type: str = JSON) -> None:
        super().__init__(code)
        self.status, self.code, self.body, self.content_type = status, code, body, content_type


@dataclass(frozen=True)
class Trusted:
    """A subject token the "cloud" accepted: who it names and for which audiences."""

    subject: str
    audiences: tuple[str, ...]
    expired: bool = False


class Judge(TokenService):
    """State and helpers every cloud's endpoints share."""

    def __init__(self, directory: Path, *, lifetime: int = 3600) -> None:
        self.lifetime = lifetime
        self.refusing = False
        self.counts: Counter[str] = Counter()
        #: (endpoint, error code) of every refusal, in order
        self.refusals: list[tuple[str, str]] = []
        #: web identity / federated tokens the "cloud" trusts (IRSA file, Azure file, GCP subject)
        self.trusted_tokens: set[str] = set()
        #: when set, ServiceAccount tokens signed by this key (the API server's) are trusted too
        self.issuer_key: bytes | None = None
        self.pod_identity_token = secrets.token_urlsafe(16)
        self.actions_request_token = secrets.token_urlsafe(16)
        self._secret = secrets.token_bytes(32)
        #: bumped by ``revoke``: registry credentials minted after it are new ones
        self.generation = 0
        self._aws_keys: dict[str, sigv4.AwsKeys] = {}
        self._aws_who: dict[str, str] = {}
        self._registry_pairs: set[tuple[str, str]] = set()
        self._refresh: set[str] = set()
        #: bearer tokens minted here -> (who, what they were minted for)
        self._bearers: dict[str, tuple[str, str]] = {}
        #: who each minted credential was for (role, client...), as the registry sees them
        self.subjects: list[str] = []
        #: (time.monotonic(), subject) of every registry credential minted
        self.minted_at: list[tuple[float, str]] = []
        self.registry = ""  # set once the registry runs: where /v2/ passes through to
        self._guard = threading.Lock()
        super().__init__(directory, username="unused", password=secrets.token_urlsafe(8))

    def derive(self, kind: str, *parts: str, length: int = 32) -> str:
        """A token that depends only on ``kind`` and ``parts`` (and this stand-in's secret)."""
        mac = hmac.new(self._secret, "\0".join((kind, *parts)).encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")[:length]

    def trusted(self, token: str) -> Trusted | None:
        """What the "cloud" knows of ``token``: a file token it was told to trust (any
        audience), or a ServiceAccount token signed by the cluster's key."""
        if token in self.trusted_tokens:
            return Trusted("file-token", ())
        if self.issuer_key is None or token.count(".") != 2:
            return None
        try:
            claims = jwt_claims(token)
        except ValueError:
            return None
        if not verify_es256(token, self.issuer_key):
            return None
        auds = claims.get("aud") or []
        return Trusted(
            str(claims.get("sub")),
            tuple([auds] if isinstance(auds, str) else auds),
            expired=claims.get("exp", 0) <= time.time(),
        )

    def reply(self, handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str) -> None:
        _send(handler, status, body, {"Content-Type": content_type})

    def count(self, what: str) -> None:
        with self._guard:
            self.counts[what] += 1

    def refused(self, endpoint: str, code: str) -> None:
        with self._guard:
            self.refusals.append((endpoint, code))

    def registry_cred(self, username: str, secret: str, subject: str) -> str:
        """Let the registry accept ``username``/``secret``, minted for ``subject``."""
        with self._guard:
            self._registry_pairs.add((username, secret))
            self.subjects.append(subject)
            self.minted_at.append((time.monotonic(), subject))
        return secret

    def bearer(self, token: str, who: str, purpose: str) -> str:
        with self._guard:
            self._bearers[token] = (who, purpose)
        return token

    def bearer_of(self, token: str) -> tuple[str, str] | None:
        with self._guard:
            return self._bearers.get(token)

    def revoke(self) -> None:
        """Every registry credential minted so far stops working (a revoked or rotated key)."""
        with self._guard:
            self._registry_pairs.clear()
            self._refresh.clear()
            self.generation += 1

    def expires(self) -> float:
        return time.time() + self.lifetime
