"""Stand-ins for the clouds' token services, and a registry that accepts only what they mint.

The clouds cannot run here, so one local HTTP server (``CloudStandIn``) implements the
documented requests and answers of each token endpoint lockgate calls, as a strict judge:
every field the service documents is checked and a request that differs is refused with the
service's documented error body (``cloud_aws``, ``cloud_gcp``, ``cloud_azure`` say which rule
gives which refusal; ``refusals`` records them):

- AWS STS ``AssumeRoleWithWebIdentity``, the EKS Pod Identity agent and ECR
  ``GetAuthorizationToken``, whose SigV4 signature is verified with botocore;
- the GCE metadata server's token, Google STS (``/v1/token`` token exchange) and IAM
  Credentials ``generateAccessToken``;
- Entra ID's token endpoint (``/<tenant>/oauth2/v2.0/token``, client assertion) and its OpenID
  configuration, also served over TLS (``tls_url``: MSAL and azure-identity take only https
  authorities), and ACR's ``/oauth2/exchange``;
- GitHub Actions' ID token endpoint (``ACTIONS_ID_TOKEN_REQUEST_URL`` with its bearer token,
  answering ``{"value": JWT}``), which google-github-actions/auth's credentials file names.

The clouds' own SDKs (botocore, google-auth, azure-identity) are sent against the same
endpoints by tests/integration/test_cloud_sdk_oracles.py and must obtain the same tokens as
lockgate: answers are derived from the fields that decide them (``Judge.derive``).

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
import json
import re
import secrets
import socket
import ssl
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import requests

from tests.integration.cloud_aws import AwsJudge
from tests.integration.cloud_azure import AzureJudge
from tests.integration.cloud_gcp import GcpJudge
from tests.integration.cloud_judge import JSON, Refusal
from tests.integration.registry_front_support import SERVICE, _Recording, _send
from tests.world.pki import CertificateAuthority

ECR_HOST = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
GAR_HOST = "europe-west4-docker.pkg.dev"
ACR_HOST = "lockgatetest.azurecr.io"
_JSON = {"Content-Type": JSON}
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "server", "date"}


#: changes a request as it arrives: may rewrite ``handler.path`` and ``handler.headers``;
#: returns the body
Tamper = Callable[[BaseHTTPRequestHandler, bytes], bytes]

#: the stand-in's paths: AWS endpoints as AWS_ENDPOINT_URL_STS/ECR name them, Google's and
#: Entra's under the paths their clients append to a base URL
_ENDPOINTS = {
    "/token": "registry-token",
    "/aws/sts/": "aws-sts",
    "/aws/ecr/": "aws-ecr",
    "/aws/pod-identity": "aws-pod-identity",
    "/gcp/sts/v1/token": "gcp-sts",
    "/computeMetadata/v1/instance/service-accounts/default/token": "gcp-metadata",
    "/oauth2/exchange": "azure-acr-exchange",
    "/actions/idtoken": "actions-idtoken",
}
_PATTERNS = (
    (r"/v2/.*", "registry"),
    (r".*/v1/projects/-/serviceAccounts/[^/]+:generateAccessToken", "gcp-iam"),
    (r"/[^/]+/v2\.0/\.well-known/openid-configuration", "azure-openid"),
    (r"/[^/]+/oauth2/v2\.0/token", "azure-entra"),
)


class CloudStandIn(AwsJudge, GcpJudge, AzureJudge):
    def __init__(self, directory: Path, *, lifetime: int = 3600) -> None:
        self.gcp_providers = set()
        self.azure_apps = {}
        self.exchanged = []
        #: a test's deliberate change to every request for one endpoint, made on arrival
        #: (``Tamper``): a broken request, to show the judge refuses it with the named error
        self.tamper: tuple[str, Tamper] | None = None
        super().__init__(directory, lifetime=lifetime)
        # the same endpoints over TLS, from a CA of the test's own (``ca``: what clients trust)
        authority = CertificateAuthority.create(directory, name="cloud-standin-ca")
        pair = authority.issue(directory / "cloud-standin", "127.0.0.1", server=True, hosts=("127.0.0.1",))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(pair.cert), str(pair.key))
        self.ca = authority.pair.cert
        self._tls = _Recording("cloud-standin-tls", self._answer, tls=context)

    @property
    def tls_url(self) -> str:
        return f"https://{self._tls.host}"

    def stop(self) -> None:
        self._tls.stop()
        super().stop()

    def gcp_provider(self, audience: str) -> str:
        """Make the workload identity provider ``audience`` exist; returns it."""
        with self._guard:
            self.gcp_providers.add(audience)
        return audience

    # -- routing -------------------------------------------------------------------------
    def _answer(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        path = urllib.parse.urlsplit(handler.path).path
        endpoint = _ENDPOINTS.get(path) or next(
            (name for pattern, name in _PATTERNS if re.fullmatch(pattern, path)), "unknown"
        )
        if self.tamper is not None and self.tamper[0] == endpoint:
            body = self.tamper[1](handler, body)
        try:
            self._route(endpoint, handler, body)
        except Refusal as refusal:
            self.refused(endpoint, refusal.code)
            _send(handler, refusal.status, refusal.body, {"Content-Type": refusal.content_type})

    def _route(self, endpoint: str, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        url = urllib.parse.urlsplit(handler.path)
        if endpoint == "registry":
            self._pass_through(handler, body)
        elif endpoint == "registry-token":
            form = dict(urllib.parse.parse_qsl(body.decode(errors="replace")))
            self._registry_token(handler, url, form)
        elif endpoint == "aws-sts":
            self.sts(handler, body)
        elif endpoint == "aws-ecr":
            self.ecr(handler, body)
        elif endpoint == "aws-pod-identity":
            self.pod_identity(handler)
        elif endpoint == "gcp-metadata":
            self.metadata(handler)
        elif endpoint == "gcp-sts":
            self.gcp_sts(handler, body)
        elif endpoint == "gcp-iam":
            self.gcp_iam(handler, body)
        elif endpoint == "azure-openid":
            self.openid_configuration(handler, url.path.split("/")[1])
        elif endpoint == "azure-entra":
            self.entra(handler, url.path.split("/")[1], body)
        elif endpoint == "azure-acr-exchange":
            self.acr_exchange(handler, body)
        elif endpoint == "actions-idtoken":
            self._actions_id_token(handler, url)
        else:
            _send(handler, 404, b"{}", _JSON)

    # -- GitHub Actions' ID token endpoint (ACTIONS_ID_TOKEN_REQUEST_URL) -------------
    def _actions_id_token(self, handler: BaseHTTPRequestHandler, url: Any) -> None:
        self.count("actions-idtoken")
        if handler.headers.get("Authorization") != f"bearer {self.actions_request_token}":
            return _send(handler, 401, b'{"message":"Bad credentials"}', _JSON)
        audience = urllib.parse.parse_qs(url.query).get("audience", [""])[0]
        token = f"actions-{audience}-{secrets.token_hex(4)}"
        with self._guard:
            self.trusted_tokens.add(token)
        _send(handler, 200, json.dumps({"count": 1, "value": token}).encode(), _JSON)

    # -- the registry's edge and its token realm ---------------------------------------
    def _registry_token(self, handler: BaseHTTPRequestHandler, url: Any, form: dict[str, str]) -> None:
        self.count("registry-token")
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
