"""Reading and writing signatures in a registry: the one I/O module of signing.

Everything here is a thin sequence of registry calls around the pure documents of
``layout``. Reads are for one manifest digest, resolved once by the caller; a registry
that cannot be reached raises (the caller turns that into a refusal, never into "no
signatures, allow"). A client with a cache answers repeated reads from memory
(``lockgate.registry.cache``). Adding to the fallback index reads it back, since writers
on a registry without the referrers API can replace each other's entries.
"""

from __future__ import annotations

import io
import random
import time
from dataclasses import dataclass
from typing import Any

from lockgate import boundedjson
from lockgate.errors import LockgateError, RegistryError, ResolveError
from lockgate.registry import RegistryClient
from lockgate.registry.oci import MAX_DOCUMENT_BYTES
from lockgate.signing import layout, simplesigning

MAX_PAYLOAD = 1 << 20
MAX_BUNDLE = 4 << 20
#: after writing the fallback index, at least this long before reading it back (seconds)
SETTLE_SECONDS = 0.05
MAX_BACKOFF_SECONDS = 10.0
LIST_ATTEMPTS = 10


@dataclass(frozen=True)
class LegacySignature:
    """One simple-signing layer of a ``.sig`` manifest: the payload and its base64 signature."""

    payload: bytes | None
    signature_b64: str
    annotations: dict[str, str]
    problem: str | None = None


@dataclass(frozen=True)
class StoredBundle:
    """A Sigstore bundle found among the referrers of a digest."""

    manifest_digest: str
    bundle: bytes | None
    subject_digest: str | None
    problem: str | None = None


def read_value(data: bytes | str, where: str) -> Any:
    """``json.loads`` of a document read from a registry, within the parsing bounds; over one
    raises ``ValueError``, as malformed JSON does: every caller refuses such a document
    the same way (a signature or attestation that does not count)."""
    try:
        return boundedjson.json_value(data, where, max_bytes=MAX_DOCUMENT_BYTES)
    except boundedjson.LimitExceeded as exc:
        raise ValueError(exc.message) from None


def read_json(data: bytes, where: str) -> dict[str, Any]:
    try:
        value = read_value(data, where)
    except ValueError:
        raise ResolveError(f"{where} is not valid JSON") from None
    if not isinstance(value, dict):
        raise ResolveError(f"{where} is not a JSON object")
    return value


def _optional_manifest(client: RegistryClient, repo: str, ref: str) -> dict[str, Any] | None:
    try:
        fetched = client.get_manifest(repo, ref)
    except ResolveError:
        return None
    return read_json(fetched.content, f"manifest {repo}:{ref}")


def _blob(client: RegistryClient, repo: str, digest: str, max_size: int) -> bytes:
    sink = io.BytesIO()
    client.download_blob(repo, digest, sink, max_size=max_size)
    return sink.getvalue()


def read_legacy(client: RegistryClient, repo: str, digest: str) -> list[LegacySignature]:
    """The simple-signing layers at ``sha256-<hex>.sig``; a layer whose blob is unreadable is
    kept with a ``problem`` so the caller can say why it did not count."""
    manifest = _optional_manifest(client, repo, layout.signature_tag(digest))
    if manifest is None:
        return []
    found = []
    for layer in manifest.get("layers") or []:
        if not isinstance(layer, dict) or layer.get("mediaType") != simplesigning.MEDIA_TYPE:
            continue
        notes = {str(k): str(v) for k, v in (layer.get("annotations") or {}).items()}
        signature = notes.get(layout.SIGNATURE_ANNOTATION, "")
        payload: bytes | None = None
        problem = None
        try:
            payload = _blob(client, repo, str(layer.get("digest")), MAX_PAYLOAD)
        except RegistryError:
            raise
        except LockgateError as exc:
            problem = f"its payload blob could not be read ({exc})"
        found.append(
            LegacySignature(payload=payload, signature_b64=signature, annotations=notes, problem=problem)
        )
    return found


def read_bundles(client: RegistryClient, repo: str, digest: str) -> list[StoredBundle]:
    """The Sigstore bundles that refer to ``digest``, each with the subject its manifest names."""
    return [read_bundle(client, repo, referrer) for referrer in bundle_referrers(client, repo, digest)]


def bundle_referrers(client: RegistryClient, repo: str, digest: str) -> list[str]:
    """The manifest digests of the Sigstore bundles that refer to ``digest`` (one request)."""
    return [entry.digest for entry in client.referrers(repo, digest).of_type(layout.BUNDLE_MEDIA_TYPE)]


def read_bundle(client: RegistryClient, repo: str, manifest_digest: str) -> StoredBundle:
    """The bundle in the referrer manifest ``manifest_digest``; one that cannot be read is
    kept with a ``problem`` (a registry that fails raises)."""
    try:
        fetched = client.get_manifest(repo, manifest_digest)
        manifest = read_json(fetched.content, f"referrer {manifest_digest}")
        layers = [
            item
            for item in manifest.get("layers") or []
            if isinstance(item, dict) and item.get("mediaType") == layout.BUNDLE_MEDIA_TYPE
        ]
        if not layers:
            raise ResolveError("it has no bundle layer")
        bundle: bytes | None = _blob(client, repo, str(layers[0].get("digest")), MAX_BUNDLE)
        subject = manifest.get("subject") or {}
        return StoredBundle(manifest_digest, bundle, subject.get("digest"))
    except RegistryError:
        raise
    except LockgateError as exc:
        return StoredBundle(manifest_digest, None, None, problem=f"unreadable: {exc}")


def write_legacy(client: RegistryClient, repo: str, digest: str, layer: dict[str, Any]) -> str:
    """Add a signature layer to ``sha256-<hex>.sig`` (read-modify-write); returns the manifest digest."""
    tag = layout.signature_tag(digest)
    manifest, config = layout.add_signature_layer(_optional_manifest(client, repo, tag), layer)
    _ensure_blob(client, repo, config.data, config.digest)
    return client.put_manifest(repo, tag, layout.encode(manifest), layout.OCI_MANIFEST)


def upload(client: RegistryClient, repo: str, data: bytes) -> str:
    digest = layout.sha256_digest(data)
    _ensure_blob(client, repo, data, digest)
    return digest


def _ensure_blob(client: RegistryClient, repo: str, data: bytes, digest: str) -> None:
    if not client.blob_exists(repo, digest):
        client.upload_blob(repo, data, digest=digest, size=len(data))


def subject_of(client: RegistryClient, repo: str, digest: str) -> dict[str, Any]:
    """The descriptor of the manifest ``digest`` (media type and size), for a referrer's ``subject``."""
    fetched = client.get_manifest(repo, digest)
    return {
        "mediaType": fetched.media_type or layout.OCI_MANIFEST,
        "size": len(fetched.content),
        "digest": fetched.digest,
    }


def write_bundle(
    client: RegistryClient, repo: str, digest: str, bundle: bytes, *, predicate_type: str, created: str
) -> str:
    """Push a bundle as a referrer of ``digest`` and list it in the fallback index when the
    registry has no referrers API; returns the referrer manifest digest."""
    manifest, config, layer = layout.bundle_referrer(
        bundle, subject=subject_of(client, repo, digest), predicate_type=predicate_type, created=created
    )
    for blob in (config, layer):
        _ensure_blob(client, repo, blob.data, blob.digest)
    data = layout.encode(manifest)
    referrer = client.put_manifest(repo, layout.sha256_digest(data), data, layout.OCI_MANIFEST)
    if not client.referrers(repo, digest).from_api:
        _list_in_fallback(client, repo, digest, layout.referrer_entry(manifest, data))
    return referrer


def _list_in_fallback(client: RegistryClient, repo: str, digest: str, entry: dict[str, Any]) -> None:
    """Add ``entry`` to the fallback index of ``digest``, and see that it stays there.

    Every writer rewrites the index (read, add, put) and a registry without the referrers
    API offers no compare-and-swap, so runners attesting one digest at once each write an
    index that lacks the others' entries: of 20 at once, 5 stayed listed. So the index is
    read back once concurrent writers have had time to land theirs (a few times what this
    read-modify-write took, plus a random backoff doubling with each lost write), and written
    again until it holds this entry and every entry this writer saw in it before: a writer
    still at work puts back what a late writer's stale index dropped, its own or another's."""
    tag = layout.referrers_tag(digest)
    seen: dict[str, dict[str, Any]] = {}
    for attempt in range(LIST_ATTEMPTS + 1):
        started = time.monotonic()
        existing = _optional_manifest(client, repo, tag)
        listed = _entries(existing)
        if attempt and entry["digest"] in listed and seen.keys() <= listed.keys():
            return
        if attempt == LIST_ATTEMPTS:
            break
        dropped = [item for known, item in seen.items() if known not in listed]
        seen.update(listed)
        kept = (existing or {}).get("manifests") or []
        merged = {**(existing or {}), "manifests": [*kept, *dropped]}
        client.put_manifest(repo, tag, layout.encode(layout.add_referrer(merged, entry)), layout.OCI_INDEX)
        # at least a few times this read-modify-write (what another writer's takes), then a
        # random backoff that doubles with each lost write, so contending writers spread out
        settle = max(SETTLE_SECONDS, 4 * (time.monotonic() - started))
        time.sleep(settle + random.uniform(0, min(MAX_BACKOFF_SECONDS, settle * 2**attempt)))
    if entry["digest"] not in listed:
        raise RegistryError(
            f"oci://{client.host}/{repo}:{tag}: other writers replaced the referrers index "
            f"{LIST_ATTEMPTS} times without {entry['digest']}; the attestation is stored but not "
            "listed: attest again"
        )


def _entries(index: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The entries of a fallback index by digest."""
    return {
        str(item["digest"]): item
        for item in (index or {}).get("manifests") or []
        if isinstance(item, dict) and isinstance(item.get("digest"), str)
    }
