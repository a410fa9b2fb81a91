"""The runner path: a Sync whose registry is behind a private CA, verifies client certificates and
is reached through an authenticating proxy, with Flux OCIRepository's ``certSecretRef``
(``ca.crt``, ``tls.crt``, ``tls.key``) and ``proxySecretRef`` (``address``, ``username``,
``password``), read from Secrets at the pass and held in memory only.

Both ``reconcile``'s pass and ``serve`` (whose registry clients are kept per Secret) are run. The
proxy's log proves the pass went through it; each bad Secret fails the pass with the Secret,
the field and what to put there named, never a value, and nothing is applied.
"""

from __future__ import annotations

import base64
import json
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from lockgate import registry
from lockgate.errors import AuthError, ExitCode
from lockgate.registry.connection import TransportOptions
from runner.kube.client import Kube
from runner.pipeline import config, transportrefs
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from runner.pipeline.secretrefs import SecretReader
from tests.integration.reconcile_support import LOCKGATE, configmap, dump, get, namespace
from tests.integration.registry_tls_support import TLSWorld, proxy, push_files, tls_world
from tests.integration.serve_support import start_serve, sync_doc
from tests.integration.test_deploy import apply, build, relocate, with_config
from tests.world.kube import Cluster
from tests.world.process import free_port
from tests.world.proxy import Proxy

pytestmark = pytest.mark.world
__all__ = ["proxy", "tls_world"]


@pytest.fixture(autouse=True)
def _no_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No Docker login and no proxy from the environment: only the Sync's Secrets count."""
    (tmp_path / "docker").mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)


def _secret(cluster: Cluster, ns: str, name: str, data: dict[str, bytes]) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }
    cluster.kubectl("create", "namespace", ns, check=False)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))


def _tls_entries(world: TLSWorld, *, ca: bool = True, client: bool = True) -> dict[str, bytes]:
    entries: dict[str, bytes] = {}
    if ca:
        entries["ca.crt"] = world.ca.cert.read_bytes()
    if client:
        entries["tls.crt"] = world.client.cert.read_bytes()
        entries["tls.key"] = world.client.key.read_bytes()
    return entries


def _proxy_entries(running: Proxy, *, password: str | None = None) -> dict[str, bytes]:
    return {
        "address": running.address.encode(),
        "username": running.username.encode(),
        "password": (password or running.password).encode(),
    }


def _pass(cluster: Cluster, tmp_path: Path, name: str, url: str, runner: str, **spec: Any) -> Result:
    doc = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": name},
        "spec": {"url": url, "interval": "1m", "namespace": runner, "verify": {"insecureSkip": True}, **spec},
    }
    path = tmp_path / "syncs.yaml"
    path.write_text(yaml.safe_dump(doc))
    (options,) = config.load(path).syncs
    return pipeline.reconcile(options, kube=Kube.from_kubeconfig(cluster.kubeconfig))


def _error(result: Result) -> tuple[ExitCode, str]:
    assert result.error is not None, "the pass succeeded"
    return result.error.exit_code, result.error.message


def test_a_sync_with_cert_and_proxy_secrets_is_applied_through_the_proxy(
    cluster: Cluster, tls_world: TLSWorld, proxy: Proxy, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    url = push_files(tls_world, unique, {"a.yaml": dump(namespace(unique), configmap("a", unique, {}))})
    _secret(cluster, runner, "registry-tls", _tls_entries(tls_world))
    _secret(cluster, runner, "registry-proxy", _proxy_entries(proxy))
    seen = len(proxy.requests_seen())
    result = _pass(
        cluster,
        tmp_path,
        unique,
        url,
        runner,
        certSecretRef={"name": "registry-tls"},
        proxySecretRef={"name": "registry-proxy"},
    )
    assert result.error is None, result.error
    assert get(cluster, "configmap", "a", unique) is not None
    tunnels = proxy.requests_seen()[seen:]
    assert f"CONNECT {tls_world.registry.host}" in " ".join(tunnels), tunnels


def test_a_cert_secret_missing_ca_crt(
    cluster: Cluster, tls_world: TLSWorld, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    url = push_files(tls_world, unique, {"a.yaml": dump(namespace(unique))})
    # no entry Flux reads at all (an old key name): refused before any connection
    _secret(cluster, runner, "old-keys", {"caFile": tls_world.ca.cert.read_bytes()})
    code, message = _error(_pass(cluster, tmp_path, unique, url, runner, certSecretRef={"name": "old-keys"}))
    assert code == ExitCode.USAGE
    assert (
        f"Secret/{runner}/old-keys (spec.certSecretRef.name): has no ca.crt entry (entries: caFile)"
        in message
    )
    # a client pair but no ca.crt: the private CA is unknown, and the message says where it goes
    _secret(cluster, runner, "pair-only", _tls_entries(tls_world, ca=False))
    code, message = _error(_pass(cluster, tmp_path, unique, url, runner, certSecretRef={"name": "pair-only"}))
    assert code == ExitCode.REGISTRY
    assert (
        f"registry {tls_world.registry.host}" in message
        and "spec.certSecretRef (its ca.crt entry)" in message
    )
    assert "CERTIFICATE_VERIFY_FAILED" not in message
    assert get(cluster, "namespace", unique) is None


def test_a_client_certificate_the_registry_refuses(
    cluster: Cluster, tls_world: TLSWorld, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    url = push_files(tls_world, unique, {"a.yaml": dump(namespace(unique))})
    stranger = {
        "ca.crt": tls_world.ca.cert.read_bytes(),
        "tls.crt": tls_world.stranger.cert.read_bytes(),
        "tls.key": tls_world.stranger.key.read_bytes(),
    }
    _secret(cluster, runner, "stranger", stranger)
    code, message = _error(_pass(cluster, tmp_path, unique, url, runner, certSecretRef={"name": "stranger"}))
    assert code == ExitCode.AUTH
    assert f"registry {tls_world.registry.host} refused the TLS connection" in message
    assert f"Secret/{runner}/stranger (spec.certSecretRef.name)" in message
    assert "PRIVATE KEY" not in message
    assert get(cluster, "namespace", unique) is None


def test_a_proxy_secret_the_proxy_refuses_or_a_proxy_that_is_down(
    cluster: Cluster, tls_world: TLSWorld, proxy: Proxy, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    url = push_files(tls_world, unique, {"a.yaml": dump(namespace(unique))})
    _secret(cluster, runner, "registry-tls", _tls_entries(tls_world))
    wrong = "not-the-proxy-password-0451"
    _secret(cluster, runner, "wrong-proxy", _proxy_entries(proxy, password=wrong))
    refs = {"certSecretRef": {"name": "registry-tls"}, "proxySecretRef": {"name": "wrong-proxy"}}
    code, message = _error(_pass(cluster, tmp_path, unique, url, runner, **refs))
    assert code == ExitCode.AUTH
    assert f"proxy {proxy.address} (Secret/{runner}/wrong-proxy (spec.proxySecretRef.name))" in message
    assert wrong not in message and proxy.password not in message
    from tests.world.process import free_port

    down = f"http://127.0.0.1:{free_port()}"
    _secret(cluster, runner, "down-proxy", {"address": down.encode()})
    refs["proxySecretRef"] = {"name": "down-proxy"}
    code, message = _error(_pass(cluster, tmp_path, unique, url, runner, **refs))
    assert code == ExitCode.REGISTRY
    assert f"through proxy {down}" in message and "connection refused" in message
    assert get(cluster, "namespace", unique) is None


def test_serve_keeps_a_client_per_cert_and_proxy_secret(
    cluster: Cluster, tls_world: TLSWorld, proxy: Proxy, unique: str, tmp_path: Path
) -> None:
    ns, runner = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    url = push_files(tls_world, unique, {"cm.yaml": dump(configmap("served", ns, {"v": "1"}))}).split("@")[0]
    _secret(cluster, runner, "registry-tls", _tls_entries(tls_world))
    _secret(cluster, runner, "registry-proxy", _proxy_entries(proxy))
    seen = len(proxy.requests_seen())
    refs = {"certSecretRef": {"name": "registry-tls"}, "proxySecretRef": {"name": "registry-proxy"}}
    doc = sync_doc("served", url, runner, interval="1m", **refs)
    page = f"127.0.0.1:{free_port()}"
    served = start_serve(
        cluster, tmp_path, [doc], runner={"namespace": runner, "statusPage": {"address": page}}
    )
    try:
        served.wait_sync_ready("served", timeout=60)
        applied = get(cluster, "configmap", "served", ns)
        assert applied is not None and applied["data"] == {"v": "1"}
        assert f"CONNECT {tls_world.registry.host}" in " ".join(proxy.requests_seen()[seen:])
        # the status page reads the artifact's provenance with the same client (its Secrets)
        shown = requests.get(f"http://{page}/api/syncs/served", timeout=10)
        assert shown.status_code == 200, shown.text
        assert (shown.json()["commit"] or {}).get("revision") == "v1@sha1:0", shown.json()
        assert proxy.password not in served.log.read_text()
    finally:
        assert served.stop() == 0, served.tail()


def test_status_web_reads_provenance_as_the_installed_runner_does(
    cluster: Cluster, tls_world: TLSWorld, unique: str, tmp_path: Path
) -> None:
    """``status --web`` finds the runner's configuration (its ConfigMap, as ``rollback`` does) and
    reads a sync's registry with that sync's certSecretRef, not the machine's credentials."""
    runner = f"{unique}-r"
    url = push_files(tls_world, unique, {"a.yaml": dump(configmap("c", runner, {}))})
    _secret(cluster, runner, "registry-tls", _tls_entries(tls_world))
    sync = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": unique},
        "spec": {
            "url": url,
            "interval": "1m",
            "verify": {"insecureSkip": True},
            "certSecretRef": {"name": "registry-tls"},
        },
    }
    text = yaml.safe_dump_all([{"apiVersion": "lockgate.dev/v1alpha1", "kind": "Runner", "spec": {}}, sync])
    docs = relocate(build(with_config(tmp_path, "runner", text)), {"lockgate-system": runner}, unique[-6:])
    apply(cluster, docs)
    assert _pass(cluster, tmp_path, unique, url, runner, certSecretRef={"name": "registry-tls"}).error is None

    command = [*LOCKGATE, "status", "--web", "--no-open", "-n", runner, f"--kubeconfig={cluster.kubeconfig}"]
    page = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert page.stdout is not None
        announced = page.stdout.readline()
        found = re.search(r"http://\S+/", announced)
        assert found is not None, announced
        shown = requests.get(f"{found.group(0)}api/syncs/{unique}", timeout=10)
        assert shown.status_code == 200, shown.text
        assert (shown.json()["commit"] or {}).get("revision") == "v1@sha1:0", shown.json()
    finally:
        page.send_signal(signal.SIGINT)
        assert page.wait(timeout=10) == 0, page.stderr.read() if page.stderr else ""


def test_a_cert_secret_replaces_the_command_lines_tls_flags(
    cluster: Cluster, tls_world: TLSWorld, unique: str
) -> None:
    """``reconcile --config``'s flags stand for a Sync without ``certSecretRef``; a Sync's Secret
    replaces them whole (here the flags carry a client certificate the registry refuses)."""
    runner = f"{unique}-r"
    ref = registry.parse(push_files(tls_world, unique, {"a.yaml": dump(configmap("c", runner, {}))}))
    _secret(cluster, runner, "registry-tls", _tls_entries(tls_world))
    flags = TransportOptions.from_files(
        ca_file=str(tls_world.ca.cert),
        cert_file=str(tls_world.stranger.cert),
        key_file=str(tls_world.stranger.key),
    )
    secrets = SecretReader(Kube.from_kubeconfig(cluster.kubeconfig), runner)

    def options(cert_secret_ref: str | None) -> TransportOptions:
        return transportrefs.options_for(
            insecure=False, cert_secret_ref=cert_secret_ref, proxy_secret_ref=None, secrets=secrets,
            flags=flags,
        )

    with pytest.raises(AuthError) as refused:
        registry.RegistryClient.for_reference(ref, options=options(None)).resolve(ref)
    assert f"the client certificate from --cert-file {tls_world.stranger.cert}" in refused.value.message
    replaced = options("registry-tls")
    assert replaced.cert_origin.startswith(f"Secret/{runner}/registry-tls")
    assert registry.RegistryClient.for_reference(ref, options=replaced).resolve(ref) == ref.digest
