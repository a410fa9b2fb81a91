"""A private Sigstore instance on loopback, for keyless signing tests end to end.

The stack, each piece a real server:

- OIDC issuers (ours, in this process: discovery document, JWKS, ES256 ID tokens with the
  claims the test names; Fulcio fetches their keys like any issuer's), one for each kind of
  identity Fulcio is configured for: an e-mail issuer (Fulcio type ``email``), and one whose
  tokens are shaped as GitHub Actions' (``tests.world.ci_tokens``; type ``github-workflow``,
  which requires the 16 claims it reads and, as for the real issuer, builds the SAN and the
  GitHub extensions, OIDs ``1.3.6.1.4.1.57264.1.*``, on the base https://github.com/), and
  one whose tokens are GitLab CI's (``ci_tokens.gitlab_ci``; type ``ci-provider`` with the
  ``gitlab-pipeline`` provider, as the public Fulcio is configured for gitlab.com, for a
  self-hosted ``https://gitlab.example.com``: the SAN is ``https://<ci_config_ref_uri>``);
- Fulcio (``--ca ephemeralca``: a CA generated at start-up) that trusts only those issuers;
- TesseraCT (POSIX storage), the CT log whose SCT Fulcio embeds in every certificate
  (sigstore-python refuses a certificate without one) and which accepts only chains to
  Fulcio's root;
- Rekor v2 (rekor-tiles, POSIX storage), the transparency log;
- a timestamp authority (in-memory signer): Rekor v2 entries carry no integrated time, so a
  verifier needs a signed timestamp to check the certificate was valid when used.

``start_sigstore`` starts them in order, reads back Fulcio's and the TSA's generated
certificates, and writes a ``trusted_root.json`` (what verifiers trust) and a client
``trust_config.json`` (that root plus the signing config naming the four URLs), the
files sigstore-python and cosign take for a private Sigstore. Everything listens on
127.0.0.1 except Fulcio's metrics server, which upstream binds to every interface (there
is no flag for its address): it gets a free port and nothing talks to it.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from tests.world import binaries, ci_tokens
from tests.world.errors import WorldSetupError
from tests.world.process import Process, free_port, start, wait_until

#: the audience sigstore-python and Fulcio expect in an ID token
AUDIENCE = "sigstore"
#: the identity the tests sign as unless they name another
DEFAULT_IDENTITY = "ci@lockgate.test"
#: Rekor's checkpoint origin: sigstore-go (cosign) expects the host name of the log's URL
REKOR_ORIGIN = "127.0.0.1"
#: the CT log's checkpoint origin (a host name, not host:port: TesseraCT parses it as a URL)
CT_ORIGIN = "lockgate-world-ct"
OPERATOR = "lockgate test world"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _spki_der(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _timestamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _get(url: str, timeout: float = 2.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        body: bytes = resp.read()
        return body


class OIDCIssuer:
    """A minimal OpenID Connect issuer: discovery + JWKS over http, ES256 ID tokens.

    Tokens are minted in-process with ``token()`` (the way a CI hands a job its token);
    the issuer serves only what a relying party (Fulcio) fetches to check them.
    """

    def __init__(self, log: Path, *, kind: str = "email", ci_provider: str | None = None) -> None:
        #: the Fulcio issuer type it is configured as (``email``, ``github-workflow``, ``ci-provider``)
        self.kind = kind
        #: for ``ci-provider``: the key of Fulcio's ``CIIssuerMetadata`` (``gitlab-pipeline``)
        self.ci_provider = ci_provider
        self._key = ec.generate_private_key(ec.SECP256R1())
        numbers = self._key.public_key().public_numbers()
        self.kid = hashlib.sha256(_spki_der(self._key.public_key())).hexdigest()[:16]
        self._jwk = {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64url(numbers.x.to_bytes(32, "big")),
            "y": _b64url(numbers.y.to_bytes(32, "big")),
            "kid": self.kid,
            "use": "sig",
            "alg": "ES256",
        }
        self._log = log
        issuer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                documents = {
                    "/.well-known/openid-configuration": issuer.discovery(),
                    "/jwks": {"keys": [issuer._jwk]},
                }
                document = documents.get(self.path)
                body = json.dumps(document or {"error": "not found"}).encode()
                self.send_response(200 if document else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                with open(issuer._log, "a") as out:
                    out.write(f"{self.address_string()} {format % args}\n")

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="oidc-issuer", daemon=True)
        self._thread.start()

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "jwks_uri": f"{self.url}/jwks",
            "authorization_endpoint": f"{self.url}/authorize",
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
            "claims_supported": ["iss", "sub", "aud", "exp", "iat", "email", "email_verified"],
        }

    def token(
        self,
        email: str = DEFAULT_IDENTITY,
        *,
        audience: str = AUDIENCE,
        lifetime: timedelta = timedelta(minutes=10),
        claims: dict[str, Any] | None = None,
    ) -> str:
        """A signed ID token for ``email`` (verified), valid for ``lifetime``."""
        return self.mint(
            {"sub": email, "email": email, "email_verified": True} | (claims or {}),
            audience=audience,
            lifetime=lifetime,
        )

    def mint(
        self,
        claims: dict[str, Any],
        *,
        audience: str = AUDIENCE,
        lifetime: timedelta = timedelta(minutes=10),
    ) -> str:
        """A signed ID token from this issuer with ``claims`` (they win over iss, aud and the times)."""
        now = int(time.time())
        body = {
            "iss": self.url,
            "aud": audience,
            "iat": now,
            "nbf": now - 5,
            "exp": now + int(lifetime.total_seconds()),
        } | claims
        header = {"alg": "ES256", "typ": "JWT", "kid": self.kid}
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(body).encode())}"
        r, s = decode_dss_signature(self._key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return f"{signing_input}.{_b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass
class SigstoreStack:
    """A running private Sigstore and the client files that point at it."""

    directory: Path
    #: the e-mail issuer
    oidc: OIDCIssuer
    #: the GitHub-Actions-shaped issuer (``ci_tokens.github_actions``)
    github: OIDCIssuer
    #: the GitLab-CI-shaped issuer (``ci_tokens.gitlab_ci``)
    gitlab: OIDCIssuer
    fulcio_url: str
    ct_url: str
    rekor_url: str
    tsa_url: str
    trusted_root: Path
    trust_config: Path
    processes: list[Process] = field(default_factory=list)
    start_seconds: float = 0.0

    @property
    def issuer(self) -> str:
        return self.oidc.url

    def token(self, email: str = DEFAULT_IDENTITY, **kwargs: Any) -> str:
        return self.oidc.token(email, **kwargs)

    def github_token(self, claims: dict[str, Any]) -> str:
        """A token of the GitHub-shaped issuer; ``claims`` from ``ci_tokens.github_actions``."""
        return self.github.mint(claims)

    def gitlab_token(self, claims: dict[str, Any]) -> str:
        """A token of the GitLab-shaped issuer; ``claims`` from ``ci_tokens.gitlab_ci``."""
        return self.gitlab.mint(claims)

    def check(self) -> None:
        """Raise with the log tail if any server died."""
        for process in self.processes:
            process.check()

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        self.oidc.stop()
        self.github.stop()
        self.gitlab.stop()


def _ec_key(path: Path, *, pkcs8: bool = True) -> ec.EllipticCurvePrivateKey:
    key = ec.generate_private_key(ec.SECP256R1())
    fmt = serialization.PrivateFormat.PKCS8 if pkcs8 else serialization.PrivateFormat.TraditionalOpenSSL
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption()))
    path.chmod(0o600)
    return key


def _pem_chain(pem: bytes) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(pem)
    except ValueError as exc:
        raise WorldSetupError(f"cannot parse a certificate chain: {exc}") from None


def _start_fulcio(
    directory: Path, issuers: list[OIDCIssuer], ct_url: str
) -> tuple[Process, str, list[x509.Certificate]]:
    config = directory / "fulcio-config.json"
    config.write_text(
        json.dumps(
            {
                "OIDCIssuers": {
                    issuer.url: {"IssuerURL": issuer.url, "ClientID": AUDIENCE, "Type": issuer.kind}
                    | ({"CIProvider": issuer.ci_provider} if issuer.ci_provider else {})
                    for issuer in issuers
                },
                "CIIssuerMetadata": {"gitlab-pipeline": ci_tokens.fulcio_gitlab_provider()},
            }
        )
    )
    http_port, grpc_port, metrics_port = free_port(), free_port(), free_port()
    # separate HTTP and gRPC ports: fulcio 1.8.8's single-port ("duplex") mode panics at
    # start-up registering its gRPC metrics twice
    process = start(
        "fulcio",
        [
            binaries.binary("fulcio-server"),
            "serve",
            "--ca=ephemeralca",
            f"--config-path={config}",
            "--http-host=127.0.0.1",
            f"--http-port={http_port}",
            "--grpc-host=127.0.0.1",
            f"--grpc-port={grpc_port}",
            f"--metrics-port={metrics_port}",
            f"--legacy-unix-domain-socket={directory / 'fulcio-legacy.sock'}",
            f"--ct-log-url={ct_url}",
        ],
        log=directory / "fulcio.log",
        cwd=directory,  # fulcio writes fulcio.pid into its working directory
    )
    url = f"http://127.0.0.1:{http_port}"
    bundle: dict[str, Any] = {}

    def ready() -> bool:
        bundle.update(json.loads(_get(f"{url}/api/v2/trustBundle")))
        return bool(bundle.get("chains"))

    wait_until(process, ready, timeout=30, what="serving its trust bundle")
    pem = "".join(bundle["chains"][0]["certificates"]).encode()
    return process, url, _pem_chain(pem)


def _start_ct_log(directory: Path, port: int, fulcio_root: x509.Certificate) -> tuple[Process, str, bytes]:
    storage = directory / "ct-storage"
    storage.mkdir()
    key = _ec_key(directory / "ct-key.pem", pkcs8=False)  # TesseraCT reads SEC1 "EC PRIVATE KEY"
    roots = directory / "ct-roots.pem"
    roots.write_bytes(fulcio_root.public_bytes(serialization.Encoding.PEM))
    endpoint = f"127.0.0.1:{port}"
    process = start(
        "tesseract",
        [
            binaries.binary("tesseract-posix"),
            f"--http_endpoint={endpoint}",
            f"--origin={CT_ORIGIN}",
            f"--storage_dir={storage}",
            f"--private_key={directory / 'ct-key.pem'}",
            f"--roots_pem_file={roots}",
            "--ext_key_usages=CodeSigning",
            "--accept_sha1_signing_algorithms=false",
            "--checkpoint_interval=500ms",
        ],
        log=directory / "tesseract.log",
        # its OTLP metric exporter would push to a collector on localhost:4318; there is none
        env={"OTEL_METRICS_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
    )
    url = f"http://{endpoint}"
    wait_until(
        process,
        lambda: bool(json.loads(_get(f"{url}/ct/v1/get-roots"))["certificates"]),
        timeout=30,
        what="serving get-roots",
    )
    return process, url, _spki_der(key.public_key())


def _start_rekor(directory: Path) -> tuple[Process, str, bytes]:
    storage = directory / "rekor-storage"
    storage.mkdir()
    key = _ec_key(directory / "rekor-key.pem")
    http_port, grpc_port, metrics_port = free_port(), free_port(), free_port()
    process = start(
        "rekor",
        [
            binaries.binary("rekor-server-posix"),
            "serve",
            "--http-address=127.0.0.1",
            f"--http-port={http_port}",
            "--grpc-address=127.0.0.1",
            f"--grpc-port={grpc_port}",
            f"--http-metrics-port={metrics_port}",
            f"--hostname={REKOR_ORIGIN}",
            f"--storage-dir={storage}",
            f"--signer-filepath={directory / 'rekor-key.pem'}",
            "--checkpoint-interval=500ms",
        ],
        log=directory / "rekor.log",
    )
    url = f"http://127.0.0.1:{http_port}"
    wait_until(process, lambda: b"SERVING" in _get(f"{url}/healthz"), timeout=30, what="healthy")
    return process, url, _spki_der(key.public_key())


def _start_tsa(directory: Path) -> tuple[Process, str, list[x509.Certificate]]:
    port = free_port()
    process = start(
        "timestamp-authority",
        [
            binaries.binary("timestamp-server"),
            "serve",
            "--host=127.0.0.1",
            f"--port={port}",
            "--timestamp-signer=memory",
            "--disable-ntp-monitoring",  # it would query public NTP servers
        ],
        log=directory / "tsa.log",
        env={"TSA_METRICS_ADDR": f"127.0.0.1:{free_port()}"},
    )
    url = f"http://127.0.0.1:{port}"
    chain: list[x509.Certificate] = []

    def ready() -> bool:
        chain[:] = _pem_chain(_get(f"{url}/api/v1/timestamp/certchain"))
        return bool(chain)

    wait_until(process, ready, timeout=30, what="serving its certificate chain")
    return process, url, chain


def _der(cert: x509.Certificate) -> dict[str, str]:
    return {"rawBytes": _b64(cert.public_bytes(serialization.Encoding.DER))}


def _log_instance(url: str, spki: bytes, since: str) -> dict[str, Any]:
    return {
        "baseUrl": url,
        "hashAlgorithm": "SHA2_256",
        "publicKey": {
            "rawBytes": _b64(spki),
            "keyDetails": "PKIX_ECDSA_P256_SHA_256",
            "validFor": {"start": since},
        },
        # RFC 6962 log ID; Rekor v2 uses the same for ECDSA keys
        "logId": {"keyId": _b64(hashlib.sha256(spki).digest())},
    }


def _authority(name: str, url: str, chain: list[x509.Certificate], since: str) -> dict[str, Any]:
    return {
        "subject": {"organization": OPERATOR, "commonName": name},
        "uri": url,
        "certChain": {"certificates": [_der(c) for c in chain]},
        "validFor": {"start": since},
    }


def _service(url: str, version: int, since: str) -> dict[str, Any]:
    return {"url": url, "majorApiVersion": version, "validFor": {"start": since}, "operator": OPERATOR}


def trust_documents(
    *,
    oidc_url: str,
    fulcio: tuple[str, list[x509.Certificate]],
    ct_log: tuple[str, bytes],
    rekor: tuple[str, bytes],
    tsa: tuple[str, list[x509.Certificate]],
    since: datetime,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The trusted root and the signing config (protobuf-specs JSON) for the stack."""
    start_time = _timestamp(since)
    trusted_root = {
        "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "tlogs": [_log_instance(rekor[0], rekor[1], start_time)],
        "certificateAuthorities": [_authority("fulcio", fulcio[0], fulcio[1], start_time)],
        "ctlogs": [_log_instance(ct_log[0], ct_log[1], start_time)],
        "timestampAuthorities": [_authority("tsa", tsa[0], tsa[1], start_time)],
    }
    signing_config = {
        "mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
        "caUrls": [_service(fulcio[0], 1, start_time)],
        "oidcUrls": [_service(oidc_url, 1, start_time)],
        "rekorTlogUrls": [_service(rekor[0], 2, start_time)],
        "tsaUrls": [_service(f"{tsa[0]}/api/v1/timestamp", 1, start_time)],
        "rekorTlogConfig": {"selector": "ANY"},
        "tsaConfig": {"selector": "ANY"},
    }
    return trusted_root, signing_config


def start_sigstore(workdir: Path) -> SigstoreStack:
    """Build (once) and start the stack under ``workdir/sigstore``; stop it with ``stop()``."""
    for program in ("fulcio-server", "tesseract-posix", "rekor-server-posix", "timestamp-server"):
        binaries.binary(program)  # builds outside the start-up clock, and fails before starting anything
    started = time.monotonic()
    directory = workdir / "sigstore"
    directory.mkdir(parents=True)
    since = datetime.now(UTC) - timedelta(minutes=5)
    oidc = OIDCIssuer(directory / "oidc.log")
    github = OIDCIssuer(directory / "oidc-github.log", kind="github-workflow")
    gitlab = OIDCIssuer(directory / "oidc-gitlab.log", kind="ci-provider", ci_provider="gitlab-pipeline")
    processes: list[Process] = []
    try:
        ct_port = free_port()
        fulcio, fulcio_url, fulcio_chain = _start_fulcio(
            directory, [oidc, github, gitlab], f"http://127.0.0.1:{ct_port}"
        )
        processes.append(fulcio)
        ct, ct_url, ct_key = _start_ct_log(directory, ct_port, fulcio_chain[-1])
        processes.append(ct)
        rekor, rekor_url, rekor_key = _start_rekor(directory)
        processes.append(rekor)
        tsa, tsa_url, tsa_chain = _start_tsa(directory)
        processes.append(tsa)
    except BaseException:
        for process in reversed(processes):
            process.stop()
        oidc.stop()
        github.stop()
        gitlab.stop()
        raise
    trusted_root, signing_config = trust_documents(
        oidc_url=oidc.url,
        fulcio=(fulcio_url, fulcio_chain),
        ct_log=(ct_url, ct_key),
        rekor=(rekor_url, rekor_key),
        tsa=(tsa_url, tsa_chain),
        since=since,
    )
    root_path = directory / "trusted_root.json"
    root_path.write_text(json.dumps(trusted_root, indent=2))
    config_path = directory / "trust_config.json"
    config_path.write_text(
        json.dumps(
            {
                "mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
                "trustedRoot": trusted_root,
                "signingConfig": signing_config,
            },
            indent=2,
        )
    )
    return SigstoreStack(
        directory=directory,
        oidc=oidc,
        github=github,
        gitlab=gitlab,
        fulcio_url=fulcio_url,
        ct_url=ct_url,
        rekor_url=rekor_url,
        tsa_url=tsa_url,
        trusted_root=root_path,
        trust_config=config_path,
        processes=processes,
        start_seconds=time.monotonic() - started,
    )
