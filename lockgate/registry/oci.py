"""OCI documents as typed values: descriptors, image manifests and image indexes.

Manifests are stored and addressed by their exact bytes, so ``to_bytes`` writes the field
order and compact form that go-containerregistry (and therefore Flux) writes; parsing
checks the fields lockgate relies on and names the one that is wrong.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate import boundedjson
from lockgate.errors import ExitCode, ResolveError
from lockgate.registry.reference import DIGEST_PATTERN

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_EMPTY = "application/vnd.oci.empty.v1+json"
MANIFEST_TYPES = (OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST)


#: the largest manifest registries must accept (the distribution spec's 4 MiB); larger is refused
MAX_DOCUMENT_BYTES = 4 << 20


def read(data: bytes, where: str, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> Any:
    """A registry's JSON document, within the parsing bounds (``lockgate.bounded``): a
    registry answering a document too large or too deep is refused, naming ``where``."""
    return boundedjson.json_value(data, where, max_bytes=max_bytes, exit_code=ExitCode.RESOLVE)


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def referrers_tag(digest: str) -> str:
    """``sha256-<hex>``: the OCI 1.1 referrers tag-schema fallback tag (at most 128 characters)."""
    return digest.replace(":", "-", 1)[:128]


#: cosign's legacy signature, attestation and SBOM tags (``sha256-<hex>.sig`` ...)
COSIGN_TAG_SUFFIXES = (".sig", ".att", ".sbom")


def is_artifact_tag(tag: str) -> bool:
    """A tag that names a version of the artifact: not one of cosign's ``.sig``/``.att``/``.sbom``
    tags nor a ``sha256-<hex>`` referrers fallback tag."""
    return not (tag.endswith(COSIGN_TAG_SUFFIXES) or tag.startswith("sha256-"))


@dataclass(frozen=True)
class Descriptor:
    media_type: str
    digest: str
    size: int
    annotations: Mapping[str, str] = field(default_factory=dict)
    artifact_type: str | None = None

    def to_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {"mediaType": self.media_type, "size": self.size, "digest": self.digest}
        if self.annotations:
            value["annotations"] = dict(sorted(self.annotations.items()))
        if self.artifact_type:
            value["artifactType"] = self.artifact_type
        return value

    @classmethod
    def from_json(cls, value: Any, where: str) -> Descriptor:
        if not isinstance(value, dict):
            raise ResolveError(f"{where} is not a descriptor object")
        media_type, digest, size = value.get("mediaType"), value.get("digest"), value.get("size")
        if not isinstance(media_type, str):
            raise ResolveError(f"{where}.mediaType is missing")
        if not isinstance(digest, str) or not DIGEST_PATTERN.match(digest):
            raise ResolveError(f"{where}.digest is missing or not a sha256 digest")
        if not isinstance(size, int) or size < 0:
            raise ResolveError(f"{where}.size is missing or negative")
        annotations = value.get("annotations") or {}
        artifact_type = value.get("artifactType")
        return cls(
            media_type,
            digest,
            size,
            dict(annotations),
            artifact_type if isinstance(artifact_type, str) else None,
        )


class NotAnImageManifest(ResolveError):
    """The reference names an index (or another kind of manifest), not one image manifest."""

    def __init__(self, where: str, media_type: str, value: dict[str, Any]) -> None:
        super().__init__(f"{where} is a {media_type}, not an image manifest")
        self.media_type, self.value = media_type, value


@dataclass(frozen=True)
class ImageManifest:
    """An OCI image manifest (also read from Docker v2 manifests)."""

    config: Descriptor
    layers: tuple[Descriptor, ...]
    annotations: Mapping[str, str] = field(default_factory=dict)
    media_type: str = OCI_MANIFEST
    artifact_type: str | None = None
    subject: Descriptor | None = None

    def to_bytes(self) -> bytes:
        value: dict[str, Any] = {"schemaVersion": 2, "mediaType": self.media_type}
        if self.artifact_type:
            value["artifactType"] = self.artifact_type
        value["config"] = self.config.to_json()
        value["layers"] = [layer.to_json() for layer in self.layers]
        if self.subject is not None:
            value["subject"] = self.subject.to_json()
        if self.annotations:
            value["annotations"] = dict(sorted(self.annotations.items()))
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()

    @classmethod
    def from_bytes(cls, data: bytes, *, where: str) -> ImageManifest:
        try:
            value = read(data, f"manifest of {where}")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ResolveError(f"manifest of {where} is not valid JSON") from exc
        if not isinstance(value, dict):
            raise ResolveError(f"manifest of {where} is not a JSON object")
        media_type = value.get("mediaType", OCI_MANIFEST)
        if media_type not in (OCI_MANIFEST, DOCKER_MANIFEST):
            raise NotAnImageManifest(where, str(media_type), value)
        layers = value.get("layers")
        if not isinstance(layers, list):
            raise ResolveError(f"manifest of {where}: 'layers' is missing")
        subject = value.get("subject")
        return cls(
            config=Descriptor.from_json(value.get("config"), f"manifest of {where}: config"),
            layers=tuple(
                Descriptor.from_json(layer, f"manifest of {where}: layers[{i}]")
                for i, layer in enumerate(layers)
            ),
            annotations=dict(value.get("annotations") or {}),
            media_type=media_type,
            artifact_type=value.get("artifactType"),
            subject=None
            if subject is None
            else Descriptor.from_json(subject, f"manifest of {where}: subject"),
        )


@dataclass(frozen=True)
class ImageIndex:
    """An OCI image index (used for the referrers tag-schema fallback)."""

    manifests: tuple[Descriptor, ...]
    annotations: Mapping[str, str] = field(default_factory=dict)
    artifact_type: str | None = None

    def to_bytes(self) -> bytes:
        value: dict[str, Any] = {"schemaVersion": 2, "mediaType": OCI_INDEX}
        if self.artifact_type:
            value["artifactType"] = self.artifact_type
        value["manifests"] = [m.to_json() for m in self.manifests]
        if self.annotations:
            value["annotations"] = dict(sorted(self.annotations.items()))
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()

    @classmethod
    def from_bytes(cls, data: bytes, *, where: str) -> ImageIndex:
        try:
            value = read(data, f"index of {where}")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ResolveError(f"index of {where} is not valid JSON") from exc
        if not isinstance(value, dict) or not isinstance(value.get("manifests"), list):
            raise ResolveError(f"{where} is not an image index ('manifests' is missing)")
        return cls(
            manifests=tuple(
                Descriptor.from_json(m, f"index of {where}: manifests[{i}]")
                for i, m in enumerate(value["manifests"])
            ),
            annotations=dict(value.get("annotations") or {}),
            artifact_type=value.get("artifactType"),
        )


@dataclass(frozen=True)
class Referrers:
    """The manifests that refer to one digest (OCI 1.1), and where the list came from.

    ``from_api`` is True when the registry serves ``GET /v2/<name>/referrers/<digest>``;
    otherwise the list is the tag-schema fallback index (``referrers_tag``), which writers
    must keep up to date themselves. Entries that are not valid descriptors are left out:
    another tool's malformed entry must not hide a valid one.
    """

    manifests: tuple[Descriptor, ...] = ()
    from_api: bool = False

    def of_type(self, artifact_type: str) -> list[Descriptor]:
        return [m for m in self.manifests if m.artifact_type == artifact_type]

    @classmethod
    def from_bytes(cls, data: bytes, *, from_api: bool, where: str) -> Referrers:
        try:
            value = read(data, f"referrers of {where}")
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ResolveError(f"referrers of {where} are not valid JSON") from None
        entries = value.get("manifests") if isinstance(value, dict) else None
        if not isinstance(entries, list):
            raise ResolveError(f"referrers of {where}: 'manifests' is missing")
        found = []
        for i, entry in enumerate(entries):
            try:
                found.append(Descriptor.from_json(entry, f"referrers of {where}: manifests[{i}]"))
            except ResolveError:
                continue
        return cls(tuple(found), from_api)
