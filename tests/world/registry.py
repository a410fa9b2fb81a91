"""An OCI registry: Debian's docker-registry (Distribution 2.8) on loopback, deletes enabled.

``start_registry(auth=True)`` adds htpasswd basic auth (bcrypt, from apache2-utils) for
auth tests; ``token=TokenAuth(...)`` makes it a token-auth registry (Distribution's ``auth:
token``, as Docker Hub and GHCR work) whose 401 names the given realm. ``public_url`` is
Distribution's ``http.host`` (the URL generated links such as upload locations name) and
``storage_redirect`` its ``redirect`` storage middleware (blob GET/HEAD answered with a 307 to
that base URL plus the blob's storage path, as a registry on S3 or a CDN answers).
``tls=ServedTLS(...)`` serves https (Distribution's ``http.tls``) with the given certificate,
and with ``clientcas`` set it requires and verifies client certificates. Storage is a
temporary directory (``Registry.data``) that goes away with the world.
"""

from __future__ import annotations

import secrets
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.world.errors import WorldSetupError
from tests.world.process import Process, free_port, start, wait_until

REGISTRY_BINARY = "docker-registry"


@dataclass(frozen=True)
class ServedTLS:
    """Distribution's ``http.tls``: the serving certificate and key, and the CAs whose client
    certificates it accepts (none: no client certificate asked for)."""

    certificate: Path
    key: Path
    clientcas: tuple[Path, ...] = ()
    #: what the readiness check trusts and presents (a CA file; a client pair when clientcas)
    ca: Path | None = None
    client: tuple[Path, Path] | None = None


@dataclass
class Registry:
    """A running registry. ``host`` is ``127.0.0.1:<port>``; it speaks plain http unless ``tls``."""

    host: str
    process: Process
    username: str | None = None
    password: str | None = None
    #: the filesystem storage driver's root: blobs are under docker/registry/v2/blobs/
    data: Path | None = None
    tls: ServedTLS | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}"

    def oci(self, repository: str, ref: str = "") -> str:
        """An ``oci://`` URL into this registry; ``ref`` is ``:tag`` or ``@sha256:...``."""
        return f"oci://{self.host}/{repository}{ref}"

    def stop(self) -> None:
        self.process.stop()


@dataclass(frozen=True)
class TokenAuth:
    """Distribution's ``auth: token``: tokens from ``realm``, for ``service``, signed by ``issuer``
    with the key of the certificate in ``certificate`` (a PEM file)."""

    realm: str
    service: str
    issuer: str
    certificate: Path


def _config(
    root: Path,
    port: int,
    htpasswd: Path | None,
    *,
    token: TokenAuth | None = None,
    public_url: str | None = None,
    storage_redirect: str | None = None,
    tls: ServedTLS | None = None,
) -> str:
    auth = f"auth:\n  htpasswd:\n    realm: lockgate-test\n    path: {htpasswd}\n" if htpasswd else ""
    if token is not None:
        auth = (
            f"auth:\n  token:\n    realm: {token.realm}\n    service: {token.service}\n"
            f"    issuer: {token.issuer}\n    rootcertbundle: {token.certificate}\n"
        )
    host = f"  host: {public_url}\n" if public_url else ""
    middleware = (
        "middleware:\n  storage:\n    - name: redirect\n"
        f"      options:\n        baseurl: {storage_redirect}\n"
        if storage_redirect
        else ""
    )
    served = ""
    if tls is not None:
        served = f"  tls:\n    certificate: {tls.certificate}\n    key: {tls.key}\n"
        if tls.clientcas:
            served += "    clientcas:\n" + "".join(f"      - {ca}\n" for ca in tls.clientcas)
    return (
        "version: 0.1\n"
        "log:\n  level: info\n  accesslog:\n    disabled: true\n"
        f"storage:\n  filesystem:\n    rootdirectory: {root / 'data'}\n  delete:\n    enabled: true\n"
        "  cache:\n    blobdescriptor: inmemory\n"
        f"http:\n  addr: 127.0.0.1:{port}\n{host}{served}  headers:\n    X-Content-Type-Options: [nosniff]\n"
        f"{auth}{middleware}"
    )


def start_registry(
    workdir: Path,
    *,
    auth: bool = False,
    name: str = "registry",
    token: TokenAuth | None = None,
    public_url: str | None = None,
    storage_redirect: str | None = None,
    tls: ServedTLS | None = None,
) -> Registry:
    binary = shutil.which(REGISTRY_BINARY)
    if binary is None:
        raise WorldSetupError(
            "starting the registry: 'docker-registry' is not installed "
            "(run 'make setup', which installs Debian's docker-registry)"
        )
    root = workdir / name
    root.mkdir(parents=True, exist_ok=True)
    username = password = None
    htpasswd = None
    if auth:
        if shutil.which("htpasswd") is None:
            raise WorldSetupError("starting the auth registry: 'htpasswd' (apache2-utils) is not installed")
        username, password = "lockgate", secrets.token_urlsafe(12)
        htpasswd = root / "htpasswd"
        out = subprocess.run(
            ["htpasswd", "-Bbn", username, password], capture_output=True, text=True, check=True
        )
        htpasswd.write_text(out.stdout)
    port = free_port()
    config = root / "config.yml"
    config.write_text(
        _config(
            root, port, htpasswd, token=token, public_url=public_url, storage_redirect=storage_redirect,
            tls=tls,
        )
    )
    process = start(
        name, [binary, "serve", config], log=root / "registry.log", env={"OTEL_TRACES_EXPORTER": "none"}
    )
    registry = Registry(
        host=f"127.0.0.1:{port}",
        process=process,
        username=username,
        password=password,
        data=root / "data",
        tls=tls,
    )
    context = None
    if tls is not None:
        context = ssl.create_default_context(cafile=str(tls.ca) if tls.ca else None)
        if tls.client is not None:
            context.load_cert_chain(str(tls.client[0]), str(tls.client[1]))

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"{registry.url}/v2/", timeout=1, context=context) as resp:
                return bool(resp.status == 200)
        except urllib.error.HTTPError as exc:
            return exc.code == 401 and (auth or token is not None)
        except OSError:
            return False

    wait_until(process, ready, timeout=15, what="answering /v2/")
    return registry
