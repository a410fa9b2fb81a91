"""Registry requests are counted per lower-case verb, each attempt and each token fetch, as sent."""

from __future__ import annotations

import json
import threading

from lockgate import registry
from lockgate.registry.oci import sha256_digest
from tests.world.registry import Registry


def _client(reg: Registry, repo: str) -> registry.RegistryClient:
    creds = registry.Credentials(reg.username, reg.password) if reg.username and reg.password else None
    return registry.RegistryClient.for_reference(registry.parse(reg.oci(repo, ":v1")), credentials=creds)


def test_counts_every_request_by_verb(registry: Registry, unique: str) -> None:
    client = _client(registry, unique)
    assert client.counts == {}
    assert client.head_manifest(unique, "v1") is None
    blob = b"{}"
    client.upload_blob(unique, blob, digest=sha256_digest(blob), size=len(blob))
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.empty.v1+json",
                "digest": sha256_digest(blob),
                "size": 2,
            },
            "layers": [],
        }
    ).encode()
    client.put_manifest(unique, "v1", manifest, "application/vnd.oci.image.manifest.v1+json")
    assert client.get_manifest(unique, "v1").content == manifest
    assert client.counts == {"head": 1, "post": 1, "put": 2, "get": 1}


def test_counts_are_exact_across_threads(registry: Registry, unique: str) -> None:
    client = _client(registry, unique)
    threads = [
        threading.Thread(target=lambda: [client.head_manifest(unique, "missing") for _ in range(10)])
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert client.counts == {"head": 80}


def test_the_basic_challenge_round_trip_is_counted(auth_registry: Registry, unique: str) -> None:
    client = _client(auth_registry, unique)
    assert client.head_manifest(unique, "v1") is None
    # the first HEAD answered 401 with a Basic challenge, the second carried the credentials
    assert client.counts == {"head": 2}
