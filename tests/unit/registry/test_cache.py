"""``RegistryCache``: bounded memory, derived values remembered (None too), and how long a
registry without the referrers API is believed to have none."""

from __future__ import annotations

from lockgate.registry.cache import Listing, RegistryCache
from lockgate.registry.oci import Referrers


def test_documents_beyond_the_byte_budget_forget_the_least_recently_used() -> None:
    cache = RegistryCache(max_document_bytes=10)
    cache.keep_document("blob", "r", "sha256:a", b"aaaa")
    cache.keep_document("blob", "r", "sha256:b", b"bbbb")
    assert cache.document("blob", "r", "sha256:a") == (b"aaaa", "")  # a is now the most recent
    cache.keep_document("blob", "r", "sha256:c", b"cccc")
    assert cache.document("blob", "r", "sha256:b") is None
    assert cache.document("blob", "r", "sha256:a") is not None
    assert cache.document("blob", "r", "sha256:c") is not None
    assert cache.stats.document_hits == 3


def test_documents_are_kept_per_kind_and_repository() -> None:
    cache = RegistryCache()
    cache.keep_document(
        "manifest", "team-a/app", "sha256:a", b"{}", "application/vnd.oci.image.manifest.v1+json"
    )
    assert cache.document("manifest", "team-b/app", "sha256:a") is None
    assert cache.document("blob", "team-a/app", "sha256:a") is None


def test_listings_beyond_the_count_are_forgotten() -> None:
    cache = RegistryCache(max_listings=2)
    for digest in ("sha256:a", "sha256:b", "sha256:c"):
        cache.keep_listing("r", digest, Listing(Referrers(), None, 0.0))
    assert cache.listing("r", "sha256:a") is None
    assert cache.listing("r", "sha256:c") is not None


def test_a_derived_value_is_computed_once_even_when_it_is_none() -> None:
    cache = RegistryCache()
    calls: list[str] = []

    def compute() -> None:
        calls.append("x")

    assert cache.derived(("k", 1), compute) is None
    assert cache.derived(("k", 1), compute) is None
    assert calls == ["x"]
    assert cache.derived(("k", 2), lambda: 7) == 7
    assert (cache.stats.derived_hits, cache.stats.derived_misses) == (1, 2)


def test_derived_values_are_bounded() -> None:
    cache = RegistryCache(max_derived=2)
    for n in range(3):
        cache.derived(n, lambda n=n: n)  # type: ignore[misc]
    assert cache.derived(0, lambda: "again") == "again"


def test_no_referrers_api_is_believed_for_the_recheck_period_only() -> None:
    now = [100.0]
    cache = RegistryCache(api_recheck=60.0, clock=lambda: now[0])
    fallback = Listing(Referrers(from_api=False), None, probed_at=100.0)
    assert cache.fallback_trusted(fallback)
    now[0] = 159.0
    assert cache.fallback_trusted(fallback)
    now[0] = 160.0
    assert not cache.fallback_trusted(fallback)
    assert not cache.fallback_trusted(Listing(Referrers(from_api=True), None, probed_at=160.0))
