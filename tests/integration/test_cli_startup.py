"""Start-up of real runs: what ``verify --key`` and ``push`` import while doing their work.

Measured with ``python -X importtime`` against the world's registry: a key verification
succeeds without ever importing sigstore-python (about a second of imports), and a push
loads neither the pull/extract path nor the signing stack.
"""

from __future__ import annotations

from pathlib import Path

from tests.integration.signing_support import push_artifact
from tests.startup_support import imported, loaded
from tests.world.registry import Registry

PASSWORD = {"LOCKGATE_PASSWORD": "s3cret-Passphrase"}


def test_verify_with_a_key_never_imports_sigstore(registry: Registry, unique: str, tmp_path: Path) -> None:
    keygen, _ = imported("keygen", "--output-key-prefix", "k", cwd=tmp_path, env=PASSWORD)
    assert keygen.returncode == 0, keygen.stderr[-2000:]
    ref = push_artifact(registry, unique, tag="v1")
    signed, sign_modules = imported("sign", ref, "--key", "k.key", cwd=tmp_path, env=PASSWORD)
    assert signed.returncode == 0, signed.stderr[-2000:]
    assert loaded(sign_modules, "sigstore") == []

    verified, modules = imported("verify", ref, "--key", "k.pub", cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr[-2000:]
    assert verified.stdout.startswith("Verified ")
    assert loaded(modules, "sigstore", "yaml", "git") == []
    assert "lockgate.signing.sign" not in modules


def test_push_imports_neither_the_pull_path_nor_signing(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    pushed, modules = imported(
        "push",
        str(tree),
        registry.oci(unique, ":v1"),
        "--source",
        "https://example.com/repo",
        "--revision",
        "main@sha1:" + "0" * 40,
        "--created",
        "0",
        env={"LOCKGATE_CACHE": "off"},
    )
    assert pushed.returncode == 0, pushed.stderr[-2000:]
    assert "requests" in modules
    assert loaded(modules, "sigstore", "cryptography", "nacl", "runner", "git") == []
    assert [m for m in modules if m.startswith(("lockgate.artifact.pull", "lockgate.artifact.extract"))] == []
    assert [m for m in modules if m.startswith(("lockgate.signing", "action.signing"))] == []
