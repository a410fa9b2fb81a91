"""The cloud token cache: one entry per provider, identity and registry, shared by every
sync and client of this process, kept until shortly before the credentials expire.

A minute-long token is renewed a fifth of its life early, a 12-hour ECR token five minutes
early (``renew_at``). Each key has its own lock, so 1,000 syncs asking at once for one
identity cause one token request, and other identities do not wait on it. Failures are not
cached: the next pass asks the token service again, so a sync recovers by itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from lockgate.registry.credentials import Credentials

#: renew this long before expiry at most (a long-lived token)
MAX_EARLY = 300.0


@dataclass(frozen=True)
class Minted:
    """Registry credentials and when they stop working (``time.time()`` seconds)."""

    credentials: Credentials
    expires_at: float
    issued_at: float = field(default_factory=time.time)

    def renew_at(self) -> float:
        lifetime = max(self.expires_at - self.issued_at, 0.0)
        return self.expires_at - min(MAX_EARLY, lifetime / 5)


class TokenCache:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._entries: dict[Hashable, Minted] = {}
        self._locks: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()
        #: token exchanges made per key, for the benchmark and the metrics
        self.minted: dict[Hashable, int] = {}

    def get(self, key: Hashable, mint: Callable[[], Minted]) -> Minted:
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            known = self._entries.get(key)
            if known is not None and self._clock() < known.renew_at():
                return known
            fresh = mint()
            with self._lock:
                self._entries[key] = fresh
                self.minted[key] = self.minted.get(key, 0) + 1
            return fresh

    def forget_credentials(self, credentials: Credentials) -> None:
        """Drop the entry holding ``credentials``: the registry refused them (revoked, or a
        clock skew), so the next pass mints new ones instead of waiting for their expiry."""
        with self._lock:
            for key in [k for k, v in self._entries.items() if v.credentials is credentials]:
                del self._entries[key]

    def forget(self, key: Hashable | None = None) -> None:
        """Drop one entry (or all): the registry refused what it held."""
        with self._lock:
            if key is None:
                self._entries.clear()
            else:
                self._entries.pop(key, None)


DEFAULT_CACHE = TokenCache()
