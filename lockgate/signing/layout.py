"""Where signatures live in a registry, as pure functions from documents to documents.

Two layouts, both cosign's:

* legacy: an image manifest at tag ``sha256-<hex>.sig`` with one simple-signing layer per
  signature; signing again appends a layer (``add_signature_layer``);
* bundle: a referrer manifest whose ``subject`` is the signed manifest, listed in the
  OCI 1.1 referrers tag-schema fallback index at tag ``sha256-<hex>`` when the registry
  has no referrers API; adding a referrer keeps every other entry (``add_referrer``).

Descriptors are written with keys in the order go-containerregistry writes them, so our
documents and cosign's look alike byte for byte where it is cheap to do so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# the OCI names are the registry's; re-exported so a layout reads in one vocabulary
from lockgate.registry.oci import OCI_EMPTY as OCI_EMPTY
from lockgate.registry.oci import OCI_INDEX as OCI_INDEX
from lockgate.registry.oci import OCI_MANIFEST as OCI_MANIFEST
from lockgate.registry.oci import referrers_tag as referrers_tag
from lockgate.registry.oci import sha256_digest as sha256_digest
from lockgate.signing import simplesigning

OCI_IMAGE_CONFIG = "application/vnd.oci.image.config.v1+json"
EMPTY_BLOB = b"{}"
BUNDLE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
CERTIFICATE_ANNOTATION = "dev.sigstore.cosign/certificate"
BUNDLE_CONTENT_ANNOTATION = "dev.sigstore.bundle.content"
PREDICATE_TYPE_ANNOTATION = "dev.sigstore.bundle.predicateType"
CREATED_ANNOTATION = "org.opencontainers.image.created"

Json = dict[str, Any]


@dataclass(frozen=True)
class Blob:
    """Bytes to upload with their digest; a manifest refers to them by descriptor."""

    data: bytes
    media_type: str

    @property
    def digest(self) -> str:
        return sha256_digest(self.data)

    def descriptor(self, **extra: Any) -> Json:
        return descriptor(self.media_type, self.data, **extra)


def descriptor(media_type: str, data: bytes, **extra: Any) -> Json:
    """A descriptor in go-containerregistry's key order (mediaType, size, digest, ...)."""
    desc: Json = {"mediaType": media_type, "size": len(data), "digest": sha256_digest(data)}
    desc.update({k: v for k, v in extra.items() if v})
    return desc


def signature_tag(digest: str) -> str:
    """``sha256-<hex>.sig``: cosign's legacy signature tag for a manifest digest."""
    return digest.replace(":", "-", 1) + ".sig"


def encode(document: Json) -> bytes:
    """Manifest bytes as Go writes them: compact, keys in insertion order."""
    return json.dumps(document, separators=(",", ":")).encode()


def signature_layer(payload: bytes, signature_b64: str, *, annotations: dict[str, str] | None = None) -> Json:
    notes = {SIGNATURE_ANNOTATION: signature_b64, **(annotations or {})}
    return descriptor(simplesigning.MEDIA_TYPE, payload, annotations=notes)


def add_signature_layer(existing: Json | None, layer: Json) -> tuple[Json, Blob]:
    """The ``.sig`` manifest with ``layer`` appended (kept once) and its config blob.

    Existing layers are kept as they are, whatever their media type: they may be
    signatures by other keys or other tools.
    """
    layers = [dict(item) for item in (existing or {}).get("layers", []) if isinstance(item, dict)]
    if not any(_same_signature(item, layer) for item in layers):
        layers.append(layer)
    config = _signature_config([str(item.get("digest", "")) for item in layers])
    manifest: Json = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": config.descriptor(),
        "layers": layers,
    }
    return manifest, config


def _same_signature(a: Json, b: Json) -> bool:
    notes_a, notes_b = a.get("annotations") or {}, b.get("annotations") or {}
    return bool(
        a.get("digest") == b.get("digest")
        and notes_a.get(SIGNATURE_ANNOTATION) == notes_b.get(SIGNATURE_ANNOTATION)
    )


def _signature_config(diff_ids: list[str]) -> Blob:
    # what go-containerregistry's mutate.Append on empty.Image writes for cosign
    config = {
        "architecture": "",
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"} for _ in diff_ids],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "config": {},
    }
    return Blob(encode(config), OCI_IMAGE_CONFIG)


def bundle_referrer(
    bundle: bytes, *, subject: Json, predicate_type: str, created: str
) -> tuple[Json, Blob, Blob]:
    """The referrer manifest cosign v3 writes for a Sigstore bundle, its config and its layer."""
    config = Blob(EMPTY_BLOB, OCI_EMPTY)
    layer = Blob(bundle, BUNDLE_MEDIA_TYPE)
    manifest: Json = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": config.descriptor(artifactType=BUNDLE_MEDIA_TYPE),
        "layers": [layer.descriptor()],
        "annotations": {
            CREATED_ANNOTATION: created,
            BUNDLE_CONTENT_ANNOTATION: "dsse-envelope",
            PREDICATE_TYPE_ANNOTATION: predicate_type,
        },
        "subject": subject,
        "artifactType": BUNDLE_MEDIA_TYPE,
    }
    return manifest, config, layer


def referrer_entry(manifest: Json, data: bytes) -> Json:
    """The descriptor of a referrer as the fallback index lists it (artifactType, annotations)."""
    config = manifest.get("config") or {}
    artifact_type = manifest.get("artifactType") or config.get("mediaType")
    return descriptor(
        str(manifest.get("mediaType") or OCI_MANIFEST),
        data,
        annotations=manifest.get("annotations"),
        artifactType=artifact_type,
    )


def add_referrer(existing: Json | None, entry: Json) -> Json:
    """The fallback index with ``entry`` added once; every other entry is kept as it was."""
    manifests = [dict(item) for item in (existing or {}).get("manifests", []) if isinstance(item, dict)]
    if not any(item.get("digest") == entry["digest"] for item in manifests):
        manifests.append(entry)
    index: Json = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests}
    if existing and existing.get("annotations"):
        index["annotations"] = existing["annotations"]
    return index
