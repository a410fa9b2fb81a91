"""Helpers for the signing tests: push a small Flux-shaped artifact, copy manifests around.

Artifacts are pushed with the registry client directly, so the signing tests do not
depend on the push command.
"""

from __future__ import annotations

import json

from lockgate import registry
from lockgate.signing import attest, keys, layout, statement
from tests.world.registry import Registry


def client_for(world: Registry, repo: str) -> registry.RegistryClient:
    return registry.RegistryClient.for_reference(registry.parse(world.oci(repo)))


def push_artifact(
    world: Registry, repo: str, content: bytes = b"kind: ConfigMap\n", tag: str = "latest"
) -> str:
    """Push a one-layer artifact; returns ``oci://host/repo@sha256:...``."""
    client = client_for(world, repo)
    blobs = [
        (b"{}", "application/vnd.cncf.flux.config.v1+json"),
        (content, "application/vnd.cncf.flux.content.v1.tar+gzip"),
    ]
    for data, _ in blobs:
        digest = layout.sha256_digest(data)
        if not client.blob_exists(repo, digest):
            client.upload_blob(repo, data, digest=digest, size=len(data))
    manifest = {
        "schemaVersion": 2,
        "mediaType": layout.OCI_MANIFEST,
        "config": layout.descriptor(blobs[0][1], blobs[0][0]),
        "layers": [layout.descriptor(blobs[1][1], blobs[1][0])],
    }
    digest = client.put_manifest(repo, tag, json.dumps(manifest).encode(), layout.OCI_MANIFEST)
    return world.oci(repo, f"@{digest}")


def copy_manifest(
    world: Registry, repo: str, source_tag: str, target_tag: str, *, target_repo: str | None = None
) -> None:
    """Copy the manifest at ``source_tag`` (and its blobs) to ``target_tag``."""
    client = client_for(world, repo)
    fetched = client.get_manifest(repo, source_tag)
    destination = target_repo or repo
    doc = json.loads(fetched.content)
    for item in [doc.get("config"), *doc.get("layers", [])]:
        if item and destination != repo:
            data = client_blob(client, repo, item["digest"])
            client.upload_blob(destination, data, digest=item["digest"], size=len(data))
    client.put_manifest(destination, target_tag, fetched.content, fetched.media_type)


def client_blob(client: registry.RegistryClient, repo: str, digest: str) -> bytes:
    import io

    sink = io.BytesIO()
    client.download_blob(repo, digest, sink)
    return sink.getvalue()


def digest_of(reference: str) -> str:
    return reference.rsplit("@", 1)[1]


def key_bundle(digest: str, key: keys.PrivateKey) -> bytes:
    """A Sigstore bundle v0.3 signed with a cosign key, as ``cosign sign --key`` (v3) writes it:
    the statement for ``digest`` in a DSSE envelope, a public-key hint, no log entry.

    lockgate's key signatures use the legacy layout; it writes this shape only for attestations
    (``attest.key_bundle``), which builds it here too: the tests check that verification accepts
    what cosign v3 writes by default (cosign's own output is checked in test_signing_cosign).
    """
    return attest.key_bundle(statement.build(digest), key)
