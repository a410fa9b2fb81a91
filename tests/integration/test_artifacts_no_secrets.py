"""Nothing secret goes into an artifact by accident: a PEM private key or a cosign key is
refused by build and push unless --allow-private-keys, a plain Secret is a warning (an error
with --strict), and a cached build of a laxer check never stands in for a stricter one."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from lockgate.signing import keys
from tests.integration.artifacts_support import lockgate
from tests.world.registry import Registry

CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
SECRET = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2\n"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCKGATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))


def _pem_key() -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.mark.parametrize("kind", ["pkcs8 pem", "cosign key"])
def test_a_private_key_is_refused_unless_allowed(
    kind: str, registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = tmp_path / "app"
    (tree / "certs").mkdir(parents=True)
    (tree / "cm.yaml").write_text(CONFIGMAP)
    key = _pem_key() if kind == "pkcs8 pem" else keys.generate_key_pair(b"pw").private_pem
    (tree / "certs" / "tls.key").write_bytes(key)
    built = lockgate("build", str(tree))
    assert built.code == 2, built.err
    assert "certs/tls.key: holds a private key" in built.err and "--allow-private-keys" in built.err
    pushed = lockgate("push", str(tree), registry.oci(unique, ":v1"))
    assert pushed.code == 2 and "holds a private key" in pushed.err
    assert "PRIVATE KEY" not in built.err + pushed.err  # never echoed
    allowed = lockgate("build", str(tree), "--allow-private-keys")
    assert allowed.code == 0, allowed.err
    # the cached result of the allowed build does not let the refused one through
    again = lockgate("build", str(tree))
    assert again.code == 2, again.err


def test_a_plain_secret_is_a_warning_and_an_error_with_strict(tmp_path: Path) -> None:
    tree = tmp_path / "app"
    tree.mkdir()
    (tree / "cm.yaml").write_text(CONFIGMAP)
    (tree / "secret.yaml").write_text(SECRET)
    warned = lockgate("build", str(tree))
    assert warned.code == 0, warned.err
    assert "warning:" in warned.err and "Secret db is not encrypted" in warned.err
    assert "hunter2" not in warned.err
    strict = lockgate("build", str(tree), "--strict")
    assert strict.code == 8 and "Secret db is not encrypted" in strict.err and "(--strict)" in strict.err
    (tree / "secret.yaml").write_text(SECRET + "sops:\n  version: 3.9.0\n")
    quiet = lockgate("build", str(tree), "--strict")
    assert quiet.code == 0 and "not encrypted" not in quiet.err
