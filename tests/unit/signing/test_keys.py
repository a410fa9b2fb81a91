"""cosign key files: the layout we write, the files cosign wrote, and every way loading fails."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from lockgate.errors import AuthError, UsageError, VerificationError
from lockgate.signing import keys

DATA = Path(__file__).parents[2] / "data" / "sigstore"


def _body(pem: bytes) -> dict[str, Any]:
    lines = pem.decode().strip().splitlines()
    value = json.loads(base64.b64decode("".join(lines[1:-1])))
    assert isinstance(value, dict)
    return value


def test_generated_key_has_cosigns_layout() -> None:
    pair = keys.generate_key_pair(b"secret")
    text = pair.private_pem.decode()
    assert text.startswith("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n")
    assert text.endswith("-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n")
    assert all(len(line) <= 64 for line in text.splitlines())
    body = _body(pair.private_pem)
    assert list(body) == ["kdf", "cipher", "ciphertext"]
    assert body["kdf"] == {
        "name": "scrypt",
        "params": {"N": 65536, "r": 8, "p": 1},
        "salt": body["kdf"]["salt"],
    }
    assert len(base64.b64decode(body["kdf"]["salt"])) == 32
    assert body["cipher"]["name"] == "nacl/secretbox"
    assert len(base64.b64decode(body["cipher"]["nonce"])) == 24
    assert pair.public_pem.startswith(b"-----BEGIN PUBLIC KEY-----\n")


def test_round_trip_signs_and_verifies() -> None:
    pair = keys.generate_key_pair(b"secret")
    private = keys.load_private_key(pair.private_pem, b"secret")
    public = keys.load_public_key(pair.public_pem)
    signature = keys.sign(private, b"payload")
    keys.check_signature(public, signature, b"payload")
    with pytest.raises(VerificationError, match="not made by the given key"):
        keys.check_signature(public, signature, b"other payload")


def test_signature_by_another_key_is_refused() -> None:
    one, other = keys.generate_key_pair(b""), keys.generate_key_pair(b"")
    signature = keys.sign(keys.load_private_key(one.private_pem, b""), b"payload")
    with pytest.raises(VerificationError):
        keys.check_signature(keys.load_public_key(other.public_pem), signature, b"payload")


def test_empty_password_is_a_password() -> None:
    pair = keys.generate_key_pair(b"")
    keys.load_private_key(pair.private_pem, b"")
    with pytest.raises(AuthError):
        keys.load_private_key(pair.private_pem, b"x")


@pytest.mark.parametrize("name", ["cosign-sigstore-type.key", "cosign-cosign-type.key"])
def test_loads_key_files_written_by_cosign(name: str) -> None:
    key = keys.load_private_key((DATA / name).read_bytes(), b"hello")
    keys.check_signature(key.public_key(), keys.sign(key, b"x"), b"x")


def test_wrong_password_names_the_file_not_the_password() -> None:
    with pytest.raises(AuthError) as caught:
        keys.load_private_key(
            (DATA / "cosign-sigstore-type.key").read_bytes(), b"hunter2", source="cosign.key"
        )
    assert caught.value.message == "cannot decrypt cosign.key: wrong password"
    assert "hunter2" not in str(caught.value)


def _pem(body: dict[str, Any], pem_type: str = keys.SIGSTORE_PEM_TYPE) -> bytes:
    encoded = base64.b64encode(json.dumps(body).encode()).decode()
    return f"-----BEGIN {pem_type}-----\n{encoded}\n-----END {pem_type}-----\n".encode()


def _valid_body() -> dict[str, Any]:
    return _body(keys.generate_key_pair(b"pw").private_pem)


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("not PEM", b"hello", "not a PEM file"),
        ("public key", keys.generate_key_pair(b"").public_pem, "not an encrypted cosign private key"),
        (
            "not JSON",
            b"-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\naGVsbG8=\n"
            b"-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n",
            "not a valid encrypted cosign key",
        ),
        (
            "corrupt base64",
            b"-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n!!!\n"
            b"-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n",
            "not valid base64",
        ),
        (
            "huge scrypt",
            _pem(
                {
                    **_valid_body(),
                    "kdf": {
                        **_valid_body()["kdf"],
                        "params": {"N": 1 << 24, "r": 8, "p": 1},
                    },
                }
            ),
            "unsupported scrypt parameters",
        ),
        ("other cipher", _pem({**_valid_body(), "cipher": {"name": "aes", "nonce": ""}}), "only scrypt with"),
    ],
)
def test_malformed_key_files_are_refused(name: str, data: bytes, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        keys.load_private_key(data, b"pw")


def test_password_comes_from_lockgate_then_cosign_variable() -> None:
    assert keys.password_from_env({"COSIGN_PASSWORD": "c", "LOCKGATE_PASSWORD": "l"}) == b"l"
    assert keys.password_from_env({"COSIGN_PASSWORD": ""}) == b""
    assert keys.password_from_env({}) is None


def test_public_key_file_must_be_a_public_key() -> None:
    with pytest.raises(UsageError, match="not a PEM public key"):
        keys.load_public_key(b"nope", source="cosign.pub")
