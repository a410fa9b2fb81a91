"""The Flux artifact contract: media types, the manifest, and which layer a reader takes.

An artifact is an OCI image manifest with config ``application/vnd.cncf.flux.config.v1+json``
and one layer ``application/vnd.cncf.flux.content.v1.tar+gzip``, annotated with
created/source/revision (and any custom ``-a key=value``). No artifactType, no subject,
no layer annotations: exactly what ``flux push artifact`` writes and OCIRepository reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lockgate.errors import ResolveError, UsageError
from lockgate.registry.oci import OCI_MANIFEST, Descriptor, ImageManifest, sha256_digest

FLUX_CONFIG = "application/vnd.cncf.flux.config.v1+json"
FLUX_CONTENT = "application/vnd.cncf.flux.content.v1.tar+gzip"
#: other tar+gzip layer types Flux's layerSelector users commonly pick
TAR_GZIP_TYPES = (
    FLUX_CONTENT,
    "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.docker.image.rootfs.diff.tar.gzip",
)
#: the config blob; source-controller never reads it, so it is the empty JSON object
CONFIG_BLOB = b"{}"


@dataclass(frozen=True)
class Built:
    """A manifest ready to push, with the config blob it refers to."""

    manifest: ImageManifest
    content: bytes
    digest: str
    config_blob: bytes


def parse_annotations(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``-a key=value`` flags to a dict; a flag without ``=`` or with an empty key is refused."""
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"annotation {pair!r}: expected KEY=VALUE")
        result[key.strip()] = value
    return result


def build(layer_digest: str, layer_size: int, annotations: Mapping[str, str]) -> Built:
    """The Flux-format manifest for one content layer."""
    config = Descriptor(FLUX_CONFIG, sha256_digest(CONFIG_BLOB), len(CONFIG_BLOB))
    manifest = ImageManifest(
        config=config,
        layers=(Descriptor(FLUX_CONTENT, layer_digest, layer_size),),
        annotations=dict(annotations),
        media_type=OCI_MANIFEST,
    )
    content = manifest.to_bytes()
    return Built(manifest=manifest, content=content, digest=sha256_digest(content), config_blob=CONFIG_BLOB)


class NotFluxArtifact(ResolveError):
    """The artifact has no tar+gzip layer to take by default; ``media_type`` is its first."""

    def __init__(self, where: str, media_type: str) -> None:
        super().__init__(
            f"{where}: layer media type {media_type} is not a tar+gzip layer; "
            "this is not a Flux artifact (pass --media-type to pick another layer)"
        )
        self.where, self.media_type = where, media_type


def select_layer(manifest: ImageManifest, *, media_type: str | None = None, where: str) -> Descriptor:
    """Flux's layerSelector: the first layer of ``media_type``; without one, Flux's type, else the first."""
    if not manifest.layers:
        raise ResolveError(f"{where} has no layers; it is not an artifact")
    if media_type is not None:
        for layer in manifest.layers:
            if layer.media_type == media_type:
                return layer
        found = ", ".join(sorted({layer.media_type for layer in manifest.layers}))
        raise ResolveError(f"{where} has no layer of media type {media_type} (it has {found})")
    for layer in manifest.layers:
        if layer.media_type == FLUX_CONTENT:
            return layer
    first = manifest.layers[0]
    if first.media_type not in TAR_GZIP_TYPES:
        raise NotFluxArtifact(where, first.media_type)
    return first
