"""``lockgate keygen``, ``sign`` and ``verify`` as a user runs them: files, output, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lockgate.errors import ExitCode
from tests.integration.signing_support import digest_of, push_artifact
from tests.world.registry import Registry

DATA = Path(__file__).parents[1] / "data" / "sigstore"


def lockgate(
    *args: str, cwd: Path, password: str | None = "s3cret-Passphrase"
) -> subprocess.CompletedProcess[str]:
    # no ambient credentials: passwords come from the test, and no CI identity token leaks in
    dropped = (
        "LOCKGATE_PASSWORD",
        "COSIGN_PASSWORD",
        "SIGSTORE_ID_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "GITHUB_ACTIONS",
        "GITLAB_CI",
        "CIRCLECI",
        "BUILDKITE",
    )
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    if password is not None:
        env["LOCKGATE_PASSWORD"] = password
    return subprocess.run(
        [sys.executable, "-m", "lockgate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_keygen_sign_verify_story(registry: Registry, unique: str, tmp_path: Path) -> None:
    keygen = lockgate("keygen", "--output-key-prefix", "release", cwd=tmp_path)
    assert keygen.returncode == 0, keygen.stderr
    assert (tmp_path / "release.key").read_text().startswith("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----")
    assert (tmp_path / "release.key").stat().st_mode & 0o777 == 0o600
    assert "s3cret-Passphrase" not in keygen.stdout + keygen.stderr

    ref = push_artifact(registry, unique, tag="v1")
    signed = lockgate("sign", ref, "--key", "release.key", "-o", "json", cwd=tmp_path)
    assert signed.returncode == 0, signed.stderr
    assert json.loads(signed.stdout)["digest"] == digest_of(ref)

    verified = lockgate("verify", registry.oci(unique, ":v1"), "--key", "release.pub", cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.splitlines()[0] == f"Verified {registry.oci(unique, ':v1@' + digest_of(ref))}"
    assert "signed by: key sha256:" in verified.stdout

    as_json = lockgate("verify", ref, "--key", "release.pub", "--output", "json", cwd=tmp_path)
    assert json.loads(as_json.stdout)["digest"] == digest_of(ref)


def test_keygen_refuses_to_overwrite_and_needs_a_password(tmp_path: Path) -> None:
    assert lockgate("keygen", cwd=tmp_path).returncode == 0
    again = lockgate("keygen", cwd=tmp_path)
    assert again.returncode == ExitCode.USAGE
    assert "cosign.key already exists" in again.stderr
    nopass = lockgate("keygen", "--output-key-prefix", "other", cwd=tmp_path, password=None)
    assert nopass.returncode == ExitCode.USAGE
    assert "set LOCKGATE_PASSWORD" in nopass.stderr


def test_cosign_written_key_signs(registry: Registry, unique: str, tmp_path: Path) -> None:
    ref = push_artifact(registry, unique)
    result = lockgate(
        "sign", ref, "--key", str(DATA / "cosign-sigstore-type.key"), cwd=tmp_path, password="hello"
    )
    assert result.returncode == 0, result.stderr


def test_refusals_have_their_exit_codes(registry: Registry, unique: str, tmp_path: Path) -> None:
    assert lockgate("keygen", cwd=tmp_path).returncode == 0
    ref = push_artifact(registry, unique, tag="v1")

    unsigned = lockgate("verify", ref, "--key", "cosign.pub", cwd=tmp_path)
    assert unsigned.returncode == ExitCode.VERIFICATION
    assert "is not signed" in unsigned.stderr

    wrong = lockgate("sign", ref, "--key", "cosign.key", cwd=tmp_path, password="not-the-password")
    assert wrong.returncode == ExitCode.AUTH
    assert wrong.stderr.strip() == "error: cannot decrypt cosign.key: wrong password"

    by_tag = lockgate("sign", registry.oci(unique, ":v1"), "--key", "cosign.key", cwd=tmp_path)
    assert by_tag.returncode == ExitCode.USAGE
    assert "by digest" in by_tag.stderr

    mismatch = lockgate(
        "verify",
        ref,
        "--certificate-identity",
        "someone@example.com",
        "--certificate-oidc-issuer",
        "https://accounts.google.com",
        "--trusted-root",
        str(DATA / "staging-trusted-root.json"),
        cwd=tmp_path,
    )
    assert mismatch.returncode == ExitCode.VERIFICATION

    half = lockgate("verify", ref, "--certificate-identity", "someone@example.com", cwd=tmp_path)
    assert half.returncode == ExitCode.USAGE
    assert "--certificate-oidc-issuer" in half.stderr


def test_keyless_sign_without_token_is_an_auth_error(registry: Registry, unique: str, tmp_path: Path) -> None:
    ref = push_artifact(registry, unique)
    env_free = lockgate("sign", ref, "--keyless", cwd=tmp_path)
    assert env_free.returncode == ExitCode.AUTH, env_free.stderr
    assert "id-token: write" in env_free.stderr
