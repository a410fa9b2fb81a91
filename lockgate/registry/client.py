"""``RegistryClient``: the distribution API verbs lockgate needs, over one ``Transport``.

Manifests travel as raw bytes and are addressed by the sha256 of exactly those bytes;
blobs are streamed from and to files with their digest checked on the way. Used by the
artifact commands, by signing (manifests by tag and digest, indexes) and by the image
scanner (tag listing). A client given a ``RegistryCache`` (``serve``'s) remembers documents
by digest and revalidates referrers lists with one request (``lockgate.registry.cache``).
"""

from __future__ import annotations

import hashlib
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import requests

from lockgate import replies
from lockgate.errors import (
    AuthError,
    LockgateError,
    RegistryError,
    ReplyTooLarge,
    ResolveError,
    UsageError,
    VerificationError,
)
from lockgate.registry import credentials as creds_mod
from lockgate.registry import oci
from lockgate.registry.cache import SMALL_BLOB, Listing, RegistryCache
from lockgate.registry.connection import TransportOptions
from lockgate.registry.credentials import Credentials
from lockgate.registry.oci import MANIFEST_TYPES, OCI_INDEX, Referrers, referrers_tag, sha256_digest
from lockgate.registry.reference import DIGEST_PATTERN, Reference
from lockgate.registry.transport import RetryPolicy, Transport

if TYPE_CHECKING:
    from lockgate.registry import cloud
    from lockgate.registry.beneath import Tree

CHUNK = 1 << 20
MAX_MANIFEST_BYTES = oci.MAX_DOCUMENT_BYTES
#: one page of a tag list (10,000 tags of 128 characters fit with room to spare)
MAX_TAG_PAGE_BYTES = 16 << 20
_ERROR_BODY_BYTES = replies.MAX_REPLY_BYTES


@dataclass(frozen=True)
class FetchedManifest:
    content: bytes
    media_type: str
    digest: str


def _scope(repo: str, actions: str) -> str:
    return f"repository:{repo}:{actions}"


class RegistryClient:
    """One registry host. Build it with ``for_reference`` (credentials and scheme are found for you)."""

    def __init__(self, transport: Transport, *, cache: RegistryCache | None = None) -> None:
        self.transport = transport
        self.cache = cache

    @classmethod
    def for_reference(
        cls,
        ref: Reference,
        *,
        credentials: Credentials | None = None,
        insecure: bool = False,
        retry: RetryPolicy | None = None,
        cache: RegistryCache | None = None,
        options: TransportOptions | None = None,
        provider: str = "generic",
        identity: cloud.Identity | None = None,
        layout_tree: Tree | None = None,
    ) -> RegistryClient:
        """A client for ``ref.host``; plain http when ``insecure``, https then http when loopback.

        ``cache``: for a long-lived client, what to remember between calls (one per credentials).
        ``options``: CA, client certificate and proxy (``lockgate.registry.connection``).
        ``provider`` (aws, azure, gcp): credentials from the cloud's workload identity (or
        ``identity``, a per-sync one) instead of the Docker config (``lockgate.registry.cloud``).
        An ``oci-layout://`` reference gets the layout directory's store (``layout_dir``), every
        file reached through ``layout_tree`` (a Sync's allowed root; default ``/``)."""
        if ref.layout is not None:
            from pathlib import Path

            from lockgate.registry import layout_dir

            return layout_dir.LayoutStore.open(Path(ref.layout), tree=layout_tree)
        refused = None
        if provider != "generic":
            from lockgate.registry import cloud as cloud_mod

            if credentials is not None:
                raise UsageError(f"provider {provider} mints the credentials; do not pass others as well")
            minted = cloud_mod.credentials(provider, ref.host, identity=identity, insecure=insecure)
            if minted is not None:
                credentials, refused = minted.credentials, cloud_mod.forgetting(minted.credentials)
        found = creds_mod.find(ref.host, explicit=credentials)
        transport = Transport(ref.host, credentials=found, insecure=insecure, retry=retry, options=options)
        transport.on_refused = refused
        return cls(transport, cache=cache)

    @property
    def host(self) -> str:
        return self.transport.host

    @property
    def counts(self) -> dict[str, int]:
        """Requests sent so far per lower-case HTTP verb (``head``, ``get``, ``put``...), a copy."""
        return self.transport.counted()

    def head_manifest(self, repo: str, ref: str) -> str | None:
        """The digest ``ref`` points to, or None when the registry does not know it."""
        response = self.transport.request(
            "HEAD",
            f"/v2/{repo}/manifests/{ref}",
            scope=_scope(repo, "pull"),
            headers={"Accept": ", ".join(MANIFEST_TYPES)},
        )
        with response:
            if response.status_code == 404:
                return None
            if response.status_code != 200:
                raise _failure(response, f"{self.host}/{repo}:{ref}")
            digest = response.headers.get("Docker-Content-Digest")
        if digest and DIGEST_PATTERN.match(digest):
            return digest
        return self.get_manifest(repo, ref).digest

    def resolve(self, ref: Reference) -> str:
        """The manifest digest of ``ref``; a tag is resolved once, a digest is checked to exist."""
        digest = self.head_manifest(ref.repository, ref.ref)
        if digest is None:
            raise ResolveError(f"{ref} not found: no manifest with that {'digest' if ref.digest else 'tag'}")
        if ref.digest and digest != ref.digest:
            raise VerificationError(f"{ref}: registry answered digest {digest}, not the one asked for")
        return digest

    def get_manifest(
        self, repo: str, ref: str, *, accept: tuple[str, ...] = MANIFEST_TYPES
    ) -> FetchedManifest:
        by_digest = DIGEST_PATTERN.match(ref) is not None
        if by_digest and self.cache is not None:
            known = self.cache.document("manifest", repo, ref)
            if known is not None:
                return FetchedManifest(content=known[0], media_type=known[1], digest=ref)
        where = f"{self.host}/{repo}{'@' if ref.startswith('sha') and ':' in ref else ':'}{ref}"
        response = self.transport.request(
            "GET",
            f"/v2/{repo}/manifests/{ref}",
            scope=_scope(repo, "pull"),
            headers={"Accept": ", ".join(accept)},
            stream=True,
        )
        with response:
            if response.status_code == 404:
                raise ResolveError(f"oci://{where} not found")
            if response.status_code != 200:
                raise _failure(response, where)
            content = _read_limited(response, MAX_MANIFEST_BYTES, where)
            media_type = response.headers.get("Content-Type", "").split(";")[0].strip()
        digest = sha256_digest(content)
        if by_digest and digest != ref:
            raise VerificationError(f"oci://{where}: the manifest bytes hash to {digest}; refusing it")
        if self.cache is not None:
            self.cache.keep_document("manifest", repo, digest, content, media_type)
        return FetchedManifest(content=content, media_type=media_type, digest=digest)

    def put_manifest(self, repo: str, ref: str, content: bytes, media_type: str) -> str:
        """Store ``content`` under ``ref`` (a tag or its own digest); returns sha256 of the bytes."""
        digest = sha256_digest(content)
        response = self.transport.request(
            "PUT",
            f"/v2/{repo}/manifests/{ref}",
            scope=_scope(repo, "pull,push"),
            headers={"Content-Type": media_type},
            data=content,
        )
        with response:
            if response.status_code not in (200, 201):
                raise _failure(response, f"{self.host}/{repo}:{ref}")
            answered = response.headers.get("Docker-Content-Digest")
        if answered and answered != digest:
            raise RegistryError(
                f"{self.host}/{repo}: registry stored the manifest as {answered}, expected {digest}"
            )
        return digest

    def referrers(self, repo: str, digest: str) -> Referrers:
        """What refers to the manifest ``digest``: the referrers API, else the fallback index.

        With a cache, a list read from the fallback index is revalidated by one HEAD of its
        tag and read again (by digest) only when it changed."""
        known = self.cache.listing(repo, digest) if self.cache is not None else None
        if known is not None and self.cache is not None and self.cache.fallback_trusted(known):
            index_digest = self.head_manifest(repo, referrers_tag(digest))
            if index_digest != known.index_digest:
                known = self._fallback(repo, digest, index_digest, probed_at=known.probed_at)
            return known.referrers
        probed_at = self.cache.clock() if self.cache is not None else 0.0
        where = f"{self.host}/{repo}@{digest}"
        response = self.transport.request(
            "GET",
            f"/v2/{repo}/referrers/{digest}",
            scope=_scope(repo, "pull"),
            headers={"Accept": OCI_INDEX},
            stream=True,
        )
        with response:
            if response.status_code == 200:
                return Referrers.from_bytes(
                    _read_limited(response, MAX_MANIFEST_BYTES, where), from_api=True, where=where
                )
            if response.status_code >= 500:
                raise _failure(response, f"{where} referrers")
        return self._fallback(repo, digest, referrers_tag(digest), probed_at=probed_at).referrers

    def _fallback(self, repo: str, digest: str, index: str | None, *, probed_at: float) -> Listing:
        """The fallback index ``index`` (its tag, or the digest a HEAD of the tag answered; None:
        there is none) as the referrers of ``digest``, remembered when there is a cache."""
        listing = Listing(Referrers(), None, probed_at)
        if index is not None:
            try:
                fallback = self.get_manifest(repo, index)
            except ResolveError:
                pass
            else:
                where = f"{self.host}/{repo}@{digest}"
                referrers = Referrers.from_bytes(fallback.content, from_api=False, where=where)
                listing = Listing(referrers, fallback.digest, probed_at)
        if self.cache is not None:
            self.cache.keep_listing(repo, digest, listing)
        return listing

    def blob_exists(self, repo: str, digest: str) -> bool:
        response = self.transport.request(
            "HEAD", f"/v2/{repo}/blobs/{digest}", scope=_scope(repo, "pull,push")
        )
        with response:
            if response.status_code == 200:
                return True
            if response.status_code == 404:
                return False
            raise _failure(response, f"{self.host}/{repo} blob {digest}")

    def upload_blob(self, repo: str, stream: IO[bytes] | bytes, *, digest: str, size: int) -> None:
        """Monolithic upload (POST then PUT); a file object is streamed, and rewound on retry."""
        where = f"{self.host}/{repo} blob {digest}"
        scope = _scope(repo, "pull,push")
        started = self.transport.request("POST", f"/v2/{repo}/blobs/uploads/", scope=scope)
        with started:
            if started.status_code != 202 or not started.headers.get("Location"):
                raise _failure(started, where)
            location = urllib.parse.urljoin(self.transport.base_url + "/", started.headers["Location"])
        response = self.transport.request(
            "PUT",
            location,
            scope=scope,
            params={"digest": digest},
            data=stream,
            headers={"Content-Type": "application/octet-stream", "Content-Length": str(size)},
        )
        with response:
            if response.status_code == 400 and "DIGEST_INVALID" in response.text:
                raise VerificationError(
                    f"{where}: the registry computed a different digest for the uploaded bytes"
                )
            if response.status_code != 201:
                raise _failure(response, where)

    def download_blob(self, repo: str, digest: str, dest: IO[bytes], *, max_size: int | None = None) -> int:
        """Stream the blob into ``dest``, checking its digest; returns the byte count."""
        where = f"{self.host}/{repo} blob {digest}"
        if self.cache is not None:
            known = self.cache.document("blob", repo, digest)
            if known is not None:
                if max_size is not None and len(known[0]) > max_size:
                    raise VerificationError(f"{where} is larger than the {max_size} bytes allowed")
                dest.write(known[0])
                return len(known[0])
        small: list[bytes] | None = [] if self.cache is not None else None
        response = self.transport.request(
            "GET", f"/v2/{repo}/blobs/{digest}", scope=_scope(repo, "pull"), stream=True
        )
        with response:
            if response.status_code == 404:
                raise ResolveError(f"{where} not found")
            if response.status_code != 200:
                raise _failure(response, where)
            algorithm, _, expected = digest.partition(":")
            hasher = hashlib.new(algorithm)
            total = 0
            for chunk in response.iter_content(CHUNK):
                total += len(chunk)
                if max_size is not None and total > max_size:
                    raise VerificationError(f"{where} is larger than the {max_size} bytes allowed")
                hasher.update(chunk)
                dest.write(chunk)
                if small is not None and total <= SMALL_BLOB:
                    small.append(chunk)
                else:
                    small = None
        if hasher.hexdigest() != expected:
            raise VerificationError(
                f"{where}: content hashes to {algorithm}:{hasher.hexdigest()}; "
                "the blob was tampered with or corrupted"
            )
        if small is not None and self.cache is not None:
            self.cache.keep_document("blob", repo, digest, b"".join(small))
        return total

    def list_tags(self, repo: str, *, page_size: int = 1000) -> list[str]:
        """Every tag of ``repo``, following ``Link`` pagination with ``n=page_size``."""
        return list(self.iter_tags(repo, page_size=page_size))

    def iter_tags(self, repo: str, *, page_size: int = 1000) -> Iterator[str]:
        url: str | None = f"/v2/{repo}/tags/list"
        params: dict[str, str] | None = {"n": str(page_size)}
        while url is not None:
            response = self.transport.request(
                "GET", url, scope=_scope(repo, "pull"), params=params, stream=True
            )
            with response:
                if response.status_code == 404:
                    raise ResolveError(f"repository oci://{self.host}/{repo} not found")
                if response.status_code != 200:
                    raise _failure(response, f"{self.host}/{repo}")
                body = _json(response, MAX_TAG_PAGE_BYTES, f"tag list of oci://{self.host}/{repo}")
                link = response.links.get("next", {}).get("url")
            yield from (body.get("tags") or []) if isinstance(body, dict) else []
            url = (
                urllib.parse.urljoin(self.transport.base_url + f"/v2/{repo}/tags/list", link)
                if link
                else None
            )
            params = None


def _read_limited(response: requests.Response, limit: int, where: str) -> bytes:
    return _read_body(response, limit, f"manifest of oci://{where}")


def _read_body(response: requests.Response, limit: int, what: str) -> bytes:
    try:
        return replies.read(response, limit=limit)
    except ReplyTooLarge as exc:
        raise RegistryError(f"{what} is larger than {limit} bytes; refusing it ({exc.detail})") from None


def _json(response: requests.Response, limit: int, what: str) -> Any:
    """A streamed JSON body within ``limit`` bytes and the parsing bounds; malformed JSON is a
    registry error."""
    data = _read_body(response, limit, what)
    try:
        return oci.read(data, what, max_bytes=limit)
    except ValueError:
        raise RegistryError(f"{what}: the registry answered something that is not JSON") from None


def _failure(response: requests.Response, where: str) -> Exception:
    code, message = "", ""
    try:
        # an error body is read for its first code and message only, within the cap and the
        # parsing bounds (a streamed error never whole)
        body = oci.read(
            replies.read(response, limit=_ERROR_BODY_BYTES), "error body", max_bytes=_ERROR_BODY_BYTES
        )
        first = (body.get("errors") or [{}])[0] if isinstance(body, dict) else {}
        code, message = str(first.get("code", "")), str(first.get("message", ""))
    except (ValueError, AttributeError, IndexError, LockgateError, requests.RequestException):
        pass
    detail = (
        f"HTTP {response.status_code}" + (f" {code}" if code else "") + (f": {message}" if message else "")
    )
    if response.status_code == 403:
        return AuthError(f"oci://{where}: access denied ({detail}); check the credentials' permissions")
    if response.status_code == 404:
        return ResolveError(f"oci://{where} not found ({detail})")
    return RegistryError(f"oci://{where}: {detail}")
