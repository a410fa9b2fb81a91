"""TLS material in memory, no leaked descriptors, the Authorization header per credential kind."""

from __future__ import annotations

import os
import ssl
import stat
import threading
from pathlib import Path

import pytest
import requests

from lockgate.errors import AuthError, UsageError
from runner.kube import auth, kubeconfig
from tests.world.pki import CertificateAuthority, KeyPair


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[CertificateAuthority, KeyPair, KeyPair]:
    directory = tmp_path_factory.mktemp("pki")
    ca = CertificateAuthority.create(directory)
    return ca, ca.issue(directory / "alice", "alice"), ca.issue(directory / "bob", "bob")


def inline(ca: CertificateAuthority, pair: KeyPair) -> kubeconfig.Credentials:
    return kubeconfig.Credentials(
        cluster=kubeconfig.Cluster("https://127.0.0.1:1", ca=ca.pair.cert.read_bytes()),
        origin="test",
        client_cert=pair.cert.read_bytes(),
        client_key=pair.key.read_bytes(),
    )


# ---- key material never on disk -----------------------------------------------------------
def test_memfd_path_reads_back_and_is_closed_afterwards() -> None:
    # the project's machines are Linux: keys must go through memfd here, never a file
    assert auth.HAS_MEMFD, "no memfd_create or /proc/self/fd: inline keys would use the file fallback"
    with auth.private_file(b"secret bytes") as path:
        assert path.startswith("/proc/self/fd/")
        assert Path(path).read_bytes() == b"secret bytes"
        fd = int(path.rsplit("/", 1)[1])
    with pytest.raises(OSError):
        os.fstat(fd)


def test_fallback_file_is_private_and_removed(tmp_path: Path) -> None:
    with auth.private_file(b"secret bytes", memfd=False, directory=str(tmp_path)) as path:
        held = Path(path)
        assert held.read_bytes() == b"secret bytes"
        assert stat.S_IMODE(held.stat().st_mode) == 0o600
        assert stat.S_IMODE(held.parent.stat().st_mode) == 0o700
    assert list(tmp_path.iterdir()) == []


def test_fallback_file_is_removed_when_loading_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), auth.private_file(b"k", memfd=False, directory=str(tmp_path)):
        raise RuntimeError("load failed")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("memfd", [pytest.param(True, id="memfd"), pytest.param(False, id="private-file")])
def test_inline_pair_loads_and_a_mismatched_one_is_refused(
    pki: tuple[CertificateAuthority, KeyPair, KeyPair], memfd: bool
) -> None:
    assert auth.HAS_MEMFD or not memfd, "no memfd on this Linux machine"
    _, alice, bob = pki
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    auth.load_client_pair(context, alice.cert.read_bytes(), alice.key.read_bytes(), what="u", memfd=memfd)
    with pytest.raises(UsageError, match="do not load") as raised:
        auth.load_client_pair(context, alice.cert.read_bytes(), bob.key.read_bytes(), what="u", memfd=memfd)
    assert "PRIVATE KEY" not in str(raised.value)


def test_a_file_pair_and_a_mixed_pair_load(pki: tuple[CertificateAuthority, KeyPair, KeyPair]) -> None:
    _, alice, _ = pki
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    auth.load_client_pair(context, alice.cert, alice.key, what="u")
    auth.load_client_pair(context, alice.cert, alice.key.read_bytes(), what="u")


def test_building_sessions_leaks_no_descriptors(pki: tuple[CertificateAuthority, KeyPair, KeyPair]) -> None:
    ca, alice, _ = pki
    auth.session_for(inline(ca, alice))[0].close()  # imports and caches settle first
    before = sorted(os.listdir("/proc/self/fd"))
    for _ in range(20):
        session, _ = auth.session_for(inline(ca, alice))
        session.close()
    assert sorted(os.listdir("/proc/self/fd")) == before


# ---- trust: the kubeconfig's CA only ------------------------------------------------------
def test_the_context_trusts_exactly_the_kubeconfig_ca(
    pki: tuple[CertificateAuthority, KeyPair, KeyPair],
) -> None:
    ca, _, _ = pki
    context = auth.tls_context(kubeconfig.Cluster("https://x", ca=ca.pair.cert.read_bytes()), where="t")
    assert context.cert_store_stats()["x509_ca"] == 1
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_REQUIRED, True)
    from_file = auth.tls_context(kubeconfig.Cluster("https://x", ca=ca.pair.cert), where="t")
    assert from_file.cert_store_stats()["x509_ca"] == 1


def test_insecure_skip_tls_verify_checks_nothing() -> None:
    context = auth.tls_context(kubeconfig.Cluster("https://x", insecure=True), where="t")
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_NONE, False)


def test_a_ca_that_is_not_pem_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="is not PEM"):
        auth.tls_context(kubeconfig.Cluster("https://x", ca=b"\x30\x82garbage"), where="t")


def test_the_adapter_never_hands_urllib3_a_ca_bundle(
    pki: tuple[CertificateAuthority, KeyPair, KeyPair], tmp_path: Path
) -> None:
    ca, _, _ = pki
    context = auth.tls_context(kubeconfig.Cluster("https://x", ca=ca.pair.cert.read_bytes()), where="t")
    adapter = auth.TLSAdapter(context)
    request = requests.Request("GET", "https://127.0.0.1:6443/api").prepare()
    host, pool = adapter.build_connection_pool_key_attributes(request, str(tmp_path / "bundle.pem"))
    assert host == {"scheme": "https", "host": "127.0.0.1", "port": 6443}
    assert pool == {"cert_reqs": "CERT_REQUIRED"}


# ---- the Authorization header ---------------------------------------------------------------
def header(session: requests.Session) -> str | None:
    return session.prepare_request(requests.Request("GET", "https://127.0.0.1:1/api")).headers.get(
        "Authorization"
    )


def credentials(**fields: object) -> kubeconfig.Credentials:
    cluster = kubeconfig.Cluster("https://127.0.0.1:1", insecure=True)
    return kubeconfig.Credentials(cluster=cluster, origin="t", **fields)  # type: ignore[arg-type]


def test_basic_auth_header() -> None:
    # kube-apiserver dropped basic auth in 1.19: the header is all there is to test
    session, _ = auth.session_for(credentials(basic=("admin", "p@ss:word")))
    assert header(session) == "Basic YWRtaW46cEBzczp3b3Jk"


def test_bearer_token_header_and_anonymous() -> None:
    assert header(auth.session_for(credentials(token="abc"))[0]) == "Bearer abc"
    assert header(auth.session_for(credentials())[0]) is None


def test_token_file_is_reread_when_it_is_replaced(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    session, authenticator = auth.session_for(credentials(token_file=token))
    assert header(session) == "Bearer first"
    generation = authenticator.generation
    replacement = tmp_path / "new"
    replacement.write_text("second")
    replacement.replace(token)  # what the kubelet's atomic writer does
    assert header(session) == "Bearer second"
    assert authenticator.generation == generation + 1


def test_token_file_is_reread_after_a_401_even_when_it_looks_unchanged(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("aaaa")
    session, authenticator = auth.session_for(credentials(token_file=token))
    assert header(session) == "Bearer aaaa"
    before = token.stat()
    with token.open("r+") as handle:
        handle.write("bbbb")
    os.utime(token, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert header(session) == "Bearer aaaa"  # same inode, size and mtime
    assert authenticator.refresh() is True
    assert header(session) == "Bearer bbbb"
    assert authenticator.refresh() is False  # nothing new: no retry


def test_a_missing_token_file_is_an_auth_error(tmp_path: Path) -> None:
    session, _ = auth.session_for(credentials(token_file=tmp_path / "token"))
    with pytest.raises(AuthError, match="cannot read the token file"):
        header(session)


def test_a_401_after_another_thread_renewed_retries_without_renewing_again(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("old")
    session, authenticator = auth.session_for(credentials(token_file=token))
    assert header(session) == "Bearer old"  # this thread's request goes out with "old"
    token.write_text("new")
    other = threading.Thread(target=header, args=(session,))
    other.start()
    other.join()  # another thread's request picked "new" up
    renewed = authenticator.generation
    assert authenticator.refresh() is True  # so this thread's 401 is retried with "new"...
    assert authenticator.generation == renewed  # ...without renewing again
