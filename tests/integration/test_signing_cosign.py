"""Interop with the real cosign CLI (pinned in tests/world/pins.py, built from the Go module proxy).

Both directions, both layouts: cosign accepts our key signatures; we accept cosign's key
signatures in the legacy ``.sig`` layout and in the cosign v3 bundle layout (a referrer,
found through the tag-schema fallback index on Distribution 2.8); key files load both ways.
No transparency log runs here, so cosign signs with ``--tlog-upload=false`` and verifies
with ``--insecure-ignore-tlog=true``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lockgate.errors import VerificationError
from lockgate.signing import keys, layout, sign, verify
from lockgate.signing.policy import KeyPolicy
from tests.integration.signing_support import client_for, digest_of, key_bundle, push_artifact
from tests.world.binaries import binary
from tests.world.registry import Registry

PASSWORD = "interop-pw"


def cosign(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGSTORE_", "ACTIONS_ID_TOKEN"))}
    env.update(
        {
            "COSIGN_PASSWORD": PASSWORD,
            "TUF_ROOT": str(cwd / "tuf"),
            "HOME": str(cwd),
            "COSIGN_EXPERIMENTAL": "0",
        }
    )
    return subprocess.run(
        [str(binary("cosign")), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def registry_ref(reference: str) -> str:
    return reference.removeprefix("oci://")


def our_key_pair(tmp_path: Path) -> tuple[keys.PrivateKey, Path, Path]:
    pair = keys.generate_key_pair(PASSWORD.encode())
    private, public = tmp_path / "ours.key", tmp_path / "ours.pub"
    private.write_bytes(pair.private_pem)
    public.write_bytes(pair.public_pem)
    return keys.load_private_key(pair.private_pem, PASSWORD.encode()), private, public


def cosign_key_pair(tmp_path: Path) -> tuple[Path, Path]:
    result = cosign("generate-key-pair", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return tmp_path / "cosign.key", tmp_path / "cosign.pub"


def cosign_verify(ref: str, public: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return cosign(
        "verify",
        "--key",
        str(public),
        "--insecure-ignore-tlog=true",
        "--allow-http-registry",
        registry_ref(ref),
        cwd=cwd,
    )


def cosign_sign(ref: str, private: Path, cwd: Path, *extra: str) -> None:
    result = cosign(
        "sign",
        "--key",
        str(private),
        "--tlog-upload=false",
        "--use-signing-config=false",
        "--allow-http-registry",
        "--yes",
        *extra,
        registry_ref(ref),
        cwd=cwd,
    )
    assert result.returncode == 0, result.stderr


def test_cosign_verifies_our_key_signature(registry: Registry, unique: str, tmp_path: Path) -> None:
    key, _, public = our_key_pair(tmp_path)
    ref = push_artifact(registry, unique)
    sign.sign_with_key(ref, key)
    accepted = cosign_verify(ref, public, tmp_path)
    assert accepted.returncode == 0, accepted.stderr
    assert digest_of(ref) in accepted.stdout

    _, other_public = cosign_key_pair(tmp_path)
    refused = cosign_verify(ref, other_public, tmp_path)
    assert refused.returncode != 0


def test_cosign_verifies_after_a_second_signature_is_added(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    key, _, public = our_key_pair(tmp_path)
    ref = push_artifact(registry, unique)
    sign.sign_with_key(ref, keys.load_private_key(keys.generate_key_pair(b"").private_pem, b""))
    sign.sign_with_key(ref, key)
    result = cosign_verify(ref, public, tmp_path)
    assert result.returncode == 0, result.stderr


def test_we_verify_cosign_legacy_signatures(registry: Registry, unique: str, tmp_path: Path) -> None:
    private, public = cosign_key_pair(tmp_path)
    ref = push_artifact(registry, unique)
    cosign_sign(ref, private, tmp_path, "--new-bundle-format=false")
    assert client_for(registry, unique).head_manifest(unique, layout.signature_tag(digest_of(ref)))
    result = verify.verify(ref, KeyPolicy.from_file(public))
    assert result.signature.startswith("signature 1 at sha256-")
    with pytest.raises(VerificationError):
        verify.verify(ref, KeyPolicy(key=our_key_pair(tmp_path)[0].public_key()))


def test_we_verify_cosign_v3_bundle_signatures(registry: Registry, unique: str, tmp_path: Path) -> None:
    private, public = cosign_key_pair(tmp_path)
    ref = push_artifact(registry, unique)
    cosign_sign(ref, private, tmp_path)
    index = client_for(registry, unique).get_manifest(unique, layout.referrers_tag(digest_of(ref)))
    assert layout.BUNDLE_MEDIA_TYPE.encode() in index.content
    result = verify.verify(ref, KeyPolicy.from_file(public))
    assert result.signature.startswith("bundle sha256:")
    with pytest.raises(VerificationError, match="not made by the given key"):
        verify.verify(ref, KeyPolicy(key=our_key_pair(tmp_path)[0].public_key()))


def test_key_files_load_both_ways(registry: Registry, unique: str, tmp_path: Path) -> None:
    cosign_private, cosign_public = cosign_key_pair(tmp_path)
    loaded = keys.load_private_key(cosign_private.read_bytes(), PASSWORD.encode())
    assert keys.key_id(loaded.public_key()) == keys.key_id(keys.load_public_key(cosign_public.read_bytes()))

    _, our_private, our_public = our_key_pair(tmp_path)
    ref = push_artifact(registry, unique)
    cosign_sign(ref, our_private, tmp_path, "--new-bundle-format=false")
    verify.verify(ref, KeyPolicy.from_file(our_public))
    accepted = cosign_verify(ref, our_public, tmp_path)
    assert accepted.returncode == 0, accepted.stderr


def test_cosign_reads_our_referrer_layout(registry: Registry, unique: str, tmp_path: Path) -> None:
    """A key-signed bundle stored by our referrer code (fallback index included) is found and
    accepted by cosign v3, so cosign can read what ``--keyless`` stores."""
    key, _, public = our_key_pair(tmp_path)
    ref = push_artifact(registry, unique)
    sign.attach_bundle(ref, key_bundle(digest_of(ref), key))
    accepted = cosign_verify(ref, public, tmp_path)
    assert accepted.returncode == 0, accepted.stderr
    assert f"Verification for {registry_ref(ref)}" in accepted.stderr
    refused = cosign_verify(ref, cosign_key_pair(tmp_path)[1], tmp_path)
    assert refused.returncode != 0
