"""The Google Cloud endpoints of the cloud stand-in, judged as Google documents them.

- STS ``POST /v1/token`` (RFC 8693 token exchange, a form): ``grant_type`` must be the
  token-exchange grant (``unsupported_grant_type``), ``requested_token_type`` the access-token
  type and ``subject_token_type`` one of the documented types (``invalid_request``, naming the
  field), ``audience`` the full resource name of a workload identity provider
  (``invalid_request``) that exists here (``gcp_providers``; else ``invalid_target``), ``scope``
  only scopes Google knows (``invalid_scope``); the subject token must be trusted and, when it
  names audiences, name this one (``invalid_grant``). Errors are OAuth 2.0's
  ``{"error", "error_description"}``.
- IAM Credentials ``generateAccessToken``: a bearer minted by STS, a service account e-mail,
  a JSON body with a non-empty ``scope`` list and a ``lifetime`` of at most ``3600s``; errors
  are Google APIs' ``{"error": {"code", "message", "status"}}``.
- The GCE metadata server's token (``Metadata-Flavor: Google``).
"""

from __future__ import annotations

import datetime
import json
import re
import urllib.parse
from http.server import BaseHTTPRequestHandler

from tests.integration.cloud_judge import JSON, Judge, Refusal

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
SUBJECT_TYPES = {
    "urn:ietf:params:oauth:token-type:jwt",
    "urn:ietf:params:oauth:token-type:id_token",
    "urn:ietf:params:oauth:token-type:saml2",
    "urn:ietf:params:aws:token-type:aws4_request",
}
SCOPES = {"https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/iam"}
_PROVIDER = re.compile(
    r"^//iam\.googleapis\.com/projects/\d+/locations/global/workloadIdentityPools/[a-z0-9-]{4,32}"
    r"/providers/[a-z0-9-]{4,32}$"
)
_ACCOUNT = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]@[a-z0-9-]+\.iam\.gserviceaccount\.com$")


def _oauth_error(code: str, description: str, status: int = 400) -> Refusal:
    return Refusal(status, code, json.dumps({"error": code, "error_description": description}).encode())


def _api_error(status: int, code: str, message: str) -> Refusal:
    body = {"error": {"code": status, "message": message, "status": code}}
    return Refusal(status, code, json.dumps(body).encode())


class GcpJudge(Judge):
    #: workload identity providers that exist (their full audience)
    gcp_providers: set[str]

    def gcp_sts(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        self.count("gcp-sts")
        if not handler.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            raise _oauth_error(
                "invalid_request", "Invalid Content-Type: use application/x-www-form-urlencoded."
            )
        form = dict(urllib.parse.parse_qsl(body.decode(errors="replace"), keep_blank_values=True))
        if form.get("grant_type") != TOKEN_EXCHANGE:
            raise _oauth_error("unsupported_grant_type", 'Invalid value for "grant_type".')
        if form.get("requested_token_type") != ACCESS_TOKEN_TYPE:
            raise _oauth_error("invalid_request", 'Invalid value for "requested_token_type".')
        if form.get("subject_token_type") not in SUBJECT_TYPES:
            raise _oauth_error("invalid_request", 'Invalid value for "subject_token_type".')
        audience = form.get("audience", "")
        if not _PROVIDER.match(audience):
            raise _oauth_error(
                "invalid_request",
                'Invalid value for "audience". This value should be the full resource name of the '
                "Identity Provider.",
            )
        if audience not in self.gcp_providers:
            raise _oauth_error(
                "invalid_target",
                'The target service indicated by the "audience" parameters is invalid. This might either '
                "be because the pool or provider is disabled or deleted or because it doesn't exist.",
            )
        scopes = form.get("scope", "").split()
        if any(scope not in SCOPES for scope in scopes):
            raise _oauth_error("invalid_scope", 'Invalid value for "scope".')
        trusted = self.trusted(form.get("subject_token", ""))
        if self.refusing or trusted is None or trusted.expired:
            raise _oauth_error("invalid_grant", "The subject token is not trusted or has expired.")
        if trusted.audiences and audience not in trusted.audiences:
            raise _oauth_error(
                "invalid_grant",
                f"The audience in ID Token {list(trusted.audiences)} does not match the "
                f"expected audience {audience}.",
            )
        # a federated token: usable directly (GAR grants to principals) or to impersonate
        who = f"{audience} {trusted.subject}"
        token = self.derive("gcp-sts", audience, trusted.subject, " ".join(sorted(scopes)), length=48)
        self.registry_cred("oauth2accesstoken", token, who)
        self.bearer(token, who, "sts")
        answer = {
            "access_token": token,
            "issued_token_type": ACCESS_TOKEN_TYPE,
            "token_type": "Bearer",
            "expires_in": self.lifetime,
        }
        self.reply(handler, 200, json.dumps(answer).encode(), JSON)

    def gcp_iam(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        self.count("gcp-iam")
        bearer = handler.headers.get("Authorization", "")
        known = self.bearer_of(bearer.removeprefix("Bearer ")) if bearer.startswith("Bearer ") else None
        if self.refusing or known is None or known[1] != "sts":
            raise _api_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        path = urllib.parse.unquote(urllib.parse.urlsplit(handler.path).path)
        match = re.fullmatch(r".*/v1/projects/-/serviceAccounts/([^/:]+):generateAccessToken", path)
        if match is None or not _ACCOUNT.match(match[1]):
            raise _api_error(
                400, "INVALID_ARGUMENT", "Invalid form of account ID. Should be [Gaia ID |Email]."
            )
        if not handler.headers.get("Content-Type", "").startswith(JSON):
            raise _api_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        try:
            request = json.loads(body)
        except json.JSONDecodeError:
            raise _api_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.") from None
        scopes = request.get("scope") if isinstance(request, dict) else None
        if not isinstance(scopes, list) or not scopes or any(s not in SCOPES for s in scopes):
            raise _api_error(400, "INVALID_ARGUMENT", "Scope required.")
        lifetime = str(request.get("lifetime", "3600s"))
        seconds = re.fullmatch(r"(\d+)(?:\.\d+)?s", lifetime)
        if seconds is None or not 1 <= int(seconds[1]) <= 3600:
            raise _api_error(400, "INVALID_ARGUMENT", "The lifetime must be between 1s and 3600s.")
        account = match[1]
        token = self.derive("gcp-iam", account, known[0], " ".join(sorted(scopes)), length=48)
        self.registry_cred("oauth2accesstoken", token, account)
        expiry = datetime.datetime.fromtimestamp(self.expires(), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.reply(handler, 200, json.dumps({"accessToken": token, "expireTime": expiry}).encode(), JSON)

    def metadata(self, handler: BaseHTTPRequestHandler) -> None:
        self.count("gcp-metadata")
        if self.refusing or handler.headers.get("Metadata-Flavor") != "Google":
            raise Refusal(403, "access_denied", b'{"error":"access_denied"}')
        token = self.derive("gcp-metadata", str(self.generation), length=48)
        self.registry_cred("oauth2accesstoken", token, "metadata-default")
        answer = {"access_token": token, "expires_in": self.lifetime, "token_type": "Bearer"}
        self.reply(handler, 200, json.dumps(answer).encode(), JSON)
