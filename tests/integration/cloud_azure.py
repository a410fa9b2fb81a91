"""The Azure endpoints of the cloud stand-in, judged as Microsoft documents them.

- Entra ID's token endpoint ``POST /<tenant>/oauth2/v2.0/token`` with a federated client
  assertion (workload identity), and the tenant's OpenID configuration
  (``/<tenant>/v2.0/.well-known/openid-configuration``, which MSAL reads first). Each app is
  registered in one tenant with the subjects its federated credentials accept
  (``azure_app``). Refused with Entra's documented body (``error``, ``error_description``
  starting ``AADSTS<n>:``, ``error_codes``): a tenant that does not exist (AADSTS90002), a
  client not registered in it (AADSTS700016), a grant other than ``client_credentials``
  (AADSTS70003), a scope that is not one resource's ``/.default`` (AADSTS70011) or of a resource
  that is not there (AADSTS500011), an assertion type other than the JWT bearer one
  (AADSTS7000218: Entra then sees no client credential), an assertion nobody trusts or whose
  audience is not ``api://AzureADTokenExchange`` (AADSTS700212) or whose subject the app's
  federated credentials do not name (AADSTS70021).
- ACR's ``POST /oauth2/exchange`` (ACR's AAD-OAUTH document): ``grant_type=access_token``, the
  registry as ``service``, the ``tenant`` the Entra token was issued in, and that token, for
  the registry's resource; refused with the Distribution error format ``{"errors": [...]}``.
"""

from __future__ import annotations

import base64
import datetime
import json
import re
import secrets
import urllib.parse
from http.server import BaseHTTPRequestHandler

from tests.integration.cloud_judge import JSON, Judge, Refusal

EXCHANGE_AUDIENCE = "api://AzureADTokenExchange"
JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ACR_RESOURCE = "https://containerregistry.azure.net"
RESOURCES = {ACR_RESOURCE, "https://management.azure.com"}


def _entra_error(error: str, number: int, description: str, status: int = 400) -> Refusal:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    body = {
        "error": error,
        "error_description": f"AADSTS{number}: {description}\r\nTrace ID: stand-in\r\n"
        f"Correlation ID: stand-in\r\nTimestamp: {now}",
        "error_codes": [number],
        "timestamp": now,
        "trace_id": "stand-in",
        "correlation_id": "stand-in",
        "error_uri": f"https://login.microsoftonline.com/error?code={number}",
    }
    return Refusal(status, f"AADSTS{number}", json.dumps(body).encode())


def _acr_error(status: int, code: str, message: str) -> Refusal:
    return Refusal(status, code, json.dumps({"errors": [{"code": code, "message": message}]}).encode())


class AzureJudge(Judge):
    #: tenant -> client id -> the federated subjects it accepts
    azure_apps: dict[str, dict[str, set[str]]]
    #: every Entra access token presented to ACR's exchange, in order
    exchanged: list[str]

    def azure_app(self, tenant: str, client: str, *subjects: str) -> None:
        """Register ``client`` in ``tenant``, trusting federated tokens of ``subjects``."""
        with self._guard:
            self.azure_apps.setdefault(tenant, {}).setdefault(client, set()).update(subjects)

    def _tenant(self, tenant: str) -> dict[str, set[str]]:
        with self._guard:
            apps = self.azure_apps.get(tenant)
        if apps is None:
            raise _entra_error(
                "invalid_request",
                90002,
                f"Tenant '{tenant}' not found. Check to make sure you have the correct tenant ID and are "
                "signing into the correct cloud.",
            )
        return apps

    def openid_configuration(self, handler: BaseHTTPRequestHandler, tenant: str) -> None:
        self._tenant(tenant)
        base = f"https://{handler.headers['Host']}/{tenant}"
        answer = {
            "token_endpoint": f"{base}/oauth2/v2.0/token",
            "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
            "issuer": f"{base}/v2.0",
            "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode",
            "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
        }
        self.reply(handler, 200, json.dumps(answer).encode(), JSON)

    def entra(self, handler: BaseHTTPRequestHandler, tenant: str, body: bytes) -> None:
        self.count("azure-entra")
        apps = self._tenant(tenant)
        form = dict(urllib.parse.parse_qsl(body.decode(errors="replace"), keep_blank_values=True))
        if form.get("grant_type") != "client_credentials":
            raise _entra_error(
                "unsupported_grant_type", 70003, "The app requested an unsupported grant type."
            )
        client = form.get("client_id", "")
        if client not in apps:
            raise _entra_error(
                "unauthorized_client",
                700016,
                f"Application with identifier '{client}' was not found in the directory '{tenant}'.",
            )
        scope = form.get("scope", "")
        if not re.fullmatch(r"\S+/\.default", scope):
            raise _entra_error(
                "invalid_scope",
                70011,
                f"The provided value for the input parameter 'scope' is not valid. The scope {scope} is "
                "not valid: client credential flows must have a scope value with /.default suffixed "
                "to the resource identifier.",
            )
        resource = scope.removesuffix("/.default")
        if resource not in RESOURCES:
            raise _entra_error(
                "invalid_resource",
                500011,
                f"The resource principal named {resource} was not found in the tenant named {tenant}.",
            )
        if form.get("client_assertion_type") != JWT_BEARER or not form.get("client_assertion"):
            raise _entra_error(
                "invalid_client",
                7000218,
                "The request body must contain the following parameter: 'client_assertion' or "
                "'client_secret'.",
                401,
            )
        trusted = self.trusted(form["client_assertion"])
        if (
            self.refusing
            or trusted is None
            or trusted.expired
            or (trusted.audiences and EXCHANGE_AUDIENCE not in trusted.audiences)
        ):
            raise _entra_error(
                "invalid_client",
                700212,
                f"No matching federated identity record found for presented assertion audience "
                f"'{EXCHANGE_AUDIENCE}'.",
                401,
            )
        if trusted.subject not in apps[client]:
            raise _entra_error(
                "invalid_client",
                70021,
                f"No matching federated identity record found for presented assertion. Assertion "
                f"Subject: '{trusted.subject}'.",
                401,
            )
        who = f"client {client} in {tenant} as {trusted.subject}"
        token = self.derive("entra", tenant, client, trusted.subject, scope, length=48)
        self.bearer(token, who, f"{tenant} {resource}")
        with self._guard:
            self.subjects.append(who)
        answer = {
            "token_type": "Bearer",
            "expires_in": self.lifetime,
            "ext_expires_in": self.lifetime,
            "access_token": token,
        }
        self.reply(handler, 200, json.dumps(answer).encode(), JSON)

    def acr_exchange(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        self.count("azure-acr-exchange")
        form = dict(urllib.parse.parse_qsl(body.decode(errors="replace"), keep_blank_values=True))
        if form.get("grant_type") != "access_token":
            raise _acr_error(400, "UNSUPPORTED", "grant_type must be access_token")
        if form.get("service") != handler.headers.get("Host"):
            raise _acr_error(400, "INVALID_SERVICE", f"service must be {handler.headers.get('Host')}")
        known = self.bearer_of(form.get("access_token", ""))
        with self._guard:
            self.exchanged.append(form.get("access_token", ""))
        if self.refusing or known is None:
            raise _acr_error(401, "UNAUTHORIZED", "the access token is not valid")
        tenant, _, resource = known[1].partition(" ")
        if resource != ACR_RESOURCE:
            raise _acr_error(401, "UNAUTHORIZED", f"the access token is not for {ACR_RESOURCE}")
        if form.get("tenant") != tenant:
            raise _acr_error(401, "UNAUTHORIZED", "the access token was not issued in the given tenant")
        claims = {"exp": int(self.expires()), "tenant": tenant}
        payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
        refresh = f"e30.{payload}.{secrets.token_urlsafe(16)}"
        with self._guard:
            self._refresh.add(refresh)
        self.reply(handler, 200, json.dumps({"refresh_token": refresh}).encode(), JSON)
