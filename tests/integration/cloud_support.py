"""Stand-ins for the clouds' token services, and a registry that accepts only what they mint.

The clouds cannot run here, so one local HTTP server (``CloudStandIn``) implements the
documented requests and answers of each token endpoint lockgate calls:

- AWS STS ``AssumeRoleWithWebIdentity`` (form POST, XML answer), the EKS Pod Identity agent
  (GET with the token file's content as ``Authorization``, JSON), and ECR
  ``GetAuthorizationToken`` (``X-Amz-Target`` JSON 1.1, SigV4-signed: the signature is checked
  with the secret key the stand-in handed out);
- the GCE metadata server's token (``Metadata-Flavor: Google``), Google STS
  (``/v1/token`` token exchange) and IAM Credentials ``generateAccessToken``;
- Entra ID's token endpoint (``/<tenant>/oauth2/v2.0/token``, client assertion) and ACR's
  ``/oauth2/exchange``;
- GitHub Actions' ID token endpoint (``ACTIONS_ID_TOKEN_REQUEST_URL`` with its bearer token,
  answering ``{"value": JWT}``), which google-github-actions/auth's credentials file names.

It is also the registry's edge: ``/v2/`` requests pass through to the real registry
(Distribution, ``auth: token``), whose token realm is this server's ``/token``: it signs
Distribution JWTs (``TokenService.mint``) only for the registry credentials a cloud endpoint
minted here (ECR's ``AWS``/password, ``oauth2accesstoken``/access token, ACR's refresh token).
``refusing`` makes every cloud endpoint answer its documented refusal (an expired or wrong
token); ``counts`` records requests per endpoint. ``resolving`` maps the cloud registry names
to this server for the process, as a hosts-file line would (the tests cannot edit /etc/hosts).
"""

from __future__ import annotations

import base64
import datetime
import json
import secrets
import socket
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import requests
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from lockgate.registry.cloud import sigv4
from tests.integration.registry_front_support import SERVICE, TokenService, _send

ECR_HOST = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
GAR_HOST = "europe-west4-docker.pkg.dev"
ACR_HOST = "lockgatetest.azurecr.io"
_JSON = {"Content-Type": "application/json"}
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "server", "date"}


def jwt_claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    value: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return value


def verify_es256(token: str, public_pem: bytes) -> bool:
    """The API server's ServiceAccount token signature (ES256, the world's EC signing key)."""
    head, payload, signature = token.split(".")
    raw = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
    key = serialization.load_pem_public_key(public_pem)
    assert isinstance(key, ec.EllipticCurvePublicKey)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    try:
        key.verify(der, f"{head}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
    except Exception:
        return False
    return True


class CloudStandIn(TokenService):
    def __init__(self, directory: Path, *, lifetime: int = 3600) -> None:
        self.lifetime = lifetime
        self.refusing = False
        self.counts: Counter[str] = Counter()
        #: web identity / federated tokens the "cloud" trusts (IRSA file, Azure file, GCP subject)
        self.trusted_tokens: set[str] = set()
        #: when set, ServiceAccount tokens signed by this key (the API server's) are trusted too
        self.issuer_key: bytes | None = None
        self.pod_identity_token = secrets.token_urlsafe(16)
        self.actions_request_token = secrets.token_urlsafe(16)
        self._aws_keys: dict[str, sigv4.AwsKeys] = {}
        self._registry_pairs: set[tuple[str, str]] = set()
        self._refresh: set[str] = set()
        self._bearers: set[str] = set()
        #: who each minted credential was for (role, client...), as the registry sees them
        self.subjects: list[str] = []
        #: (time.monotonic(), subject) of every registry credential minted
        self.minted_at: list[tuple[float, str]] = []
        self.registry = ""  # set once the registry runs: where /v2/ passes through to
        self._guard = threading.Lock()
        super().__init__(directory, username="unused", password=secrets.token_urlsafe(8))

    # -- helpers -------------------------------------------------------------------------
    def _trusted(self, token: str, audience: str) -> str | None:
        """The subject of ``token`` when the cloud would accept it for ``audience``."""
        if token in self.trusted_tokens:
            return "file-token"
        if self.issuer_key is None or token.count(".") != 2:
            return None
        claims = jwt_claims(token)
        auds = claims.get("aud") or []
        if verify_es256(token, self.issuer_key) and audience in auds and claims.get("exp", 0) > time.time():
            return str(claims.get("sub"))
        return None

    def _count(self, what: str) -> None:
        with self._guard:
            self.counts[what] += 1

    def _registry_cred(self, username: str, subject: str) -> str:
        secret = secrets.token_urlsafe(24)
        with self._guard:
            self._registry_pairs.add((username, secret))
            self.subjects.append(subject)
            self.minted_at.append((time.monotonic(), subject))
        return secret

    def revoke(self) -> None:
        """Every registry credential minted so far stops working (a revoked or rotated key)."""
        with self._guard:
            self._registry_pairs.clear()
            self._refresh.clear()

    def expires(self) -> float:
        return time.time() + self.lifetime

    # -- routing -------------------------------------------------------------------------
    def _answer(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        url = urllib.parse.urlsplit(handler.path)
        form = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode(errors="replace")).items()}
        target = handler.headers.get("X-Amz-Target", "")
        if url.path.startswith("/v2/"):
            return self._pass_through(handler, body)
        if url.path == "/token":
            return self._registry_token(handler, url, form)
        if url.path == "/aws/sts/" and form.get("Action") == "AssumeRoleWithWebIdentity":
            return self._sts(handler, form)
        if url.path == "/aws/ecr/" and target.endswith("GetAuthorizationToken"):
            return self._ecr(handler, body)
        if url.path == "/aws/pod-identity":
            return self._pod_identity(handler)
        if url.path.endswith("/service-accounts/default/token"):
            return self._metadata(handler)
        if url.path == "/gcp/sts/v1/token":
            return self._gcp_sts(handler, form)
        if url.path.endswith(":generateAccessToken"):
            return self._gcp_iam(handler)
        if url.path.endswith("/oauth2/v2.0/token"):
            return self._entra(handler, form)
        if url.path == "/oauth2/exchange":
            return self._acr_exchange(handler, form)
        if url.path == "/actions/idtoken":
            return self._actions_id_token(handler, url)
        _send(handler, 404, b"{}", _JSON)

    # -- aws -----------------------------------------------------------------------------
    def _sts(self, handler: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
        self._count("aws-sts")
        subject = self._trusted(form.get("WebIdentityToken", ""), "sts.amazonaws.com")
        if self.refusing or subject is None:
            error = (
                "<ErrorResponse><Error><Type>Sender</Type><Code>ExpiredTokenException</Code>"
                "<Message>Token expired</Message></Error></ErrorResponse>"
            )
            return _send(handler, 400, error.encode(), {"Content-Type": "text/xml"})
        keys = self._new_keys(f"{form.get('RoleArn')} as {subject}")
        expiry = datetime.datetime.fromtimestamp(self.expires(), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        xml = (
            "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
            f"<AccessKeyId>{keys.access_key_id}</AccessKeyId><SecretAccessKey>{keys.secret_access_key}"
            f"</SecretAccessKey><SessionToken>{keys.session_token}</SessionToken><Expiration>{expiry}"
            "</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"
        )
        _send(handler, 200, xml.encode(), {"Content-Type": "text/xml"})

    def session_keys(self, who: str) -> sigv4.AwsKeys:
        """Keys as aws-actions/configure-aws-credentials exports them (a role's session)."""
        return self._new_keys(who)

    def _new_keys(self, who: str) -> sigv4.AwsKeys:
        keys = sigv4.AwsKeys(
            "ASIA" + secrets.token_hex(8).upper(), secrets.token_urlsafe(30), secrets.token_urlsafe(20)
        )
        with self._guard:
            self._aws_keys[keys.access_key_id] = keys
            self._aws_keys[keys.access_key_id + "#who"] = sigv4.AwsKeys(who, "")
        return keys

    def _pod_identity(self, handler: BaseHTTPRequestHandler) -> None:
        self._count("aws-pod-identity")
        if self.refusing or handler.headers.get("Authorization") != self.pod_identity_token:
            return _send(handler, 401, b'{"code":"AccessDeniedException"}', _JSON)
        keys = self._new_keys("pod-identity")
        expiry = datetime.datetime.fromtimestamp(self.expires(), datetime.UTC).isoformat()
        answer = {
            "AccessKeyId": keys.access_key_id,
            "SecretAccessKey": keys.secret_access_key,
            "Token": keys.session_token,
            "Expiration": expiry,
        }
        _send(handler, 200, json.dumps(answer).encode(), _JSON)

    def _ecr(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        self._count("aws-ecr")
        auth = handler.headers.get("Authorization", "")
        key_id = auth.partition("Credential=")[2].partition("/")[0]
        with self._guard:
            keys, who = self._aws_keys.get(key_id), self._aws_keys.get(key_id + "#who")
        date = handler.headers.get("X-Amz-Date", "")
        ok = keys is not None and who is not None and not self.refusing
        if keys is not None:
            region = auth.partition("Credential=")[2].split("/")[2]
            signed = sigv4.sign(
                "POST",
                f"http://{handler.headers['Host']}{handler.path}",
                {
                    "Content-Type": handler.headers["Content-Type"],
                    "X-Amz-Target": handler.headers["X-Amz-Target"],
                },
                body,
                keys=keys,
                region=region,
                service="ecr",
                now=datetime.datetime.strptime(date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC),
            )
            ok = ok and signed["Authorization"] == auth
        if not ok or who is None:
            return _send(handler, 400, b'{"__type":"UnrecognizedClientException"}', _JSON)
        password = self._registry_cred("AWS", who.access_key_id)
        token = base64.b64encode(f"AWS:{password}".encode()).decode()
        answer = {"authorizationData": [{"authorizationToken": token, "expiresAt": self.expires()}]}
        _send(handler, 200, json.dumps(answer).encode(), _JSON)

    # -- gcp -----------------------------------------------------------------------------
    def _metadata(self, handler: BaseHTTPRequestHandler) -> None:
        self._count("gcp-metadata")
        if self.refusing or handler.headers.get("Metadata-Flavor") != "Google":
            return _send(handler, 403, b'{"error":"access_denied"}', _JSON)
        secret = self._registry_cred("oauth2accesstoken", "metadata-default")
        answer = {"access_token": secret, "expires_in": self.lifetime, "token_type": "Bearer"}
        _send(handler, 200, json.dumps(answer).encode(), _JSON)

    def _gcp_sts(self, handler: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
        self._count("gcp-sts")
        subject = self._trusted(form.get("subject_token", ""), form.get("audience", ""))
        exchange = form.get("grant_type") == "urn:ietf:params:oauth:grant-type:token-exchange"
        if self.refusing or subject is None or not exchange:
            return _send(handler, 400, b'{"error":"invalid_grant"}', _JSON)
        # a federated token: usable directly (GAR grants to principals) or to impersonate
        secret = self._registry_cred("oauth2accesstoken", f"{form.get('audience')} {subject}")
        with self._guard:
            self._bearers.add(secret)
        answer = {"access_token": secret, "expires_in": self.lifetime, "token_type": "Bearer"}
        _send(handler, 200, json.dumps(answer).encode(), _JSON)

    def _gcp_iam(self, handler: BaseHTTPRequestHandler) -> None:
        self._count("gcp-iam")
        bearer = handler.headers.get("Authorization", "").removeprefix("Bearer ")
        if self.refusing or bearer not in self._bearers:
            return _send(handler, 401, b'{"error":{"code":401,"status":"UNAUTHENTICATED"}}', _JSON)
        account = urllib.parse.unquote(handler.path).rsplit("/", 1)[-1].split(":")[0]
        secret = self._registry_cred("oauth2accesstoken", account)
        expiry = datetime.datetime.fromtimestamp(self.expires(), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        _send(handler, 200, json.dumps({"accessToken": secret, "expireTime": expiry}).encode(), _JSON)

    # -- azure ---------------------------------------------------------------------------
    def _entra(self, handler: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
        self._count("azure-entra")
        subject = self._trusted(form.get("client_assertion", ""), "api://AzureADTokenExchange")
        if self.refusing or subject is None or form.get("grant_type") != "client_credentials":
            return _send(handler, 401, b'{"error":"invalid_client"}', _JSON)
        access = secrets.token_urlsafe(24)
        with self._guard:
            self._bearers.add(access)
            self.subjects.append(f"client {form.get('client_id')} as {subject}")
        _send(handler, 200, json.dumps({"access_token": access, "expires_in": self.lifetime}).encode(), _JSON)

    def _acr_exchange(self, handler: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
        self._count("azure-acr-exchange")
        if self.refusing or form.get("access_token") not in self._bearers:
            return _send(handler, 401, b'{"errors":[{"code":"UNAUTHORIZED"}]}', _JSON)
        claims = (
            base64.urlsafe_b64encode(json.dumps({"exp": int(self.expires())}).encode()).decode().rstrip("=")
        )
        refresh = f"e30.{claims}.{secrets.token_urlsafe(16)}"
        with self._guard:
            self._refresh.add(refresh)
        _send(handler, 200, json.dumps({"refresh_token": refresh}).encode(), _JSON)

    # -- GitHub Actions' ID token endpoint (ACTIONS_ID_TOKEN_REQUEST_URL) -------------
    def _actions_id_token(self, handler: BaseHTTPRequestHandler, url: Any) -> None:
        self._count("actions-idtoken")
        if handler.headers.get("Authorization") != f"bearer {self.actions_request_token}":
            return _send(handler, 401, b'{"message":"Bad credentials"}', _JSON)
        audience = urllib.parse.parse_qs(url.query).get("audience", [""])[0]
        token = f"actions-{audience}-{secrets.token_hex(4)}"
        with self._guard:
            self.trusted_tokens.add(token)
        _send(handler, 200, json.dumps({"count": 1, "value": token}).encode(), _JSON)

    # -- the registry's edge and its token realm ---------------------------------------
    def _registry_token(self, handler: BaseHTTPRequestHandler, url: Any, form: dict[str, str]) -> None:
        self._count("registry-token")
        query = {k: v for k, v in urllib.parse.parse_qs(url.query).items()}
        if handler.command == "POST":
            ok = form.get("grant_type") == "refresh_token" and form.get("refresh_token") in self._refresh
            scopes = form.get("scope", "").split()
        else:
            pair = base64.b64decode(handler.headers.get("Authorization", "Basic ").split(" ", 1)[1] or b"")
            user, _, password = pair.decode(errors="replace").partition(":")
            ok = (user, password) in self._registry_pairs
            scopes = query.get("scope", [])
        if not ok:
            return _send(handler, 401, b'{"details":"credentials not minted here"}', _JSON)
        token = self.mint(scopes, "cloud")
        _send(handler, 200, json.dumps({"token": token, "access_token": token}).encode(), _JSON)

    def _pass_through(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP}
        headers["Host"] = handler.headers["Host"]
        reply = requests.request(
            handler.command,
            self.registry + handler.path,
            headers=headers,
            data=body or None,
            allow_redirects=False,
            timeout=60,
        )
        _send(handler, reply.status_code, reply.content, dict(reply.headers))


@contextmanager
def resolving(names: list[str]) -> Iterator[None]:
    """``names`` resolve to 127.0.0.1 in this process (an /etc/hosts line, in-process)."""
    original = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        return original("127.0.0.1" if host in names else host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo
    try:
        yield
    finally:
        socket.getaddrinfo = original


__all__ = ["ACR_HOST", "ECR_HOST", "GAR_HOST", "SERVICE", "CloudStandIn", "resolving"]
