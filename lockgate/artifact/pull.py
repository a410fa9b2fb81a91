"""Pull an artifact: resolve the tag once, fetch by digest, verify every blob, extract safely.

One path for ``lockgate pull``, ``inspect`` and ``diff`` on the CI side and for the runner,
which passes the digest its signature check verified so the tag is never resolved again.
The layer is downloaded to a temporary file (its digest checked while streaming) and only
then extracted; a tampered blob or an unsafe entry leaves nothing in the output directory.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockgate import progress, registry
from lockgate.artifact import extract, manifest
from lockgate.errors import VerificationError
from lockgate.registry.oci import Descriptor, ImageManifest


@dataclass(frozen=True)
class Resolved:
    """A reference pinned to its manifest digest, with the parsed manifest."""

    reference: registry.Reference
    digest: str
    manifest: ImageManifest
    content: bytes


@dataclass(frozen=True)
class PullResult:
    resolved: Resolved
    layer: Descriptor
    output: Path
    files: int
    total_bytes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "url": f"oci://{self.resolved.reference.name}@{self.resolved.digest}",
            "digest": self.resolved.digest,
            "layer": {
                "mediaType": self.layer.media_type,
                "digest": self.layer.digest,
                "size": self.layer.size,
            },
            "annotations": dict(self.resolved.manifest.annotations),
            "output": str(self.output),
            "files": self.files,
            "bytes": self.total_bytes,
        }


def resolve(
    client: registry.RegistryClient, ref: registry.Reference, *, digest: str | None = None
) -> Resolved:
    """Pin ``ref`` to its manifest digest (``digest`` when already known) and read the manifest."""
    digest = digest or client.resolve(ref)
    fetched = client.get_manifest(ref.repository, digest)
    parsed = ImageManifest.from_bytes(fetched.content, where=str(ref))
    return Resolved(reference=ref, digest=digest, manifest=parsed, content=fetched.content)


def download_layer(
    client: registry.RegistryClient, resolved: Resolved, dest: Path, *, media_type: str | None = None
) -> Descriptor:
    """Select the layer and stream it into ``dest``, verifying digest and size."""
    layer = manifest.select_layer(resolved.manifest, media_type=media_type, where=str(resolved.reference))
    task = progress.current().task("downloading", total=layer.size)
    with open(dest, "wb") as out:
        try:
            size = client.download_blob(
                resolved.reference.repository,
                layer.digest,
                progress.Writing.of(out, task),
                max_size=layer.size,
            )
        finally:
            task.finish()
    if size != layer.size:
        raise VerificationError(
            f"{resolved.reference}: layer {layer.digest} is {size} bytes, the manifest says {layer.size}"
        )
    return layer


def pull(
    client: registry.RegistryClient,
    ref: registry.Reference,
    output: Path,
    *,
    media_type: str | None = None,
    limits: extract.Limits | None = None,
    digest: str | None = None,
) -> PullResult:
    """Extract the artifact ``ref`` names (or exactly ``digest``) into ``output``, which must not exist."""
    resolved = resolve(client, ref, digest=digest)
    with tempfile.TemporaryDirectory(prefix="lockgate-pull-") as tmp:
        layer_file = Path(tmp) / "layer.tgz"
        layer = download_layer(client, resolved, layer_file, media_type=media_type)
        with open(layer_file, "rb") as stream:
            done = extract.extract(stream, output, limits)
    return PullResult(
        resolved=resolved, layer=layer, output=output, files=done.files, total_bytes=done.total_bytes
    )
