"""Every documented field the cloud stand-ins judge, shown to be judged: lockgate's request with
one field changed is refused with the service's documented error, and lockgate's error names
the cause (the service's code and what it says), never a token it sent.

The token services cannot run here (``cloud_support.CloudStandIn`` stands in for each). The
change is made to lockgate's real request as it arrives at the stand-in (``standin.tamper``),
so what is judged is what lockgate sent, but for one field. Each row also runs unchanged
first (the same set-up succeeds), so a refusal is the changed field's doing.
"""

from __future__ import annotations

import email.message
import json
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from lockgate.errors import AuthError
from lockgate.registry import cloud
from lockgate.registry.cloud.cache import TokenCache
from tests.integration.cloud_fixtures import Clouds, clean_env, clouds
from tests.integration.cloud_support import ACR_HOST, ECR_HOST, GAR_HOST, Tamper

__all__ = ["clean_env", "clouds"]  # fixtures, used by name

TENANT, CLIENT = "tenant-judged", "dddddddd-0000-4000-8000-000000000001"
PROVIDER = "//iam.googleapis.com/projects/77/locations/global/workloadIdentityPools/judged/providers/github"
ACCOUNT = "judged-sa@p.iam.gserviceaccount.com"


def form(name: str, value: str | None) -> Tamper:
    """Set (or, with None, drop) one field of a form body."""

    def change(handler: BaseHTTPRequestHandler, body: bytes) -> bytes:
        fields = urllib.parse.parse_qsl(body.decode(), keep_blank_values=True)
        kept = [(k, v) for k, v in fields if k != name]
        return urllib.parse.urlencode(kept + ([(name, value)] if value is not None else [])).encode()

    return change


def header(name: str, value: Callable[[str], str]) -> Tamper:
    def change(handler: BaseHTTPRequestHandler, body: bytes) -> bytes:
        headers: email.message.Message = handler.headers
        old = headers.get(name, "")
        del headers[name]
        headers[name] = value(old)
        return body

    return change


def path(old: str, new: str) -> Tamper:
    def change(handler: BaseHTTPRequestHandler, body: bytes) -> bytes:
        handler.path = handler.path.replace(old, new, 1)
        return body

    return change


def json_field(name: str, value: object) -> Tamper:
    def change(handler: BaseHTTPRequestHandler, body: bytes) -> bytes:
        return json.dumps({**json.loads(body), name: value}).encode()

    return change


def raw(new: bytes) -> Tamper:
    return lambda handler, body: new


@dataclass(frozen=True)
class Row:
    provider: str
    endpoint: str
    tamper: Tamper
    #: the service's error code the stand-in answers (and records)
    code: str
    #: what lockgate's error must say of the cause, beyond the code
    says: str


ROWS: dict[str, Row] = {
    # AWS STS AssumeRoleWithWebIdentity (IRSA)
    "sts-action": Row(
        "aws", "aws-sts", form("Action", "AssumeRole"), "InvalidAction", "operation AssumeRole"
    ),
    "sts-version": Row(
        "aws", "aws-sts", form("Version", "2011-06-16"), "InvalidAction", "version 2011-06-16"
    ),
    "sts-no-session-name": Row(
        "aws", "aws-sts", form("RoleSessionName", None), "ValidationError", "roleSessionName"
    ),
    "sts-bad-session-name": Row(
        "aws",
        "aws-sts",
        form("RoleSessionName", "two words"),
        "ValidationError",
        "'two words' at 'roleSessionName'",
    ),
    "sts-role-arn": Row("aws", "aws-sts", form("RoleArn", "role/ci"), "ValidationError", "roleArn"),
    "sts-short-token": Row(
        "aws", "aws-sts", form("WebIdentityToken", "x"), "ValidationError", "webIdentityToken"
    ),
    "sts-untrusted-token": Row(
        "aws", "aws-sts", form("WebIdentityToken", "forged-token"), "InvalidIdentityToken", "verification key"
    ),
    "sts-duration": Row(
        "aws", "aws-sts", form("DurationSeconds", "60"), "ValidationError", "durationSeconds"
    ),
    "sts-content-type": Row(
        "aws", "aws-sts", header("Content-Type", lambda _: "application/json"), "InvalidAction", "invalid"
    ),
    # ECR GetAuthorizationToken (SigV4, verified with botocore)
    "ecr-target": Row(
        "aws", "aws-ecr", header("X-Amz-Target", lambda v: v + "s"), "UnknownOperationException", ""
    ),
    "ecr-content-type": Row(
        "aws",
        "aws-ecr",
        header("Content-Type", lambda _: "application/json"),
        "UnknownOperationException",
        "",
    ),
    "ecr-region": Row(
        "aws",
        "aws-ecr",
        header("Authorization", lambda v: v.replace("/eu-west-1/", "/us-east-1/")),
        "InvalidSignatureException",
        "scoped to a valid region",
    ),
    "ecr-service": Row(
        "aws",
        "aws-ecr",
        header("Authorization", lambda v: v.replace("/ecr/", "/ecs/")),
        "InvalidSignatureException",
        "correct service: 'ecr'",
    ),
    "ecr-unsigned-host": Row(
        "aws",
        "aws-ecr",
        header(
            "Authorization",
            lambda v: v.replace("SignedHeaders=content-type;host;", "SignedHeaders=content-type;"),
        ),
        "InvalidSignatureException",
        "'Host' or ':authority' must be a 'SignedHeader'",
    ),
    "ecr-body": Row(
        "aws",
        "aws-ecr",
        raw(b'{"registryIds":["123456789012"]}'),
        "InvalidSignatureException",
        "does not match",
    ),
    "ecr-session-token": Row(
        "aws",
        "aws-ecr",
        header("X-Amz-Security-Token", lambda v: v[::-1]),
        "UnrecognizedClientException",
        "security token included in the request is invalid",
    ),
    "ecr-date": Row(
        "aws",
        "aws-ecr",
        header("X-Amz-Date", lambda v: v[:9] + ("00" if v[9:11] != "00" else "01") + v[11:]),
        "InvalidSignatureException",
        "Signature expired",
    ),
    "ecr-no-signature": Row(
        "aws",
        "aws-ecr",
        header("Authorization", lambda _: ""),
        "MissingAuthenticationTokenException",
        "Missing",
    ),
    # Google STS token exchange (external_account)
    "gcp-grant-type": Row(
        "gcp", "gcp-sts", form("grant_type", "client_credentials"), "unsupported_grant_type", '"grant_type"'
    ),
    "gcp-requested-token-type": Row(
        "gcp",
        "gcp-sts",
        form("requested_token_type", "urn:ietf:params:oauth:token-type:id_token"),
        "invalid_request",
        '"requested_token_type"',
    ),
    "gcp-subject-token-type": Row(
        "gcp", "gcp-sts", form("subject_token_type", "urn:x:jwt"), "invalid_request", '"subject_token_type"'
    ),
    "gcp-audience-format": Row(
        "gcp", "gcp-sts", form("audience", "projects/77/providers/github"), "invalid_request", '"audience"'
    ),
    "gcp-audience-unknown": Row(
        "gcp",
        "gcp-sts",
        form("audience", PROVIDER.replace("judged", "other1")),
        "invalid_target",
        "doesn't exist",
    ),
    "gcp-scope": Row(
        "gcp", "gcp-sts", form("scope", "https://www.googleapis.com/auth/drive"), "invalid_scope", '"scope"'
    ),
    "gcp-subject-token": Row(
        "gcp", "gcp-sts", form("subject_token", "forged"), "invalid_grant", "not trusted"
    ),
    # IAM Credentials generateAccessToken (the impersonation the external account names)
    "iam-scope": Row("gcp", "gcp-iam", json_field("scope", []), "INVALID_ARGUMENT", "Scope required"),
    "iam-lifetime": Row("gcp", "gcp-iam", json_field("lifetime", "7200s"), "INVALID_ARGUMENT", "lifetime"),
    "iam-account": Row(
        "gcp", "gcp-iam", path(ACCOUNT, "judged-sa@p.example.com"), "INVALID_ARGUMENT", "account ID"
    ),
    "iam-bearer": Row(
        "gcp", "gcp-iam", header("Authorization", lambda _: "Bearer forged"), "UNAUTHENTICATED", "credentials"
    ),
    # Entra ID token endpoint (workload identity)
    "entra-tenant": Row(
        "azure", "azure-entra", path(f"/{TENANT}/", "/tenant-x/"), "AADSTS90002", "'tenant-x' not found"
    ),
    "entra-client": Row(
        "azure",
        "azure-entra",
        form("client_id", "other-client"),
        "AADSTS700016",
        "'other-client' was not found",
    ),
    "entra-grant-type": Row(
        "azure", "azure-entra", form("grant_type", "password"), "AADSTS70003", "grant type"
    ),
    "entra-scope": Row(
        "azure",
        "azure-entra",
        form("scope", "https://containerregistry.azure.net/read"),
        "AADSTS70011",
        "'scope' is not valid",
    ),
    "entra-resource": Row(
        "azure",
        "azure-entra",
        form("scope", "https://vault.azure.net/.default"),
        "AADSTS500011",
        "vault.azure.net",
    ),
    "entra-assertion-type": Row(
        "azure",
        "azure-entra",
        form("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:saml2-bearer"),
        "AADSTS7000218",
        "'client_assertion'",
    ),
    "entra-assertion": Row(
        "azure", "azure-entra", form("client_assertion", "forged"), "AADSTS700212", "federated"
    ),
    # ACR /oauth2/exchange
    "acr-service": Row(
        "azure",
        "azure-acr-exchange",
        form("service", "other.azurecr.io"),
        "INVALID_SERVICE",
        "service must be",
    ),
    "acr-tenant": Row(
        "azure", "azure-acr-exchange", form("tenant", "tenant-x"), "UNAUTHORIZED", "given tenant"
    ),
    "acr-grant-type": Row(
        "azure", "azure-acr-exchange", form("grant_type", "refresh_token"), "UNSUPPORTED", "grant_type"
    ),
}


def _set_up(provider: str, clouds: Clouds, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """The registry host and the environment of a working identity of ``provider``."""
    standin = clouds.standin
    standin.trusted_tokens.add("judged-token")
    (tmp_path / "token").write_text("judged-token")
    if provider == "aws":
        env = {
            "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/judged",
            "AWS_WEB_IDENTITY_TOKEN_FILE": str(tmp_path / "token"),
            "AWS_ENDPOINT_URL_STS": f"{standin.url}/aws/sts",
            "AWS_ENDPOINT_URL_ECR": f"{standin.url}/aws/ecr",
        }
        return ECR_HOST, env
    if provider == "gcp":
        standin.gcp_provider(PROVIDER)
        external = {
            "type": "external_account",
            "audience": PROVIDER,
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": f"{standin.url}/gcp/sts/v1/token",
            "credential_source": {"file": str(tmp_path / "token")},
            "service_account_impersonation_url": f"{standin.url}/v1/projects/-/serviceAccounts/"
            f"{ACCOUNT}:generateAccessToken",
        }
        (tmp_path / "external.json").write_text(json.dumps(external))
        return GAR_HOST, {"GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "external.json")}
    standin.azure_app(TENANT, CLIENT, "file-token")
    env = {
        "AZURE_FEDERATED_TOKEN_FILE": str(tmp_path / "token"),
        "AZURE_CLIENT_ID": CLIENT,
        "AZURE_TENANT_ID": TENANT,
        "AZURE_AUTHORITY_HOST": standin.url,
    }
    return ACR_HOST, env


@pytest.mark.parametrize("name", sorted(ROWS))
def test_a_request_differing_in_one_documented_field_is_refused_and_lockgate_names_why(
    name: str, clouds: Clouds, tmp_path: Path
) -> None:
    row = ROWS[name]
    host, env = _set_up(row.provider, clouds, tmp_path)
    target = f"{host}:{clouds.port}"
    standin = clouds.standin
    assert cloud.credentials(row.provider, target, env=env, cache=TokenCache(), insecure=True) is not None
    refused_before = len(standin.refusals)
    standin.tamper = (row.endpoint, row.tamper)
    try:
        with pytest.raises(AuthError) as failed:
            cloud.credentials(row.provider, target, env=env, cache=TokenCache(), insecure=True)
    finally:
        standin.tamper = None
    assert standin.refusals[refused_before:] == [(row.endpoint, row.code)]
    message = failed.value.message
    assert row.code in message and row.says in message, message
    assert "judged-token" not in message
