"""The CLI against a registry behind a private CA that verifies client certificates, and through
an authenticating forward proxy (Debian's tinyproxy; its log proves the traffic went through it).

``--ca-file``, ``--cert-file`` and ``--key-file`` (oras' names) and the standard environment
(``SSL_CERT_FILE``, ``HTTPS_PROXY``, ``NO_PROXY``); the registry is on loopback and serves https
only, so these also show a TLS registry on localhost is reached without ``--insecure`` or any
scheme flag. Each bad input fails with the registry (and proxy) named and what to pass, never
an x509 trace or a password.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.errors import ExitCode
from tests.integration.artifacts_support import lockgate, write_tree
from tests.integration.registry_tls_support import TLSWorld, proxy, tls_world
from tests.world.proxy import Proxy

pytestmark = pytest.mark.world
__all__ = ["proxy", "tls_world"]

#: no proxy from the machine's environment, and nothing bypassing the test's proxy
_NO_ENV_PROXY = {
    "HTTPS_PROXY": "",
    "https_proxy": "",
    "HTTP_PROXY": "",
    "http_proxy": "",
    "NO_PROXY": "",
    "no_proxy": "",
}


def _through(proxy_url: str) -> dict[str, str]:
    # the lower-case variable wins over the upper-case one (urllib's rule), so both are set
    return {**_NO_ENV_PROXY, "HTTPS_PROXY": proxy_url, "https_proxy": proxy_url}


def _no_trace(text: str) -> None:
    assert "Traceback" not in text and "CERTIFICATE_VERIFY_FAILED" not in text and "SSLError" not in text


def _push(world: TLSWorld, repo: str, tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> str:
    ref = world.registry.oci(repo, ":v1")
    run = lockgate("push", str(write_tree(tmp_path / "src", repo)), ref, *extra, env=env)
    assert run.code == 0, run.err
    return ref


def test_push_and_pull_over_mtls_with_the_oras_flags(
    tls_world: TLSWorld, unique: str, tmp_path: Path
) -> None:
    ref = _push(tls_world, unique, tmp_path, *tls_world.tls_flags(), env=_NO_ENV_PROXY)
    pulled = lockgate("pull", ref, "-O", str(tmp_path / "out"), *tls_world.tls_flags(), env=_NO_ENV_PROXY)
    assert pulled.code == 0, pulled.err
    assert (tmp_path / "out" / "ns.yaml").read_text().endswith(f"name: {unique}\n")


def test_ssl_cert_file_is_a_trusted_root_too(tls_world: TLSWorld, unique: str, tmp_path: Path) -> None:
    ref = _push(tls_world, unique, tmp_path, *tls_world.tls_flags(), env=_NO_ENV_PROXY)
    client = ["--cert-file", str(tls_world.client.cert), "--key-file", str(tls_world.client.key)]
    env = {**_NO_ENV_PROXY, "SSL_CERT_FILE": str(tls_world.ca.cert)}
    pulled = lockgate("pull", ref, "-O", str(tmp_path / "out"), *client, env=env)
    assert pulled.code == 0, pulled.err


def test_an_unknown_ca_names_the_registry_and_ca_file(
    tls_world: TLSWorld, unique: str, tmp_path: Path
) -> None:
    client = ["--cert-file", str(tls_world.client.cert), "--key-file", str(tls_world.client.key)]
    run = lockgate(
        "pull", tls_world.registry.oci(unique, ":v1"), "-O", str(tmp_path / "o"), *client, env=_NO_ENV_PROXY
    )
    assert run.code == ExitCode.REGISTRY, run.err
    assert f"registry {tls_world.registry.host}" in run.err
    assert "--ca-file" in run.err and "unknown certificate authority" in run.err
    _no_trace(run.err)


@pytest.mark.parametrize("who", ["none", "stranger"])
def test_a_client_certificate_the_registry_refuses(
    tls_world: TLSWorld, unique: str, tmp_path: Path, who: str
) -> None:
    flags = ["--ca-file", str(tls_world.ca.cert)]
    if who == "stranger":  # signed by a CA the registry's clientcas does not hold
        flags += ["--cert-file", str(tls_world.stranger.cert), "--key-file", str(tls_world.stranger.key)]
    run = lockgate(
        "pull", tls_world.registry.oci(unique, ":v1"), "-O", str(tmp_path / "o"), *flags, env=_NO_ENV_PROXY
    )
    assert run.code == ExitCode.AUTH, run.err
    assert f"registry {tls_world.registry.host} refused the TLS connection" in run.err
    assert "--cert-file" in run.err
    assert ("stranger.crt" in run.err) == (who == "stranger")
    _no_trace(run.err)


def test_https_proxy_from_the_environment_carries_the_traffic(
    tls_world: TLSWorld, proxy: Proxy, unique: str, tmp_path: Path
) -> None:
    env = _through(proxy.url_with_credentials())
    ref = _push(tls_world, unique, tmp_path, *tls_world.tls_flags(), env=env)
    pulled = lockgate("pull", ref, "-O", str(tmp_path / "out"), *tls_world.tls_flags(), env=env)
    assert pulled.code == 0, pulled.err
    # the proxy saw the tunnels: https through a proxy is CONNECT host:port
    assert f"CONNECT {tls_world.registry.host}" in " ".join(proxy.requests_seen())
    # NO_PROXY bypasses it
    seen = len(proxy.requests_seen())
    direct = lockgate(
        "pull",
        ref,
        "-O",
        str(tmp_path / "again"),
        *tls_world.tls_flags(),
        env={**env, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"},
    )
    assert direct.code == 0, direct.err
    assert len(proxy.requests_seen()) == seen


def test_a_proxy_that_refuses_the_credentials(
    tls_world: TLSWorld, proxy: Proxy, unique: str, tmp_path: Path
) -> None:
    wrong = "not-the-proxy-password-0451"
    env = _through(f"http://{proxy.username}:{wrong}@127.0.0.1:{proxy.port}")
    run = lockgate(
        "pull",
        tls_world.registry.oci(unique, ":v1"),
        "-O",
        str(tmp_path / "o"),
        *tls_world.tls_flags(),
        env=env,
    )
    assert run.code == ExitCode.AUTH, run.err
    assert f"proxy http://127.0.0.1:{proxy.port}" in run.err and "refused the credentials" in run.err
    assert wrong not in run.err and proxy.password not in run.err
    _no_trace(run.err)


def test_a_proxy_that_is_down_is_named(tls_world: TLSWorld, unique: str, tmp_path: Path) -> None:
    from tests.world.process import free_port

    port = free_port()  # nothing listens there
    env = _through(f"http://user:pw-0451@127.0.0.1:{port}")
    run = lockgate(
        "pull",
        tls_world.registry.oci(unique, ":v1"),
        "-O",
        str(tmp_path / "o"),
        *tls_world.tls_flags(),
        env=env,
    )
    assert run.code == ExitCode.REGISTRY, run.err
    assert f"through proxy http://127.0.0.1:{port}" in run.err and "connection refused" in run.err
    assert "pw-0451" not in run.err
    _no_trace(run.err)


def test_a_plain_http_loopback_registry_still_needs_no_flag(
    registry: object, unique: str, tmp_path: Path
) -> None:
    from tests.world.registry import Registry

    assert isinstance(registry, Registry)
    ref = registry.oci(unique, ":v1")
    assert lockgate("push", str(write_tree(tmp_path / "src", unique)), ref, env=_NO_ENV_PROXY).code == 0
    assert lockgate("pull", ref, "-O", str(tmp_path / "out"), env=_NO_ENV_PROXY).code == 0


def test_sign_and_verify_over_mtls_through_the_proxy(
    tls_world: TLSWorld, proxy: Proxy, unique: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration.test_signing_cli import lockgate as signing_lockgate

    for name, value in _through(proxy.url_with_credentials()).items():
        monkeypatch.setenv(name, value)
    assert signing_lockgate("keygen", "--output-key-prefix", "k", cwd=tmp_path).returncode == 0
    tree = str(write_tree(tmp_path / "src", unique))
    pushed = lockgate("push", tree, tls_world.registry.oci(unique, ":v1"), *tls_world.tls_flags())
    assert pushed.code == 0, pushed.err
    digest = pushed.out.strip().rsplit("@", 1)[1]  # "pushed oci://HOST/REPO:v1@sha256:..."
    ref = tls_world.registry.oci(unique, f"@{digest}")
    seen = len(proxy.requests_seen())
    signed = signing_lockgate("sign", ref, "--key", "k.key", *tls_world.tls_flags(), cwd=tmp_path)
    assert signed.returncode == 0, signed.stderr
    verified = signing_lockgate("verify", ref, "--key", "k.pub", *tls_world.tls_flags(), cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert f"CONNECT {tls_world.registry.host}" in " ".join(proxy.requests_seen()[seen:])
    # without the CA, verify fails on the registry, naming it and the flag, not on the signature
    client = ["--cert-file", str(tls_world.client.cert), "--key-file", str(tls_world.client.key)]
    refused = signing_lockgate("verify", ref, "--key", "k.pub", *client, cwd=tmp_path)
    assert refused.returncode == ExitCode.REGISTRY, refused.stderr
    assert f"registry {tls_world.registry.host}" in refused.stderr and "--ca-file" in refused.stderr
    _no_trace(refused.stderr)
