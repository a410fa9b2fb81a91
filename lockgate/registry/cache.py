"""What a long-lived registry client remembers between checks (``RegistryClient(cache=...)``).

``serve`` checks every sync's source on its interval; a sync that requires attestations
also reads the referrers of each digest it considers. Without memory that is the whole
referrers list, every referrer manifest and every bundle blob, and a signature check of
each, on every interval, though almost nothing changed. What can be remembered, and why
it is safe:

* **Documents by digest** (manifests, and blobs up to ``SMALL_BLOB``): content-addressed,
  the bytes behind a digest never change; the client still checks that they hash to it
  when they are first read.
* **The referrers list of a digest** changes whenever an attestation arrives, which is
  what a waiting sync waits for; so it is never trusted without asking. On a registry
  without the referrers API the list is the fallback index at tag ``sha256-<hex>``: one
  HEAD of that tag answers whether it changed (its manifest digest), and only a changed
  index is read, by digest. A registry answering the API is asked for each page of its list
  each time, with the page's ``ETag`` in ``If-None-Match``: an unchanged page is a 304 with
  no body (``referrers``; the manifests it names are remembered as above). That a registry has no
  API is believed for ``API_RECHECK_SECONDS``, then probed again (a registry upgraded in
  place starts answering it).
* **Values derived from content-addressed bytes** (``derived``): e.g. whether a bundle
  verifies with a key, keyed by the digests and the key. Signing decides what goes in a key.

Every map is a bounded LRU: a long-running process keeps a working set, not a history.
One cache serves one set of credentials (``serve`` keeps one per registry host and
credentials Secret), so nothing read with one Secret's rights is handed to another sync.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from lockgate.registry.oci import Descriptor, Referrers

#: blobs up to this size are remembered (bundles are a few KiB; layers are not worth holding)
SMALL_BLOB = 256 << 10
#: how long "this registry has no referrers API" is believed before it is probed again
API_RECHECK_SECONDS = 3600.0
MAX_DOCUMENT_BYTES = 64 << 20
MAX_LISTINGS = 20_000
MAX_DERIVED = 100_000

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Lru(Generic[K, V]):
    """A map that forgets its least recently used entries beyond ``max_entries`` or ``max_bytes``."""

    def __init__(self, *, max_entries: int, max_bytes: int | None = None) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0

    def get(self, key: K) -> V | None:
        found = self._items.get(key)
        if found is None:
            return None
        self._items.move_to_end(key)
        return found[0]

    def put(self, key: K, value: V, size: int = 0) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        self._items[key] = (value, size)
        self._bytes += size
        while self._items and (
            len(self._items) > self.max_entries
            or (self.max_bytes is not None and self._bytes > self.max_bytes)
        ):
            _, (_, dropped) = self._items.popitem(last=False)
            self._bytes -= dropped

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True)
class Page:
    """One page of a referrers list from the API, as answered: its URL, its ``ETag`` (empty:
    none), its descriptors and the next page's URL (its ``Link``)."""

    url: str
    etag: str
    manifests: tuple[Descriptor, ...]
    next: str | None


@dataclass(frozen=True)
class Listing:
    """The referrers of one digest as last read, and how to tell whether they changed."""

    referrers: Referrers
    #: the fallback index's manifest digest when it was read (None: there was no index)
    index_digest: str | None
    #: when the referrers API was last probed (``time.monotonic``)
    probed_at: float
    #: the API's pages, each revalidated with its ETag (none for the fallback)
    pages: tuple[Page, ...] = ()


@dataclass
class CacheStats:
    """How often the cache answered, for tests and benchmarks."""

    document_hits: int = 0
    derived_hits: int = 0
    derived_misses: int = 0


class RegistryCache:
    """Remembered documents, referrers listings and derived values; safe across threads."""

    def __init__(
        self,
        *,
        max_document_bytes: int = MAX_DOCUMENT_BYTES,
        max_listings: int = MAX_LISTINGS,
        max_derived: int = MAX_DERIVED,
        api_recheck: float = API_RECHECK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api_recheck = api_recheck
        self.clock = clock
        self.stats = CacheStats()
        self._lock = threading.Lock()
        # one budget for manifests and blobs: both are documents by digest
        self._documents: _Lru[tuple[str, str, str], tuple[bytes, str]] = _Lru(
            max_entries=max_listings * 4, max_bytes=max_document_bytes
        )
        self._listings: _Lru[tuple[str, str, str], Listing] = _Lru(max_entries=max_listings)
        # values are held in a 1-tuple, so a derived None is remembered too
        self._derived: _Lru[Hashable, tuple[object]] = _Lru(max_entries=max_derived)

    # ---- documents by digest -------------------------------------------------------------
    def document(self, kind: str, repo: str, digest: str) -> tuple[bytes, str] | None:
        """(bytes, media type) of the manifest or blob ``digest`` in ``repo``, if remembered."""
        with self._lock:
            found = self._documents.get((kind, repo, digest))
            if found is not None:
                self.stats.document_hits += 1
            return found

    def keep_document(self, kind: str, repo: str, digest: str, content: bytes, media_type: str = "") -> None:
        """Remember bytes already checked to hash to ``digest``."""
        with self._lock:
            self._documents.put((kind, repo, digest), (content, media_type), len(content))

    # ---- referrers listings --------------------------------------------------------------
    def listing(self, repo: str, digest: str) -> Listing | None:
        with self._lock:
            return self._listings.get(("referrers", repo, digest))

    def keep_listing(self, repo: str, digest: str, listing: Listing) -> None:
        with self._lock:
            self._listings.put(("referrers", repo, digest), listing)

    def fallback_trusted(self, listing: Listing) -> bool:
        """Whether ``listing`` came from the fallback index recently enough that the referrers
        API need not be probed again before revalidating it."""
        return not listing.referrers.from_api and self.clock() - listing.probed_at < self.api_recheck

    # ---- derived values ------------------------------------------------------------------
    def derived(self, key: Hashable, compute: Callable[[], V]) -> V:
        """``compute()``, remembered under ``key``: the caller's promise that the value depends
        on nothing but what the key names (digests of content, a key's fingerprint).

        ``compute`` runs outside the lock; two threads asking at once may both compute."""
        with self._lock:
            found = self._derived.get(key)
            if found is not None:
                self.stats.derived_hits += 1
                return found[0]  # type: ignore[return-value]
            self.stats.derived_misses += 1
        value = compute()
        with self._lock:
            self._derived.put(key, (value,))
        return value
