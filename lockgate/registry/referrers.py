"""What refers to a manifest (OCI 1.1): the referrers API, every page of it, else the fallback.

Where it sits: ``RegistryClient.referrers`` calls ``read``; attestations, signatures, the fleet
view and quorum promotion all read referrers through it.

* **The API** (``GET /v2/<name>/referrers/<digest>``) may answer in pages: each page names the
  next with a ``Link: <...>; rel="next"`` header, as tag lists do. Every page is read, up to
  ``MAX_PAGES``; a page that names itself or an earlier page again is refused (a loop).
* **Revalidation**: with a ``RegistryCache`` (``serve``'s) each page is remembered with the
  ``ETag`` it was answered with, and asked again with ``If-None-Match``; a ``304 Not
  Modified`` reuses the remembered page without its body. An ETag names one page's
  representation, so every page is revalidated (a new referrer may land on any page), and a
  page that changed is read whole, its ``Link`` followed afresh.
* **The fallback**: a registry that does not answer the API (404, 400...) has the tag-schema
  index at ``sha256-<hex>`` instead; with a cache, one HEAD of that tag says whether it changed
  (``RegistryCache.fallback_trusted``).
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING

from lockgate.errors import ResolveError
from lockgate.registry import oci, replies
from lockgate.registry.cache import Listing, Page
from lockgate.registry.oci import OCI_INDEX, Referrers, referrers_tag

if TYPE_CHECKING:
    from lockgate.registry.client import RegistryClient

#: pages of one referrers list (at 10 referrers a page, 10,000 referrers)
MAX_PAGES = 1000


def read(client: RegistryClient, repo: str, digest: str) -> Referrers:
    cache = client.cache
    known = cache.listing(repo, digest) if cache is not None else None
    if known is not None and cache is not None and cache.fallback_trusted(known):
        index_digest = client.head_manifest(repo, referrers_tag(digest))
        if index_digest != known.index_digest:
            known = _fallback(client, repo, digest, index_digest, probed_at=known.probed_at)
        return known.referrers
    probed_at = cache.clock() if cache is not None else 0.0
    listing = _api(client, repo, digest, known, probed_at=probed_at)
    if listing is None:
        listing = _fallback(client, repo, digest, referrers_tag(digest), probed_at=probed_at)
    elif cache is not None:
        cache.keep_listing(repo, digest, listing)
    return listing.referrers


def _api(
    client: RegistryClient, repo: str, digest: str, known: Listing | None, *, probed_at: float
) -> Listing | None:
    """Every page of the API's list, revalidating remembered pages; None when the registry
    does not answer the API (its first page is refused with a client error)."""
    where = f"{client.host}/{repo}@{digest}"
    remembered = {page.url: page for page in (known.pages if known is not None else ())}
    first = client.transport.base_url + f"/v2/{repo}/referrers/{digest}"
    url: str | None = first
    pages: list[Page] = []
    while url is not None:
        if len(pages) == MAX_PAGES or url in (p.url for p in pages):
            raise ResolveError(
                f"referrers of {where}: the registry's pages do not end (over {MAX_PAGES} pages, "
                f"or a Link back to {url})"
            )
        cached = remembered.get(url)
        headers = {"Accept": OCI_INDEX}
        if cached is not None and cached.etag:
            headers["If-None-Match"] = cached.etag
        response = client.transport.request(
            "GET", url, scope=f"repository:{repo}:pull", headers=headers, stream=True
        )
        with response:
            if response.status_code == 304 and cached is not None:
                page = cached
            elif response.status_code == 200:
                content = replies.read_limited(response, oci.MAX_DOCUMENT_BYTES, where)
                link = response.links.get("next", {}).get("url")
                page = Page(
                    url,
                    response.headers.get("ETag") or "",
                    Referrers.from_bytes(content, from_api=True, where=where).manifests,
                    urllib.parse.urljoin(url, link) if link else None,
                )
            elif url == first and response.status_code < 500:
                return None
            else:
                raise replies.failure(response, f"{where} referrers")
        pages.append(page)
        url = page.next
    found = tuple(m for page in pages for m in page.manifests)
    return Listing(Referrers(found, from_api=True), None, probed_at, tuple(pages))


def _fallback(
    client: RegistryClient, repo: str, digest: str, index: str | None, *, probed_at: float
) -> Listing:
    """The fallback index ``index`` (its tag, or the digest a HEAD of the tag answered; None:
    there is none) as the referrers of ``digest``, remembered when there is a cache."""
    listing = Listing(Referrers(), None, probed_at)
    if index is not None:
        try:
            fallback = client.get_manifest(repo, index)
        except ResolveError:
            pass
        else:
            where = f"{client.host}/{repo}@{digest}"
            referrers = Referrers.from_bytes(fallback.content, from_api=False, where=where)
            listing = Listing(referrers, fallback.digest, probed_at)
    if client.cache is not None:
        client.cache.keep_listing(repo, digest, listing)
    return listing
