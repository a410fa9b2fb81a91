"""lockgate push --sign: push, then sign the pushed manifest digest, in one command.

Key signatures are checked with the shared verifier (``lockgate.signing.verify``) against
the digest the push printed; the keyless case runs through the private Sigstore stack.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lockgate.errors import ExitCode, VerificationError
from lockgate.signing import keys, verify
from lockgate.signing.policy import KeylessPolicy, KeyPolicy, Match
from tests.integration.artifacts_support import lockgate, write_tree
from tests.world.registry import Registry
from tests.world.sigstore import DEFAULT_IDENTITY, SigstoreStack

PASSWORD = "push-sign-test"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    for name in os.environ:
        if name.startswith(("SIGSTORE_", "ACTIONS_ID_TOKEN", "LOCKGATE_", "COSIGN_")) or name in {
            "GITHUB_ACTIONS",
            "SOURCE_DATE_EPOCH",
        }:
            monkeypatch.delenv(name)


@pytest.fixture
def key_files(tmp_path: Path) -> tuple[Path, Path]:
    pair = keys.generate_key_pair(PASSWORD.encode())
    private, public = tmp_path / "cosign.key", tmp_path / "cosign.pub"
    private.write_bytes(pair.private_pem)
    public.write_bytes(pair.public_pem)
    return private, public


def _push(*args: str, password: str | None = PASSWORD) -> tuple[int, str, str]:
    env = {"LOCKGATE_PASSWORD": password} if password is not None else {}
    run = lockgate("push", *args, env=env)
    return run.code, run.out, run.err


def test_push_sign_key_then_verify_names_the_pushed_digest(
    registry: Registry, unique: str, tmp_path: Path, key_files: tuple[Path, Path]
) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ref = registry.oci(unique, ":v1")
    code, out, err = _push(str(tree), ref, "--sign", "key", "--key", str(key_files[0]), "--output", "json")
    assert code == 0, err
    info = json.loads(out)
    assert info["status"] == "pushed"
    signed = info["signed"]
    assert signed["digest"] == info["digest"] and signed["mode"] == "key"
    sig_tag = f":sha256-{info['digest'].removeprefix('sha256:')}.sig"
    assert signed["storedAt"] == registry.oci(unique, sig_tag)
    assert PASSWORD not in out + err

    policy = KeyPolicy.from_file(key_files[1])
    verified = verify.verify(ref, policy)
    assert verified.digest == info["digest"]
    assert verified.signer == signed["signer"] + f" ({key_files[1]})"


def test_unchanged_repush_is_signed_too_and_text_output_reports_it(
    registry: Registry, unique: str, tmp_path: Path, key_files: tuple[Path, Path]
) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ref = registry.oci(unique, ":v1")
    assert _push(str(tree), ref)[0] == 0
    code, out, err = _push(str(tree), ref, "--sign", "key", "--key", str(key_files[0]))
    assert code == 0, err
    first, second = out.strip().splitlines()
    assert first.startswith(f"unchanged {ref}@sha256:")
    digest = first.rsplit("@", 1)[1]
    assert second.startswith(f"signed {digest} by key ")
    assert verify.verify(ref, KeyPolicy.from_file(key_files[1])).digest == digest


def test_push_each_signs_every_artifact(
    registry: Registry, unique: str, tmp_path: Path, key_files: tuple[Path, Path]
) -> None:
    for name in ("backend", "frontend"):
        write_tree(tmp_path / "apps" / name, f"{unique}-{name}")
    target = registry.oci(f"{unique}/{{name}}", ":main")
    code, out, err = _push(
        "--each",
        str(tmp_path / "apps" / "*"),
        target,
        "--sign",
        "key",
        "--key",
        str(key_files[0]),
        "--output",
        "json",
    )
    assert code == 0, err
    results = json.loads(out)
    assert [r["repository"].rsplit("/", 1)[1] for r in results] == ["backend", "frontend"]
    policy = KeyPolicy.from_file(key_files[1])
    for r in results:
        assert r["signed"]["digest"] == r["digest"]
        assert verify.verify(f"oci://{r['repository']}:main", policy).digest == r["digest"]


def test_wrong_password_or_missing_key_fails_before_pushing(
    registry: Registry, unique: str, tmp_path: Path, key_files: tuple[Path, Path]
) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ref = registry.oci(unique, ":v1")
    code, out, err = _push(str(tree), ref, "--sign", "key", "--key", str(key_files[0]), password="Zq9-not-it")
    assert code == ExitCode.AUTH, err
    assert str(key_files[0]) in err and "Zq9-not-it" not in out + err
    code, _, err = _push(str(tree), ref, "--sign", "key")
    assert code == ExitCode.USAGE and "--sign key needs --key" in err
    code, _, err = _push(str(tree), ref, "--key", str(key_files[0]))
    assert code == ExitCode.USAGE
    # nothing was pushed by any of the refused commands
    assert lockgate("inspect", ref).code != 0


def test_a_signature_from_another_key_is_refused(
    registry: Registry, unique: str, tmp_path: Path, key_files: tuple[Path, Path]
) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ref = registry.oci(unique, ":v1")
    assert _push(str(tree), ref, "--sign", "key", "--key", str(key_files[0]))[0] == 0
    other = keys.generate_key_pair(b"x")
    with pytest.raises(VerificationError):
        verify.verify(ref, KeyPolicy(keys.load_public_key(other.public_pem)))


@pytest.mark.world
@pytest.mark.filterwarnings("ignore:Attribute's length must be:UserWarning")
def test_push_sign_keyless_with_trust_config(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ref = registry.oci(unique, ":v1")
    token = sigstore_stack.token()
    code, out, err = _push(
        str(tree),
        ref,
        "--sign",
        "keyless",
        "--identity-token",
        token,
        "--trust-config",
        str(sigstore_stack.trust_config),
        "--output",
        "json",
        password=None,
    )
    assert code == 0, err
    assert token not in out + err
    info = json.loads(out)
    assert info["signed"]["mode"] == "keyless"
    assert info["signed"]["signer"] == f"{DEFAULT_IDENTITY} (issuer {sigstore_stack.issuer})"
    policy = KeylessPolicy(
        identity=Match(DEFAULT_IDENTITY),
        issuer=Match(sigstore_stack.issuer),
        trusted_root=sigstore_stack.trusted_root,
    )
    assert verify.verify(ref, policy).digest == info["digest"]
