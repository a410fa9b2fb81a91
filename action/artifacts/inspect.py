"""Read-only views of a repository: ``inspect`` one artifact, ``list`` its tags, and ``tag`` it.

``list`` hides what is not an artifact version: cosign's ``.sig``/``.att``/``.sbom`` tags
and the ``sha256-<hex>`` referrers fallback tags (shown with ``--all``).
"""

from __future__ import annotations

import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockgate import registry
from lockgate.artifact import gz, manifest
from lockgate.artifact import pull as pull_mod
from lockgate.errors import UsageError, VerificationError
from lockgate.redact import scrub
from lockgate.registry import oci
from lockgate.registry.oci import Descriptor, NotAnImageManifest


@dataclass(frozen=True)
class FileInfo:
    name: str
    size: int
    mode: int
    is_dir: bool


@dataclass(frozen=True)
class Inspection:
    resolved: pull_mod.Resolved
    #: the layer whose files are listed; None for an OCI artifact that is not Flux's
    layer: Descriptor | None
    files: tuple[FileInfo, ...]
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        m = self.resolved.manifest
        return {
            "url": f"oci://{self.resolved.reference.name}@{self.resolved.digest}",
            "digest": self.resolved.digest,
            "mediaType": m.media_type,
            "config": m.config.to_json(),
            "layers": [layer.to_json() for layer in m.layers],
            # another tool may have written a URL with credentials (e.g. a source with a token)
            "annotations": {key: scrub(value) for key, value in m.annotations.items()},
            "files": [
                {"name": f.name, "size": f.size, "mode": f"{f.mode:04o}", "dir": f.is_dir} for f in self.files
            ],
            "fluxArtifact": self.layer is not None,
            **({"note": self.note} if self.note else {}),
        }


@dataclass(frozen=True)
class IndexInspection:
    """An image index (a multi-platform image, say): its entries, each inspectable by digest."""

    url: str
    digest: str
    media_type: str
    manifests: tuple[dict[str, Any], ...]
    annotations: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "digest": self.digest,
            "mediaType": self.media_type,
            "manifests": list(self.manifests),
            "annotations": {key: scrub(value) for key, value in self.annotations.items()},
            "fluxArtifact": False,
            "note": "an index, not one artifact: inspect one of its manifests by digest",
        }


def _index(ref: registry.Reference, digest: str, found: NotAnImageManifest) -> IndexInspection:
    entries = found.value.get("manifests")
    manifests = tuple(
        {k: e[k] for k in ("mediaType", "digest", "size", "platform", "artifactType") if k in e}
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, dict)
    )
    notes = found.value.get("annotations")
    annotations = {str(k): str(v) for k, v in notes.items()} if isinstance(notes, dict) else {}
    return IndexInspection(f"oci://{ref.name}@{digest}", digest, found.media_type, manifests, annotations)


def inspect(
    client: registry.RegistryClient, ref: registry.Reference, *, media_type: str | None = None
) -> Inspection | IndexInspection:
    digest = client.resolve(ref)
    try:
        resolved = pull_mod.resolve(client, ref, digest=digest)
    except NotAnImageManifest as found:
        return _index(ref, digest, found)
    if media_type is None:
        try:
            manifest.select_layer(resolved.manifest, where=str(ref))
        except manifest.NotFluxArtifact as exc:
            # any OCI artifact can be looked at: its manifest and layers, without files
            note = f"not a Flux artifact: no tar+gzip layer (the first is {exc.media_type}); files not listed"
            return Inspection(resolved=resolved, layer=None, files=(), note=note)
    with tempfile.TemporaryDirectory(prefix="lockgate-inspect-") as tmp:
        layer_file = Path(tmp) / "layer.tgz"
        layer = pull_mod.download_layer(client, resolved, layer_file, media_type=media_type)
        files: list[FileInfo] = []
        try:
            with (
                open(layer_file, "rb") as raw,
                gz.reader(raw) as plain,
                tarfile.open(fileobj=plain, mode="r|") as tar,
            ):
                for member in tar:
                    files.append(FileInfo(member.name, member.size, member.mode, member.isdir()))
        except gz.ERRORS as exc:
            raise VerificationError(
                f"{ref}: layer {layer.digest} is not a valid tar+gzip archive ({exc})"
            ) from None
    return Inspection(resolved=resolved, layer=layer, files=tuple(files))


def list_tags(
    client: registry.RegistryClient, ref: registry.Reference, *, show_all: bool = False, page_size: int = 1000
) -> list[str]:
    if page_size < 1:
        raise UsageError("--page-size must be at least 1")
    tags = client.list_tags(ref.repository, page_size=page_size)
    return sorted(t for t in tags if show_all or oci.is_artifact_tag(t))


def tag(client: registry.RegistryClient, ref: registry.Reference, tags: tuple[str, ...]) -> str:
    """Point each of ``tags`` at the manifest ``ref`` resolves to; returns its digest."""
    if not tags:
        raise UsageError("give at least one new tag: lockgate tag oci://REG/REPO:TAG NEW_TAG...")
    for new in tags:
        ref.with_tag(new)
    digest = client.resolve(ref)
    fetched = client.get_manifest(ref.repository, digest)
    for new in tags:
        if client.head_manifest(ref.repository, new) != digest:
            client.put_manifest(ref.repository, new, fetched.content, fetched.media_type)
    return digest
