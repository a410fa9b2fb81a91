"""azure: an ACR refresh token from workload identity, user ``00000000-0000-0000-0000-000000000000``.

The federated token (``AZURE_FEDERATED_TOKEN_FILE``, or a per-sync ServiceAccount token with
audience ``api://AzureADTokenExchange``) is a client assertion for Entra ID's token endpoint
(``AZURE_AUTHORITY_HOST``/``<tenant>/oauth2/v2.0/token``, client ``AZURE_CLIENT_ID`` or
``azure.workload.identity/client-id``, tenant ``AZURE_TENANT_ID`` or
``azure.workload.identity/tenant-id``), giving an access token for ACR's audience; the
registry's own ``/oauth2/exchange`` turns it into a refresh token, which the registry's token
service takes as docker's does (``identitytoken``).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping
from pathlib import Path

from lockgate.registry.cloud import CloudRegistry, Identity
from lockgate.registry.cloud import http as cloud_http
from lockgate.registry.cloud.cache import Minted
from lockgate.registry.credentials import Credentials

AUDIENCE = "api://AzureADTokenExchange"
CLIENT_ANNOTATION = "azure.workload.identity/client-id"
TENANT_ANNOTATION = "azure.workload.identity/tenant-id"
USERNAME = "00000000-0000-0000-0000-000000000000"
SCOPE = "https://containerregistry.azure.net/.default"
AUTHORITY = "https://login.microsoftonline.com/"
#: ACR refresh tokens last three hours
REFRESH_LIFETIME = 3 * 3600.0


def describe(identity: Identity | None, env: Mapping[str, str]) -> str:
    if identity is not None:
        return f"{identity.name} (client {identity.client_id})"
    return f"client {env.get('AZURE_CLIENT_ID', '<AZURE_CLIENT_ID unset>')}"


def _federated(
    who: cloud_http.Who, identity: Identity | None, env: Mapping[str, str]
) -> tuple[str, str, str]:
    if identity is not None:
        if not identity.client_id or not identity.tenant_id:
            missing = CLIENT_ANNOTATION if not identity.client_id else TENANT_ANNOTATION
            raise who.fail(f"{identity.name} has no {missing} annotation (nor AZURE_TENANT_ID)")
        return identity.token(), identity.client_id, identity.tenant_id
    path, client, tenant = (
        env.get(k, "") for k in ("AZURE_FEDERATED_TOKEN_FILE", "AZURE_CLIENT_ID", "AZURE_TENANT_ID")
    )
    if not (path and client and tenant):
        raise who.fail(
            "set AZURE_FEDERATED_TOKEN_FILE, AZURE_CLIENT_ID and AZURE_TENANT_ID (workload identity)"
        )
    try:
        return Path(path).read_text().strip(), client, tenant
    except OSError as exc:
        raise who.fail(f"cannot read AZURE_FEDERATED_TOKEN_FILE {path} ({exc.strerror})") from None


def mint(registry: CloudRegistry, identity: Identity | None, env: Mapping[str, str]) -> Minted:
    who = cloud_http.Who("azure", describe(identity, env), registry.host)
    assertion, client, tenant = _federated(who, identity, env)
    authority = (env.get("AZURE_AUTHORITY_HOST") or AUTHORITY).rstrip("/")
    what = "Entra ID token endpoint"
    form = {
        "grant_type": "client_credentials",
        "client_id": client,
        "scope": SCOPE,
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "client_assertion": assertion,
    }
    answer = cloud_http.call(who, what, "POST", f"{authority}/{tenant}/oauth2/v2.0/token", form=form)
    access = cloud_http.field(who, what, cloud_http.json_answer(who, what, answer), "access_token")
    what = "ACR /oauth2/exchange"
    exchange = {
        "grant_type": "access_token",
        "service": registry.host,
        "tenant": tenant,
        "access_token": access,
    }
    answer = cloud_http.call(
        who, what, "POST", f"{registry.scheme}://{registry.host}/oauth2/exchange", form=exchange
    )
    refresh = cloud_http.field(who, what, cloud_http.json_answer(who, what, answer), "refresh_token")
    origin = f"provider azure ({describe(identity, env)})"
    creds = Credentials(username=USERNAME, secret=refresh, identity_token=True, origin=origin)
    return Minted(creds, _expiry(refresh))


def _expiry(jwt: str) -> float:
    """The refresh token's ``exp`` (read, not trusted: only to know when to renew)."""
    try:
        payload = jwt.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return float(claims["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return time.time() + REFRESH_LIFETIME
