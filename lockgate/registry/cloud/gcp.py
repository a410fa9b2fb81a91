"""gcp: an OAuth2 access token for Artifact Registry and gcr.io, user ``oauth2accesstoken``.

Sources, in this order: a per-sync ``Identity`` (its ServiceAccount token, whose audience is
the workload identity provider from ``gcp.auth.fluxcd.io/workload-identity-provider``,
exchanged at Google's STS, then the ``iam.gke.io/gcp-service-account`` impersonated when
annotated); ``GOOGLE_APPLICATION_CREDENTIALS`` naming an ``external_account`` file (the
same exchange, with the file's ``token_url``, ``credential_source`` ``file`` or ``url`` (as
google-github-actions/auth writes it) and ``service_account_impersonation_url``); else the
metadata server (GKE workload identity, GCE), whose host ``GCE_METADATA_HOST`` overrides as
Google's libraries read it. The STS and IAM Credentials endpoints of a per-sync identity have
no documented variable; ``LOCKGATE_GCP_STS_URL`` and ``LOCKGATE_GCP_IAM_URL`` override them.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lockgate.registry.cloud import CloudRegistry, Identity
from lockgate.registry.cloud import http as cloud_http
from lockgate.registry.cloud.cache import Minted
from lockgate.registry.credentials import Credentials

USERNAME = "oauth2accesstoken"
PROVIDER_ANNOTATION = "gcp.auth.fluxcd.io/workload-identity-provider"
SERVICE_ACCOUNT_ANNOTATION = "iam.gke.io/gcp-service-account"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
STS_URL = "https://sts.googleapis.com/v1/token"
IAM_URL = "https://iamcredentials.googleapis.com"
JWT_TYPE = "urn:ietf:params:oauth:token-type:jwt"


def describe(identity: Identity | None, env: Mapping[str, str]) -> str:
    if identity is not None:
        return f"{identity.name} ({identity.service_account or identity.audience})"
    if env.get("GOOGLE_APPLICATION_CREDENTIALS"):
        return f"external account {env['GOOGLE_APPLICATION_CREDENTIALS']}"
    return "the metadata server's default service account"


def audience(provider: str) -> str:
    """The token audience for a workload identity provider (``projects/N/locations/global/...``)."""
    return provider if provider.startswith("//") else f"//iam.googleapis.com/{provider}"


def _exchange(
    who: cloud_http.Who, token_url: str, aud: str, subject: str, subject_type: str
) -> tuple[str, float]:
    what = "Google STS token exchange"
    form = {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "audience": aud,
        "scope": SCOPE,
        "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "subject_token": subject,
        "subject_token_type": subject_type,
    }
    value = cloud_http.json_answer(who, what, cloud_http.call(who, what, "POST", token_url, form=form))
    return cloud_http.field(who, what, value, "access_token"), time.time() + _seconds(value.get("expires_in"))


def _impersonate(who: cloud_http.Who, url: str, token: str) -> tuple[str, float]:
    what = "IAM Credentials generateAccessToken"
    answer = cloud_http.call(
        who,
        what,
        "POST",
        url,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        body=json.dumps({"scope": [SCOPE], "lifetime": "3600s"}).encode(),
    )
    value = cloud_http.json_answer(who, what, answer)
    access = cloud_http.field(who, what, value, "accessToken")
    expiry = cloud_http.field(who, what, value, "expireTime")
    try:
        return access, datetime.datetime.fromisoformat(expiry.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise who.fail(f"{what} answered an expireTime that is not a time") from None


def _external_account(who: cloud_http.Who, path: str) -> tuple[str, float]:
    try:
        config: Any = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        raise who.fail(f"cannot read GOOGLE_APPLICATION_CREDENTIALS {path} as JSON") from None
    if not isinstance(config, dict) or config.get("type") != "external_account":
        raise who.fail(f"{path} is not an external_account credentials file")
    source = config.get("credential_source") or {}
    if isinstance(source, dict) and isinstance(source.get("file"), str):
        try:
            subject = Path(source["file"]).read_text().strip()
        except OSError as exc:
            raise who.fail(f"cannot read the subject token file {source['file']} ({exc.strerror})") from None
    elif isinstance(source, dict) and isinstance(source.get("url"), str):
        # what google-github-actions/auth writes: the CI's ID token endpoint and its headers
        given = source.get("headers")
        headers = given if isinstance(given, dict) else {}
        what = "the subject token URL"
        answer = cloud_http.call(
            who, what, "GET", source["url"], headers={str(k): str(v) for k, v in headers.items()}
        )
        subject = answer.decode("utf-8", "replace").strip()
    else:
        raise who.fail(f"{path}: only a credential_source file or url is supported")
    fmt = source.get("format") or {}
    if isinstance(fmt, dict) and fmt.get("type") == "json":
        try:
            subject = str(json.loads(subject).get(fmt.get("subject_token_field_name", ""), ""))
        except (ValueError, AttributeError):
            raise who.fail(f"{path}: the subject token is not the JSON its format names") from None
    access, expires = _exchange(
        who,
        str(config.get("token_url") or STS_URL),
        str(config.get("audience", "")),
        subject,
        str(config.get("subject_token_type") or JWT_TYPE),
    )
    impersonation = config.get("service_account_impersonation_url")
    if isinstance(impersonation, str) and impersonation:
        return _impersonate(who, impersonation, access)
    return access, expires


def _metadata(who: cloud_http.Who, env: Mapping[str, str]) -> tuple[str, float]:
    host = env.get("GCE_METADATA_HOST") or "metadata.google.internal"
    url = f"http://{host}/computeMetadata/v1/instance/service-accounts/default/token"
    what = "the metadata server"
    value = cloud_http.json_answer(
        who, what, cloud_http.call(who, what, "GET", url, headers={"Metadata-Flavor": "Google"})
    )
    return cloud_http.field(who, what, value, "access_token"), time.time() + _seconds(value.get("expires_in"))


def mint(registry: CloudRegistry, identity: Identity | None, env: Mapping[str, str]) -> Minted:
    who = cloud_http.Who("gcp", describe(identity, env), registry.host)
    if identity is not None:
        if not identity.audience:
            raise who.fail(f"{identity.name} has no {PROVIDER_ANNOTATION} annotation")
        access, expires = _exchange(
            who, env.get("LOCKGATE_GCP_STS_URL") or STS_URL, identity.audience, identity.token(), JWT_TYPE
        )
        if identity.service_account:
            base = (env.get("LOCKGATE_GCP_IAM_URL") or IAM_URL).rstrip("/")
            url = f"{base}/v1/projects/-/serviceAccounts/{identity.service_account}:generateAccessToken"
            access, expires = _impersonate(who, url, access)
    elif env.get("GOOGLE_APPLICATION_CREDENTIALS"):
        access, expires = _external_account(who, env["GOOGLE_APPLICATION_CREDENTIALS"])
    else:
        access, expires = _metadata(who, env)
    origin = f"provider gcp ({describe(identity, env)})"
    return Minted(Credentials(username=USERNAME, secret=access, origin=origin), expires)


def _seconds(value: object) -> float:
    return float(value) if isinstance(value, int | float) and value > 0 else 3600.0
