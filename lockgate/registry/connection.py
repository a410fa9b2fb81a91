"""How lockgate connects to a registry: trust, client certificate, proxy, and http or https.

The transport settings live here, in one value (``TransportOptions``), made by the CLI from
``--ca-file``/``--cert-file``/``--key-file`` (``lockgate.tlsflags``; ``copy``'s ``--from-``/``--to-``
sides) and by the runner and ``lockgate images`` from a
``certSecretRef``/``proxySecretRef`` (Flux OCIRepository's fields and Secret keys), and turned
into a ``requests.Session`` by ``session_for``, which ``transport.Transport`` sends through.

Trust is one ``ssl.SSLContext`` (``lockgate.tls.TLSAdapter``): the base roots are
``$SSL_CERT_FILE``/``$SSL_CERT_DIR`` when set (as Go and OpenSSL read them), else
``$REQUESTS_CA_BUNDLE``/``$CURL_CA_BUNDLE``, else certifi's bundle (what ``requests`` used
before); a given CA is added to them, as Flux adds ``ca.crt`` to the system pool. Key
material arrives as bytes and is loaded from memory (``lockgate.tls.private_file``), so a
key from a Secret never touches a disk. A proxy from a Secret replaces the environment's
(``HTTPS_PROXY``, ``NO_PROXY``, which ``requests`` honours otherwise).

A loopback registry is tried over https first and then plain http, as go-containerregistry
pings it: ``probe_scheme`` makes one TLS handshake (no HTTP request, nothing verified) and
chooses https when the port speaks TLS. ``failure`` turns what ``requests`` raises into a
message naming the registry, the proxy and the flag or field to fix, never an x509 trace.
"""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import ssl
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import requests

from lockgate.errors import AuthError, LockgateError, RegistryError, UsageError
from lockgate.tls import TLSAdapter, private_file

#: Flux's certSecretRef entries (kubernetes.io/tls plus ca.crt)
CA_ENTRY, CERT_ENTRY, KEY_ENTRY = "ca.crt", "tls.crt", "tls.key"
#: Flux's proxySecretRef entries
PROXY_ADDRESS, PROXY_USERNAME, PROXY_PASSWORD = "address", "username", "password"
_PROBE_SECONDS = 5.0
_TUNNEL_REFUSED = re.compile(r"Tunnel connection failed: (40[17])")


@dataclass(frozen=True)
class Spelling:
    """How the user gives each setting (flags or Sync fields), for the errors that ask for it."""

    ca: str
    cert: str
    proxy: str
    insecure: str


def flag_spelling(prefix: str = "") -> Spelling:
    """The flags' spelling; ``prefix`` is a side of ``lockgate copy`` (``from-``, ``to-``)."""
    return Spelling(
        ca=f"--{prefix}ca-file (or SSL_CERT_FILE)",
        cert=f"--{prefix}cert-file and --{prefix}key-file",
        proxy="HTTPS_PROXY",
        insecure="--insecure",
    )


FLAGS = flag_spelling()
FIELDS = Spelling(
    ca="spec.certSecretRef (its ca.crt entry)",
    cert="spec.certSecretRef (its tls.crt and tls.key entries)",
    proxy="spec.proxySecretRef",
    insecure="spec.insecure",
)


@dataclass(frozen=True)
class Proxy:
    """A forward proxy (``http://host:port``) and its basic credentials; ``origin`` says where from."""

    address: str
    origin: str
    username: str = ""
    password: str = field(default="", repr=False)

    @property
    def url(self) -> str:
        """The address with the credentials in it, as ``requests`` takes them (never shown)."""
        if not self.username:
            return self.address
        parts = urllib.parse.urlsplit(self.address)
        user = urllib.parse.quote(self.username, safe="")
        secret = urllib.parse.quote(self.password, safe="")
        return parts._replace(netloc=f"{user}:{secret}@{parts.netloc}").geturl()


@dataclass(frozen=True)
class TransportOptions:
    """Everything about reaching a registry other than its credentials."""

    #: plain http (``--insecure``, ``spec.insecure``); a loopback registry is probed instead
    insecure: bool = False
    #: PEM certificates added to the base roots
    ca: bytes | None = field(default=None, repr=False)
    #: a client certificate (PEM, chain allowed) and its key, for registries that verify clients
    client_cert: bytes | None = field(default=None, repr=False)
    client_key: bytes | None = field(default=None, repr=False)
    #: where ``ca`` and the client pair came from (``--ca-file x.pem``, ``Secret/ns/n (spec.certSecretRef)``)
    ca_origin: str = ""
    cert_origin: str = ""
    proxy: Proxy | None = None
    spelling: Spelling = FLAGS

    @classmethod
    def from_files(
        cls,
        *,
        ca_file: str | None = None,
        cert_file: str | None = None,
        key_file: str | None = None,
        insecure: bool = False,
        flag_prefix: str = "",
    ) -> TransportOptions:
        """The CLI's ``--ca-file``, ``--cert-file`` and ``--key-file`` (oras' names), read once;
        ``flag_prefix`` is a side of ``lockgate copy`` (``--from-ca-file``, ``--to-ca-file``...)."""
        ca_flag, cert_flag, key_flag = (f"--{flag_prefix}{name}-file" for name in ("ca", "cert", "key"))
        if (cert_file is None) != (key_file is None):
            raise UsageError(f"{cert_flag} and {key_flag} go together: a client certificate needs its key")
        return cls(
            insecure=insecure,
            ca=_read(ca_file, ca_flag),
            client_cert=_read(cert_file, cert_flag),
            client_key=_read(key_file, key_flag),
            ca_origin=f"{ca_flag} {ca_file}" if ca_file else "",
            cert_origin=f"{cert_flag} {cert_file}" if cert_file else "",
            spelling=flag_spelling(flag_prefix),
        )

    @classmethod
    def from_cert_secret(cls, data: Mapping[str, bytes], *, where: str) -> TransportOptions:
        """Flux's ``certSecretRef`` entries: ``ca.crt`` and/or the pair ``tls.crt`` + ``tls.key``."""
        ca, cert, key = data.get(CA_ENTRY), data.get(CERT_ENTRY), data.get(KEY_ENTRY)
        entries = ", ".join(sorted(data)) or "none"
        if ca is None and cert is None and key is None:
            raise UsageError(
                f"{where}: has no {CA_ENTRY} entry (entries: {entries}); put the registry's CA "
                f"certificate (PEM) under {CA_ENTRY}, and a client certificate under {CERT_ENTRY} and "
                f"{KEY_ENTRY} if the registry asks for one"
            )
        if (cert is None) != (key is None):
            missing = KEY_ENTRY if key is None else CERT_ENTRY
            raise UsageError(
                f"{where}: has no {missing} entry (entries: {entries}); a client certificate needs both "
                f"{CERT_ENTRY} and {KEY_ENTRY}"
            )
        return cls(
            ca=ca, client_cert=cert, client_key=key, ca_origin=where, cert_origin=where, spelling=FIELDS
        )

    def with_proxy_secret(self, data: Mapping[str, bytes], *, where: str) -> TransportOptions:
        """Flux's ``proxySecretRef`` entries: ``address`` and optionally ``username`` and ``password``."""
        address = _text(data, PROXY_ADDRESS, where)
        if address is None:
            entries = ", ".join(sorted(data)) or "none"
            raise UsageError(
                f"{where}: has no {PROXY_ADDRESS} entry (entries: {entries}); set it to the proxy's URL, "
                "e.g. http://proxy.example:3128"
            )
        parts = urllib.parse.urlsplit(address)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.username:
            raise UsageError(
                f"{where}: {PROXY_ADDRESS} is not an http(s)://host:port URL without credentials (put "
                f"those under {PROXY_USERNAME} and {PROXY_PASSWORD})"
            )
        proxy = Proxy(
            address=address,
            origin=where,
            username=_text(data, PROXY_USERNAME, where) or "",
            password=_text(data, PROXY_PASSWORD, where) or "",
        )
        return dataclasses.replace(self, proxy=proxy)

    def tls_context(self) -> ssl.SSLContext:
        """The one context that decides trust for this registry (and presents the client pair)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        _base_roots(context)
        if self.ca is not None:
            try:
                context.load_verify_locations(cadata=self.ca.decode("ascii"))
            except (ssl.SSLError, UnicodeDecodeError, ValueError):
                raise UsageError(f"{self.ca_origin}: the CA certificate is not PEM") from None
        if self.client_cert is not None and self.client_key is not None:
            try:
                with private_file(self.client_cert + b"\n" + self.client_key) as path:
                    context.load_cert_chain(path)
            except (ssl.SSLError, OSError):
                raise UsageError(
                    f"{self.cert_origin}: the client certificate and key do not load (not PEM, or the key "
                    "does not match the certificate)"
                ) from None
        return context


def _read(path: str | None, flag: str) -> bytes | None:
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot read it ({exc.strerror or type(exc).__name__})") from None


def _text(data: Mapping[str, bytes], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    try:
        return value.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise UsageError(f"{where}: entry {key!r} is not UTF-8 text") from None


def _base_roots(context: ssl.SSLContext) -> None:
    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        context.load_default_certs()  # OpenSSL reads both variables here
        return
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if not bundle:
        bundle = requests.utils.DEFAULT_CA_BUNDLE_PATH  # certifi's bundle, requests' default
    if os.path.isdir(bundle):
        context.load_verify_locations(capath=bundle)
    else:
        context.load_verify_locations(cafile=bundle)


def session_for(options: TransportOptions, *, pool: int = 16) -> requests.Session:
    """A session that trusts, presents and proxies as ``options`` say."""
    session = requests.Session()
    session.mount("https://", TLSAdapter(options.tls_context(), pool=pool))
    if options.proxy is not None:
        # requests lets $HTTPS_PROXY override a session's proxies: the Secret's proxy wins here
        session.trust_env = False
        session.proxies = {"http": options.proxy.url, "https": options.proxy.url}
    return session


def probe_scheme(host: str, *, timeout: float = _PROBE_SECONDS) -> str | None:
    """``https`` when ``host`` (a loopback registry) completes a TLS handshake, ``http`` when it
    answers otherwise, None when nothing answers (not decided: ask again next time).

    Nothing is verified here: the requests that follow verify the certificate, so a TLS
    registry with an unknown CA fails with that, not with plain http spoken to a TLS port.
    A TLS alert (a client certificate required) also means the port speaks TLS."""
    name, _, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if not name or not port.isdigit():
        name, port = host, "443"
    name = name.strip("[]")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with (
            socket.create_connection((name, int(port)), timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=name if name == "localhost" else None),
        ):
            return "https"
    except ssl.SSLError as exc:
        return "https" if "alert" in str(exc).lower() else "http"
    except (ConnectionRefusedError, TimeoutError, socket.gaierror):
        return None
    except OSError:  # reset or closed mid-handshake: something that is not TLS answered
        return "http"


def proxy_for(url: str, session: requests.Session) -> str | None:
    """The proxy (scheme://host:port, no credentials) a request to ``url`` goes through, if any."""
    proxies = dict(session.proxies)
    if session.trust_env:
        for key, value in requests.utils.get_environ_proxies(url).items():
            proxies.setdefault(key, value)
    chosen = requests.utils.select_proxy(url, proxies)
    if not chosen:
        return None
    parts = urllib.parse.urlsplit(chosen if "://" in chosen else f"http://{chosen}")
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"


def failure(
    host: str, exc: Exception, *, proxy: str | None, options: TransportOptions
) -> LockgateError | None:
    """What a TLS or proxy failure means, as an error to raise at once (no retry helps); None for
    others (a refused or reset connection), which the transport retries."""
    text = str(exc)
    lower = text.lower()
    spelling = options.spelling
    if "certificate_verify_failed" in lower or "certificate verify failed" in lower:
        reason = _verify_reason(lower)
        given = f" with the CA from {options.ca_origin}" if options.ca is not None else ""
        return RegistryError(
            f"registry {host}: its TLS certificate does not verify{given} ({reason}); give the "
            f"certificate authority that signed it with {spelling.ca} ({spelling.insecure} if the "
            "registry serves plain http)"
        )
    if "alert" in lower and ("certificate" in lower or "unknown ca" in lower or "unknown_ca" in lower):
        sent = "no client certificate"
        if options.client_cert is not None:
            sent = f"the client certificate from {options.cert_origin}"
        return AuthError(
            f"registry {host} refused the TLS connection: it requires a client certificate it trusts, "
            f"and lockgate sent {sent}; give one with {spelling.cert}"
        )
    refused = _TUNNEL_REFUSED.search(text)
    if proxy is not None and refused is not None:
        # tinyproxy answers 401 where RFC 9110 says 407; both refuse the CONNECT's credentials
        return proxy_refused(host, proxy, options, status=refused.group(1))
    return None


def proxy_refused(host: str, proxy: str, options: TransportOptions, *, status: str = "407") -> AuthError:
    given = "the credentials"
    if options.proxy is not None and not options.proxy.username:
        given = "a request without credentials"
    return AuthError(
        f"proxy {proxy} ({_proxy_origin(options)}) refused {given} for registry {host} (HTTP {status}); "
        "check the proxy's username and password"
    )


def unreachable_proxy(host: str, proxy: str, options: TransportOptions, reason: str) -> RegistryError:
    return RegistryError(
        f"cannot reach registry {host} through proxy {proxy} ({_proxy_origin(options)}): {reason}; "
        "check that the proxy is up and its address"
    )


def _proxy_origin(options: TransportOptions) -> str:
    return options.proxy.origin if options.proxy is not None else "from HTTPS_PROXY/HTTP_PROXY"


def _verify_reason(lower: str) -> str:
    for marker, said in (
        ("hostname mismatch", "the certificate does not name this host"),
        ("ip address mismatch", "the certificate does not name this address"),
        ("certificate has expired", "the certificate has expired"),
        ("self-signed certificate", "it is signed by an unknown certificate authority"),
        ("self signed certificate", "it is signed by an unknown certificate authority"),
        ("unable to get local issuer", "it is signed by an unknown certificate authority"),
    ):
        if marker in lower:
            return said
    return "the certificate is not trusted"
