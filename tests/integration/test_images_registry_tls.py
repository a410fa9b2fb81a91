"""``lockgate images scan`` with Flux ImageRepository's ``certSecretRef`` and ``proxySecretRef``: the
registry behind a private CA that requires client certificates, reached through the
authenticating tinyproxy, the Secrets as files under ``--secrets-dir`` (one file per entry).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.artifacts_support import lockgate
from tests.integration.registry_tls_support import TLSWorld, proxy, push_files, tls_world
from tests.world.proxy import Proxy

pytestmark = pytest.mark.world
__all__ = ["proxy", "tls_world"]
_NO_ENV_PROXY = {"HTTPS_PROXY": "", "https_proxy": "", "NO_PROXY": "", "no_proxy": ""}


def _repository(root: Path, image: str) -> None:
    root.mkdir()
    (root / "app.yaml").write_text(
        "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\n"
        f"metadata: {{name: app, namespace: apps}}\nspec:\n  image: {image}\n"
        "  certSecretRef: {name: registry-tls}\n  proxySecretRef: {name: registry-proxy}\n"
        "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\n"
        "metadata: {name: app, namespace: apps}\nspec:\n  imageRepositoryRef: {name: app}\n"
        "  policy:\n    semver:\n      range: '*'\n"
    )


def test_scan_reads_the_cert_and_proxy_secrets_from_the_secrets_dir(
    tls_world: TLSWorld, proxy: Proxy, unique: str, tmp_path: Path
) -> None:
    for tag in ("1.0.0", "1.1.0"):
        push_files(tls_world, unique, {"a.yaml": f"# {tag}\n"}, tag=tag)
    repo = tmp_path / "repo"
    _repository(repo, f"{tls_world.registry.host}/{unique}")
    secrets = tmp_path / "secrets"
    (secrets / "registry-tls").mkdir(parents=True)
    (secrets / "registry-tls" / "ca.crt").write_bytes(tls_world.ca.cert.read_bytes())
    (secrets / "registry-tls" / "tls.crt").write_bytes(tls_world.client.cert.read_bytes())
    (secrets / "registry-tls" / "tls.key").write_bytes(tls_world.client.key.read_bytes())
    (secrets / "registry-proxy").mkdir()
    (secrets / "registry-proxy" / "address").write_text(proxy.address)
    (secrets / "registry-proxy" / "username").write_text(proxy.username)
    (secrets / "registry-proxy" / "password").write_text(proxy.password)
    seen = len(proxy.requests_seen())
    args = ("images", "scan", "--path", str(repo), "--output", "json")
    result = lockgate(*args, "--secrets-dir", str(secrets), env=_NO_ENV_PROXY)
    assert result.code == 0, result.err
    (row,) = json.loads(result.out)
    assert row["latest"].endswith(":1.1.0")
    assert f"CONNECT {tls_world.registry.host}" in " ".join(proxy.requests_seen()[seen:])
    assert proxy.password not in result.out + result.err
    # without --secrets-dir there is nowhere to read the Secrets from: the field is named
    missing = lockgate(*args, env=_NO_ENV_PROXY)
    assert missing.code != 0
    assert "spec.certSecretRef.name 'registry-tls' needs --secrets-dir" in missing.out + missing.err
