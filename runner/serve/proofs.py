"""Constant-time proofs that a caller knows a token: the one place ``serve`` compares secrets.

Every check a webhook or the status page makes goes through here, so each is
``hmac.compare_digest`` over bytes and none can leak, through its timing, how much of a
guess was right. Headers arrive decoded as latin-1 (ASGI), so ``.encode("latin-1")`` gives
back exactly the bytes the caller sent; a value that is not latin-1 proves nothing.
"""

from __future__ import annotations

import hmac


def _raw(value: str) -> bytes | None:
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return None


def same(given: str, secret: bytes) -> bool:
    """``given`` is ``secret`` itself (GitLab's ``X-Gitlab-Token``, Harbor's auth header)."""
    raw = _raw(given.strip())
    return bool(raw) and hmac.compare_digest(raw or b"", secret)


def bearer(authorization: str, secret: bytes) -> bool:
    """``Authorization: Bearer <secret>``."""
    scheme, _, value = authorization.strip().partition(" ")
    return scheme.lower() == "bearer" and same(value, secret)


def hmac_hex(given: str, body: bytes, key: bytes, algorithm: str) -> bool:
    """``given`` is the hex HMAC of ``body`` with ``key`` (either case), as Gitea and Nexus send it."""
    raw = _raw(given.strip().lower())
    expected = hmac.new(key, body, algorithm).hexdigest().encode()
    return raw is not None and hmac.compare_digest(expected, raw)


def prefixed_hmac(header: str, body: bytes, key: bytes, *, allowed: tuple[str, ...]) -> bool:
    """``ALGORITHM=HEX`` (GitHub's and Bitbucket's ``sha256=...``, Flux's generic-hmac), the
    algorithm one of ``allowed``."""
    algorithm, sep, given = header.strip().partition("=")
    algorithm = algorithm.lower()
    return bool(sep) and algorithm in allowed and hmac_hex(given, body, key, algorithm)
