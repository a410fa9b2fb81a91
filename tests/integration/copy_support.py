"""Helpers for the copy tests: a real Flux artifact, signed and attested, and a layout's reachable set.

The artifact is pushed with the registry client (a tar+gzip layer holding one ConfigMap),
signed with a key in both of cosign's layouts and attested healthy with another key (referrers
listed in the fallback index, the world's registry having no referrers API).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from lockgate.signing import attest, keys, sign
from lockgate.signing.policy import KeyPolicy
from tests.integration.signing_support import push_artifact
from tests.world.registry import Registry

CONFIGMAP = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mirrored\ndata:\n  a: b\n"


def flux_layer(content: bytes = CONFIGMAP) -> bytes:
    """A tar+gzip layer with ``configmap.yaml``, reproducible (fixed mtime)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("configmap.yaml")
        info.size, info.mtime, info.mode = len(content), 0, 0o644
        tar.addfile(info, io.BytesIO(content))
    return raw.getvalue()


@dataclass(frozen=True)
class Signed:
    url: str  # oci://host/repo@sha256:...
    digest: str
    signer: keys.PrivateKey
    attester: keys.PrivateKey
    public: Path

    @property
    def repository(self) -> str:
        """``host/repo``: what the key signature's claim names."""
        return self.url.removeprefix("oci://").split("@", 1)[0]

    @property
    def policy(self) -> KeyPolicy:
        return KeyPolicy(self.signer.public_key(), "signer.pub")

    @property
    def attestation_policy(self) -> KeyPolicy:
        return KeyPolicy(self.attester.public_key(), "attester.pub")


def new_key() -> keys.PrivateKey:
    return keys.load_private_key(keys.generate_key_pair(b"").private_pem, b"")


def signed_artifact(
    world: Registry, repo: str, tmp_path: Path, *, tag: str = "1.0.0", attested: bool = True
) -> Signed:
    """Push, sign (key: a legacy ``.sig`` layer and a key bundle referrer) and attest healthy
    (another key, a referrer) one artifact; ``attested=False`` leaves out the attestation."""
    content = CONFIGMAP + f'  version: "{tag}"\n'.encode()
    url = push_artifact(world, repo, flux_layer(content), tag=tag)
    signer, attester = new_key(), new_key()
    sign.sign_with_key(url, signer)
    predicate = attest.health_predicate(
        cluster="staging",
        sync="app",
        revision=url,
        healthy=True,
        at=dt.datetime.now(dt.UTC) - dt.timedelta(hours=2),
        objects={"total": 1, "current": 1},
    )
    if attested:
        attest.attest_with_key(url, attester, predicate_type=attest.HEALTHY, predicate=predicate)
    public = tmp_path / f"signer-{tag}.pub"
    public.write_bytes(keys.public_key_pem(signer.public_key()))
    return Signed(url, url.rsplit("@", 1)[1], signer, attester, public)


def layout_problems(root: Path) -> list[str]:
    """What ``index.json`` reaches (manifests, their blobs, an index's manifests) that is missing."""
    missing: list[str] = []

    def blob(digest: str) -> Path:
        return root / "blobs" / "sha256" / digest.split(":", 1)[1]

    def visit(digest: str) -> None:
        path = blob(digest)
        if not path.is_file():
            missing.append(digest)
            return
        doc = json.loads(path.read_bytes())
        for child in doc.get("manifests") or []:
            visit(child["digest"])
        for item in [doc.get("config"), *(doc.get("layers") or [])]:
            if item and not blob(item["digest"]).is_file():
                missing.append(item["digest"])

    for entry in json.loads((root / "index.json").read_bytes())["manifests"]:
        visit(entry["digest"])
    return missing


def lockgate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGSTORE_", "LOCKGATE_", "COSIGN_"))}
    return subprocess.run(
        [sys.executable, "-m", "lockgate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
