"""Signing the same digest with the same key again adds no signature (issue 15, item 5).

cosign's dupe detector (``pkg/cosign/remote``: a ``.sig`` layer with the same payload whose
signature verifies with the signing key is a duplicate) keeps one layer however often CI
re-signs; so do we, in the ``.sig`` layout and against a cosign v3 key bundle among the
referrers. A different key, or different payload annotations, is a new signature.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lockgate.errors import ExitCode
from lockgate.signing import keys, layout, sign, verify
from lockgate.signing.policy import KeyPolicy
from tests.integration.artifacts_support import lockgate, write_tree
from tests.integration.signing_support import client_for, digest_of, key_bundle, push_artifact
from tests.integration.test_signing_cosign import cosign_verify
from tests.world.registry import Registry

PASSWORD = "interop-pw"  # the password test_signing_cosign's cosign runs use


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    for name in os.environ:
        if name.startswith(("SIGSTORE_", "LOCKGATE_", "COSIGN_")):
            monkeypatch.delenv(name)


def key_files(tmp_path: Path, stem: str) -> tuple[keys.PrivateKey, Path, Path]:
    pair = keys.generate_key_pair(PASSWORD.encode())
    private, public = tmp_path / f"{stem}.key", tmp_path / f"{stem}.pub"
    private.write_bytes(pair.private_pem)
    public.write_bytes(pair.public_pem)
    return keys.load_private_key(pair.private_pem, PASSWORD.encode()), private, public


def sig_layers(registry: Registry, repo: str, digest: str) -> list[dict[str, object]]:
    manifest = client_for(registry, repo).get_manifest(repo, layout.signature_tag(digest)).content
    layers: list[dict[str, object]] = json.loads(manifest)["layers"]
    return layers


def test_five_resigns_leave_one_layer_and_another_key_adds_one(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    ref = push_artifact(registry, unique)
    digest = digest_of(ref)
    key, _, public = key_files(tmp_path, "first")
    results = [sign.sign_with_key(ref, key) for _ in range(5)]
    assert [r.status for r in results] == ["signed"] + ["unchanged"] * 4
    assert all(r.stored_at == results[0].stored_at for r in results)
    assert results[1].describe() == (
        f"already signed {digest} by key {keys.key_id(key.public_key())}; signature at {results[0].stored_at}"
    )
    assert len(sig_layers(registry, unique, digest)) == 1
    accepted = cosign_verify(ref, public, tmp_path)
    assert accepted.returncode == 0, accepted.stderr

    other, _, other_public = key_files(tmp_path, "second")
    assert sign.sign_with_key(ref, other).status == "signed"
    assert sign.sign_with_key(ref, other).status == "unchanged"
    assert len(sig_layers(registry, unique, digest)) == 2
    for pub in (public, other_public):
        verify.verify(ref, KeyPolicy.from_file(pub))
        assert cosign_verify(ref, pub, tmp_path).returncode == 0


def test_other_annotations_are_another_signature(registry: Registry, unique: str, tmp_path: Path) -> None:
    ref = push_artifact(registry, unique)
    key, _, _ = key_files(tmp_path, "k")
    assert sign.sign_with_key(ref, key).status == "signed"
    assert sign.sign_with_key(ref, key, annotations={"build": "1"}).status == "signed"
    assert sign.sign_with_key(ref, key, annotations={"build": "1"}).status == "unchanged"
    assert sign.sign_with_key(ref, key).status == "unchanged"
    assert len(sig_layers(registry, unique, digest_of(ref))) == 2


def test_a_corrupt_layer_by_the_same_key_does_not_count(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    """A layer with the right payload but a signature that does not verify is no duplicate."""
    ref = push_artifact(registry, unique)
    digest = digest_of(ref)
    key, _, public = key_files(tmp_path, "k")
    sign.sign_with_key(ref, key)
    client = client_for(registry, unique)
    tag = layout.signature_tag(digest)
    manifest = json.loads(client.get_manifest(unique, tag).content)
    manifest["layers"][0]["annotations"][layout.SIGNATURE_ANNOTATION] = "AAAA"
    client.put_manifest(unique, tag, layout.encode(manifest), layout.OCI_MANIFEST)
    assert sign.sign_with_key(ref, key).status == "signed"
    assert sign.sign_with_key(ref, key).status == "unchanged"
    assert len(sig_layers(registry, unique, digest)) == 2
    verify.verify(ref, KeyPolicy.from_file(public))


def test_a_cosign_v3_key_bundle_by_the_same_key_counts(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    ref = push_artifact(registry, unique)
    digest = digest_of(ref)
    key, _, _ = key_files(tmp_path, "k")
    referrer = sign.attach_bundle(ref, key_bundle(digest, key))
    again = sign.sign_with_key(ref, key)
    assert again.status == "unchanged"
    assert again.stored_at == registry.oci(unique, "@" + referrer)
    # nothing was written in the .sig layout
    assert client_for(registry, unique).head_manifest(unique, layout.signature_tag(digest)) is None
    # another key's bundle, or payload annotations a bundle cannot carry, are new signatures
    other, _, _ = key_files(tmp_path, "other")
    assert sign.sign_with_key(ref, other).status == "signed"
    assert sign.sign_with_key(ref, key, annotations={"a": "b"}).status == "signed"


def test_five_push_sign_runs_and_five_sign_commands_leave_one_layer(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    _, private, public = key_files(tmp_path, "ci")
    tree = write_tree(tmp_path / "src", unique)
    ref = registry.oci(unique, ":v1")
    env = {"LOCKGATE_PASSWORD": PASSWORD}
    outputs = []
    for _ in range(5):
        run = lockgate("push", str(tree), ref, "--sign", "key", "--key", str(private), env=env)
        assert run.code == 0, run.err
        outputs.append(run.out.strip().splitlines()[-1])
    digest = outputs[0].split()[1]
    assert outputs[0].startswith(f"signed {digest} by key sha256:")
    for line in outputs[1:]:
        assert line.startswith(f"already signed {digest} by key sha256:"), line
    assert len(sig_layers(registry, unique, digest)) == 1

    by_digest = registry.oci(unique, "@" + digest)
    for _ in range(5):
        run = lockgate("sign", by_digest, "--key", str(private), "--output", "json", env=env)
        assert run.code == 0, run.err
        assert json.loads(run.out)["status"] == "unchanged"
    text = lockgate("sign", by_digest, "--key", str(private), env=env)
    assert text.code == 0 and text.out.startswith(f"Already signed {by_digest} by key sha256:")
    assert len(sig_layers(registry, unique, digest)) == 1
    verified = lockgate("verify", ref, "--key", str(public))
    assert verified.code == 0, verified.err
    assert cosign_verify(ref, public, tmp_path).returncode == 0
    assert lockgate("sign", ref, "--key", str(private), env=env).code == ExitCode.USAGE
