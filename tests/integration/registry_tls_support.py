"""The TLS world of the registry-TLS and proxy tests: a CA made here, a registry serving https
that requires client certificates signed by that CA, and an authenticating forward proxy.

Module-scoped fixtures share one of each across a test file (a registry starts in about a
second); each test uses its own repository.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lockgate import registry
from lockgate.artifact import manifest, pack
from tests.world.pki import CertificateAuthority, KeyPair
from tests.world.proxy import Proxy, start_proxy
from tests.world.registry import Registry, ServedTLS, start_registry

if TYPE_CHECKING:
    from lockgate.registry.connection import TransportOptions


@dataclass(frozen=True)
class TLSWorld:
    registry: Registry
    ca: KeyPair
    #: signed by ``ca``: the registry accepts it
    client: KeyPair
    #: signed by another CA: the registry refuses it
    stranger: KeyPair

    def options(self) -> TransportOptions:
        from lockgate.registry.connection import TransportOptions  # collected on main too: lazily

        return TransportOptions.from_files(
            ca_file=str(self.ca.cert), cert_file=str(self.client.cert), key_file=str(self.client.key)
        )

    def tls_flags(self) -> list[str]:
        client = ["--cert-file", str(self.client.cert), "--key-file", str(self.client.key)]
        return ["--ca-file", str(self.ca.cert), *client]


def start_tls_world(directory: Path) -> TLSWorld:
    directory.mkdir(parents=True, exist_ok=True)
    ca = CertificateAuthority.create(directory, name="lockgate-test-registry-ca")
    serving = ca.issue(directory / "registry", "registry", server=True, hosts=("127.0.0.1", "localhost"))
    client = ca.issue(directory / "client", "lockgate-client")
    (directory / "other").mkdir()
    other = CertificateAuthority.create(directory / "other", name="someone-else")
    stranger = other.issue(directory / "stranger", "stranger")
    served = ServedTLS(
        certificate=serving.cert,
        key=serving.key,
        clientcas=(ca.pair.cert,),
        ca=ca.pair.cert,
        client=(client.cert, client.key),
    )
    reg = start_registry(directory, name="tls-registry", tls=served)
    return TLSWorld(registry=reg, ca=ca.pair, client=client, stranger=stranger)


# in the world's directory, not pytest's tmp_path: pytest deletes old base directories when
# another session starts, and tinyproxy would go on logging into a deleted file
@pytest.fixture(scope="module")
def tls_world(world_dir: Path) -> Iterator[TLSWorld]:
    world = start_tls_world(Path(tempfile.mkdtemp(prefix="tls-", dir=world_dir)))
    yield world
    world.registry.stop()


@pytest.fixture(scope="module")
def proxy(world_dir: Path) -> Iterator[Proxy]:
    running = start_proxy(Path(tempfile.mkdtemp(prefix="proxy-", dir=world_dir)))
    yield running
    running.stop()


def push_files(world: TLSWorld, repo: str, files: dict[str, str], tag: str = "v1") -> str:
    """Pack ``files`` as a Flux artifact and push it over mTLS; returns ``oci://host/repo:tag@digest``."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "src"
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        layer = pack.pack(root, Path(tmp) / "layer.tgz")
        built = manifest.build(
            layer.digest, layer.size, {"org.opencontainers.image.revision": f"{tag}@sha1:0"}
        )
        ref = registry.parse(world.registry.oci(repo, f":{tag}"))
        client = registry.RegistryClient.for_reference(ref, options=world.options())
        config = built.config_blob
        client.upload_blob(repo, config, digest=built.manifest.config.digest, size=len(config))
        with open(layer.path, "rb") as stream:
            client.upload_blob(repo, stream, digest=layer.digest, size=layer.size)
        digest = client.put_manifest(repo, tag, built.content, built.manifest.media_type)
    return world.registry.oci(repo, f":{tag}@{digest}")
