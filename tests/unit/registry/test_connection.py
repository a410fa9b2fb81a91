"""The transport settings: what a certSecretRef or proxySecretRef must hold, how failures read,
and that key material is loaded without a file (``lockgate.registry.connection``)."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockgate.errors import AuthError, ExitCode, RegistryError, UsageError
from lockgate.registry import connection
from lockgate.registry.connection import TransportOptions
from tests.world.pki import CertificateAuthority, KeyPair

WHERE = "Secret/ns/tls (spec.certSecretRef.name)"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[CertificateAuthority, KeyPair, KeyPair]:
    directory = tmp_path_factory.mktemp("pki")
    ca = CertificateAuthority.create(directory)
    server = ca.issue(directory / "server", "server", server=True, hosts=("127.0.0.1",))
    return ca, server, ca.issue(directory / "client", "client")


@pytest.mark.parametrize(
    ("data", "says"),
    [
        pytest.param({"caFile": b"x"}, "has no ca.crt entry (entries: caFile)", id="no-flux-entry"),
        pytest.param({}, "has no ca.crt entry (entries: none)", id="empty"),
        pytest.param({"tls.crt": b"x"}, "has no tls.key entry (entries: tls.crt)", id="cert-without-key"),
        pytest.param({"ca.crt": b"x", "tls.key": b"k"}, "has no tls.crt entry", id="key-without-cert"),
    ],
)
def test_cert_secret_entries_are_checked(data: dict[str, bytes], says: str) -> None:
    with pytest.raises(UsageError) as raised:
        TransportOptions.from_cert_secret(data, where=WHERE)
    assert raised.value.message.startswith(f"{WHERE}: {says}")


@pytest.mark.parametrize(
    ("data", "says"),
    [
        pytest.param({"username": b"u"}, "has no address entry", id="no-address"),
        pytest.param({"address": b"proxy:3128"}, "is not an http(s)://host:port URL", id="no-scheme"),
        pytest.param({"address": b"http://u:pw-0451@proxy:3128"}, "without credentials", id="userinfo"),
    ],
)
def test_proxy_secret_entries_are_checked(data: dict[str, bytes], says: str) -> None:
    with pytest.raises(UsageError) as raised:
        TransportOptions().with_proxy_secret(data, where="Secret/ns/p")
    assert says in raised.value.message and "pw-0451" not in raised.value.message


def test_proxy_credentials_go_in_the_url_quoted_and_never_in_repr() -> None:
    options = TransportOptions().with_proxy_secret(
        {"address": b"http://proxy:3128\n", "username": b"me@corp", "password": b"p:w/0451"}, where="S"
    )
    assert options.proxy is not None
    assert options.proxy.url == "http://me%40corp:p%3Aw%2F0451@proxy:3128"
    assert "0451" not in repr(options)


def test_a_client_pair_loads_without_writing_a_file(
    pki: tuple[CertificateAuthority, KeyPair, KeyPair], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca, _, client = pki
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the file fallback would land here
    options = TransportOptions.from_cert_secret(
        {
            "ca.crt": ca.pair.cert.read_bytes(),
            "tls.crt": client.cert.read_bytes(),
            "tls.key": client.key.read_bytes(),
        },
        where=WHERE,
    )
    context = options.tls_context()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert list(tmp_path.iterdir()) == []
    assert "PRIVATE KEY" not in repr(options)


def test_a_key_that_does_not_match_is_named_by_its_secret(
    pki: tuple[CertificateAuthority, KeyPair, KeyPair],
) -> None:
    _, server, client = pki
    options = TransportOptions.from_cert_secret(
        {"tls.crt": client.cert.read_bytes(), "tls.key": server.key.read_bytes()}, where=WHERE
    )
    with pytest.raises(UsageError, match="do not load"):
        options.tls_context()


@pytest.mark.parametrize(
    ("text", "kind", "says"),
    [
        pytest.param(
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer "
            "certificate",
            RegistryError,
            "signed by an unknown certificate authority); give the certificate authority that signed it with "
            "spec.certSecretRef (its ca.crt entry)",
            id="unknown-ca",
        ),
        pytest.param(
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: Hostname mismatch, certificate "
            "is not valid for 'r.example'",
            RegistryError,
            "the certificate does not name this host",
            id="hostname",
        ),
        pytest.param(
            "('Connection aborted.', SSLError(1, '[SSL: TLSV13_ALERT_CERTIFICATE_REQUIRED] tlsv13 alert "
            "certificate required'))",
            AuthError,
            "requires a client certificate it trusts, and lockgate sent no client certificate; give one with "
            "spec.certSecretRef (its tls.crt and tls.key entries)",
            id="client-certificate-required",
        ),
        pytest.param(
            "Unable to connect to proxy', OSError('Tunnel connection failed: 407 Proxy Authentication "
            "Required')",
            AuthError,
            "proxy http://proxy:3128 (from HTTPS_PROXY/HTTP_PROXY) refused the credentials for registry "
            "r.example",
            id="proxy-407",
        ),
    ],
)
def test_failures_read_as_what_to_fix(text: str, kind: type[Exception], says: str) -> None:
    options = TransportOptions(spelling=connection.FIELDS)
    found = connection.failure("r.example", Exception(text), proxy="http://proxy:3128", options=options)
    assert isinstance(found, kind)
    assert says in str(found) and "SSL:" not in str(found)


def test_a_refused_connection_is_left_to_the_retries() -> None:
    found = connection.failure(
        "r", ConnectionRefusedError("Connection refused"), proxy=None, options=TransportOptions()
    )
    assert found is None
    assert RegistryError.exit_code == ExitCode.REGISTRY


@pytest.fixture
def tls_port(pki: tuple[CertificateAuthority, KeyPair, KeyPair]) -> Iterator[int]:
    """A port that completes TLS handshakes (and then closes), on loopback."""
    _, server, _ = pki
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(server.cert), str(server.key))
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            try:
                with context.wrap_socket(conn, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    listener.close()


def test_loopback_probe_chooses_https_on_a_tls_port_and_http_elsewhere(tls_port: int) -> None:
    assert connection.probe_scheme(f"127.0.0.1:{tls_port}") == "https"
    plain = socket.create_server(("127.0.0.1", 0))  # accepts, never speaks TLS
    try:
        port = plain.getsockname()[1]
        closer = threading.Thread(target=lambda: plain.accept()[0].close(), daemon=True)
        closer.start()
        assert connection.probe_scheme(f"127.0.0.1:{port}", timeout=2) == "http"
    finally:
        plain.close()
    assert connection.probe_scheme(f"127.0.0.1:{port}") is None  # nothing listens: undecided
