"""From ``Credentials`` to a ``requests.Session``: the TLS context and the ``Authorization`` header.

Second step of talking to the API server, after ``runner.kube.kubeconfig``. The server is
trusted through the kubeconfig's CA only (the system roots when it names none), as
kubectl does: the session's adapter hands urllib3 one ``ssl.SSLContext`` and stops
``requests`` from adding certifi's bundle or ``$REQUESTS_CA_BUNDLE`` to it.

Key material never touches a disk. The CA goes in through ``cadata``; a client
certificate and key given inline (or by an exec plugin) are loaded from an anonymous
in-memory file (Linux ``memfd``) that is closed right after loading; where there is no
memfd, from a 0600 file in a private 0700 directory, both removed right after loading.

The header is set per request by an ``Authenticator`` (the session's ``auth``), which
can ``refresh`` once when the server answers 401: a token file is re-read (bound service
account tokens rotate), an exec plugin is run again (``runner.kube.exec_plugin``).

``insecure-skip-tls-verify`` is said once per API server, as a log warning when the session
is built; urllib3's ``InsecureRequestWarning`` for that host only (it would print two lines
per request) is filtered out.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import ssl
import threading
import urllib.parse
import warnings
from collections.abc import Mapping
from pathlib import Path

import requests
import urllib3
from requests.auth import AuthBase

from lockgate.errors import AuthError, UsageError
from lockgate.tls import HAS_MEMFD as HAS_MEMFD  # shared with the registry seam; importable from here
from lockgate.tls import TLSAdapter as TLSAdapter
from lockgate.tls import private_file as private_file
from runner.kube import exec_plugin, kubeconfig

log = logging.getLogger("lockgate.kube")
_insecure_said: set[str] = set()
_insecure_lock = threading.Lock()


# ---- TLS -------------------------------------------------------------------------------
def _bytes(pem: kubeconfig.Pem, what: str) -> bytes:
    if isinstance(pem, bytes):
        return pem
    try:
        return pem.read_bytes()
    except OSError as exc:
        raise UsageError(
            f"cannot read the {what} {pem} ({type(exc).__name__}): check the kubeconfig"
        ) from None


def load_client_pair(
    context: ssl.SSLContext, cert: kubeconfig.Pem, key: kubeconfig.Pem, *, what: str, memfd: bool = HAS_MEMFD
) -> None:
    """Load a client certificate and key into ``context``; files directly, inline bytes from memory."""
    try:
        if isinstance(cert, Path) and isinstance(key, Path):
            context.load_cert_chain(str(cert), str(key))
            return
        chain = _bytes(cert, f"client certificate of {what}") + b"\n" + _bytes(key, f"client key of {what}")
        with private_file(chain, memfd=memfd) as path:
            context.load_cert_chain(path)
    except (ssl.SSLError, OSError):
        raise UsageError(
            f"the client certificate and key of {what} do not load (missing, not PEM, or the key does "
            "not match the certificate): regenerate the credentials"
        ) from None


def tls_context(cluster: kubeconfig.Cluster, *, where: str) -> ssl.SSLContext:
    """A client context trusting the cluster's CA only (system roots without one); none when insecure."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cluster.insecure:
        _say_insecure(cluster.server, where)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if cluster.ca is None:
        context.load_default_certs()
        return context
    data = _bytes(cluster.ca, f"certificate authority of {where}")
    try:
        context.load_verify_locations(cadata=data.decode("ascii"))
    except (ssl.SSLError, UnicodeDecodeError, ValueError):
        raise UsageError(
            f"the certificate authority of {where} is not PEM: regenerate the kubeconfig"
        ) from None
    return context


def _say_insecure(server: str, where: str) -> None:
    """Once per server: a warning of ours, and urllib3's per-request warning for that host off."""
    with _insecure_lock:
        if server in _insecure_said:
            return
        _insecure_said.add(server)
    host = urllib.parse.urlsplit(server).hostname or server
    warnings.filterwarnings(
        "ignore",
        message=f"Unverified HTTPS request is being made to host '{re.escape(host)}'",
        category=urllib3.exceptions.InsecureRequestWarning,
    )
    log.warning(
        "the API server's certificate is not verified (insecure-skip-tls-verify): anyone on the "
        "network path can read and change what lockgate sends; give the kubeconfig the cluster's "
        "certificate-authority instead",
        extra={"server": server, "kubeconfig": where},
    )


# ---- the Authorization header ---------------------------------------------------------
class Authenticator(AuthBase):
    """Sets ``Authorization`` on each request; ``generation`` counts credential changes.

    The generation a thread's last request went out with is remembered per thread, so
    ``refresh`` after that request's 401 can tell a stale credential (renewed meanwhile
    by another request: just retry) from the current one (renew it).
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._sent = threading.local()
        self.generation = 0

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        header = self.stamp()
        if header:
            request.headers["Authorization"] = header
        return request

    def stamp(self) -> str | None:
        """The ``Authorization`` header for this thread's next request (remembering which
        credential it goes out with, for ``refresh``)."""
        with self._lock:
            header = self.header()
            self._sent.generation = self.generation
        return header

    def header(self) -> str | None:
        return None

    def refresh(self) -> bool:
        """After a 401 to this thread's last request: True when a new credential is worth a retry."""
        with self._lock:
            if getattr(self._sent, "generation", self.generation) != self.generation:
                return True  # another request renewed it meanwhile
            if self._renew():
                self.generation += 1
                return True
            return False

    def _renew(self) -> bool:
        return False


class Static(Authenticator):
    """A fixed header (a kubeconfig token, basic auth), or none (client certificate, anonymous)."""

    def __init__(self, header: str | None = None) -> None:
        super().__init__()
        self._header = header

    def __repr__(self) -> str:
        return f"Static({'set' if self._header else 'none'})"

    def header(self) -> str | None:
        return self._header

    @classmethod
    def basic(cls, username: str, password: str) -> Static:
        return cls("Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii"))


class TokenFile(Authenticator):
    """A bearer token read from a file, re-read when the file changes and after a 401 (rotation)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._stamp: tuple[int, int, int, int] | None = None
        self._token = ""

    def _stat(self) -> tuple[int, int, int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)

    def _read(self) -> bool:
        stamp = self._stat()
        try:
            token = self.path.read_text().strip()
        except OSError as exc:
            raise AuthError(
                f"cannot read the token file {self.path} ({type(exc).__name__}): check that the "
                "service account token is mounted (automountServiceAccountToken) or fix tokenFile"
            ) from None
        changed = token != self._token
        self._token, self._stamp = token, stamp
        return changed

    def header(self) -> str | None:
        with self._lock:
            if (self._stamp is None or self._stat() != self._stamp) and self._read():
                self.generation += 1
            return f"Bearer {self._token}" if self._token else None

    def _renew(self) -> bool:
        return self._read()


class ExecAuthenticator(Authenticator):
    """Credentials from an exec plugin, cached until they expire and renewed once after a 401.

    A plugin's client certificate replaces the adapter's SSL context (the CA stays).
    """

    def __init__(
        self, credentials: kubeconfig.Credentials, adapter: TLSAdapter, *, environ: Mapping[str, str]
    ) -> None:
        super().__init__()
        assert credentials.exec is not None
        self._config = credentials.exec
        self._credentials = credentials
        self._adapter = adapter
        self._environ = environ
        self._current: exec_plugin.ExecCredential | None = None

    def __repr__(self) -> str:
        return f"ExecAuthenticator({self._config.command!r})"

    def _obtain(self) -> bool:
        previous = self._current
        found = exec_plugin.run(self._config, self._credentials.cluster, environ=self._environ)
        pair = (found.client_cert, found.client_key)
        if pair[0] and pair[1] and (previous is None or pair != (previous.client_cert, previous.client_key)):
            context = tls_context(self._credentials.cluster, where=self._credentials.origin)
            load_client_pair(context, pair[0], pair[1], what=f"the exec plugin {self._config.command!r}")
            self._adapter.use_context(context)
        self._current = found
        return previous is None or not found.same_as(previous)

    def header(self) -> str | None:
        with self._lock:
            if self._current is None or self._current.expired():
                self._obtain()
                self.generation += 1
            assert self._current is not None
            return f"Bearer {self._current.token}" if self._current.token else None

    def _renew(self) -> bool:
        return self._obtain()


def session_for(
    credentials: kubeconfig.Credentials, *, pool: int = 16, environ: Mapping[str, str] = os.environ
) -> tuple[requests.Session, Authenticator]:
    """A session for ``credentials`` (TLS set up, the header set per request) and its authenticator."""
    context = tls_context(credentials.cluster, where=credentials.origin)
    if credentials.client_cert is not None or credentials.client_key is not None:
        if credentials.client_cert is None or credentials.client_key is None:
            raise UsageError(
                f"{credentials.origin}: a client certificate needs its key and the key its certificate"
            )
        load_client_pair(context, credentials.client_cert, credentials.client_key, what=credentials.origin)
    adapter = TLSAdapter(context, server_hostname=credentials.cluster.tls_server_name, pool=pool)
    session = requests.Session()
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    authenticator: Authenticator
    if credentials.exec is not None:
        authenticator = ExecAuthenticator(credentials, adapter, environ=environ)
    elif credentials.token:
        authenticator = Static(f"Bearer {credentials.token}")
    elif credentials.token_file is not None:
        authenticator = TokenFile(credentials.token_file)
    elif credentials.basic is not None:
        authenticator = Static.basic(*credentials.basic)
    else:
        authenticator = Static()
    # also keeps requests from reading ~/.netrc for the API server's host
    session.auth = authenticator
    return session, authenticator
