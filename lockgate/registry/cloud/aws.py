"""aws: ECR credentials from IRSA, EKS Pod Identity or a per-sync ServiceAccount token.

The AWS keys come from, in this order (the SDKs' order for these sources): a per-sync
``Identity`` (its ServiceAccount token and ``eks.amazonaws.com/role-arn``, to STS
``AssumeRoleWithWebIdentity``); ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
``AWS_SESSION_TOKEN`` (what configure-aws-credentials exports in CI); IRSA (``AWS_ROLE_ARN``
and ``AWS_WEB_IDENTITY_TOKEN_FILE``, to STS); EKS Pod Identity
(``AWS_CONTAINER_CREDENTIALS_FULL_URI`` with the token in
``AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE``). With them ECR's ``GetAuthorizationToken`` is called,
SigV4-signed, in the registry host's region; its token is base64 of ``AWS:<password>``.
Endpoints follow AWS's service-specific endpoint variables: ``AWS_ENDPOINT_URL_STS``,
``AWS_ENDPOINT_URL_ECR``, then ``AWS_ENDPOINT_URL``.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
import time
import urllib.parse
from collections.abc import Mapping
from pathlib import Path

from lockgate.registry.cloud import CloudRegistry, Identity
from lockgate.registry.cloud import http as cloud_http
from lockgate.registry.cloud.cache import Minted
from lockgate.registry.cloud.sigv4 import AwsKeys, sign
from lockgate.registry.credentials import Credentials

AUDIENCE = "sts.amazonaws.com"
ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"
_XML_FIELD = r"<{0}>([^<]*)</{0}>"


def describe(identity: Identity | None, env: Mapping[str, str]) -> str:
    if identity is not None:
        return f"{identity.name} (role {identity.role_arn})"
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return f"access key {env['AWS_ACCESS_KEY_ID']} (environment)"
    if env.get("AWS_ROLE_ARN") and env.get("AWS_WEB_IDENTITY_TOKEN_FILE"):
        return f"role {env['AWS_ROLE_ARN']} (IRSA)"
    if env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        return "EKS Pod Identity of this pod"
    return "none configured"


def _endpoint(env: Mapping[str, str], service: str, default: str) -> str:
    return (env.get(f"AWS_ENDPOINT_URL_{service.upper()}") or env.get("AWS_ENDPOINT_URL") or default).rstrip(
        "/"
    )


def _read(who: cloud_http.Who, variable: str, path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError as exc:
        raise who.fail(f"cannot read the token file {path} named by {variable} ({exc.strerror})") from None


def _assume_role(
    who: cloud_http.Who, env: Mapping[str, str], registry: CloudRegistry, role: str, token: str
) -> AwsKeys:
    region, domain = registry.region, registry.domain
    default = f"https://sts.{region}.{domain}"
    query = urllib.parse.urlencode(
        {
            "Action": "AssumeRoleWithWebIdentity",
            "Version": "2011-06-15",
            "RoleArn": role,
            "RoleSessionName": env.get("AWS_ROLE_SESSION_NAME") or f"lockgate-{int(time.time())}",
            "WebIdentityToken": token,
        }
    )
    what = "STS AssumeRoleWithWebIdentity"
    # POST with the form as body: the token never sits in a URL a proxy could log
    answer = cloud_http.call(
        who,
        what,
        "POST",
        _endpoint(env, "sts", default) + "/",
        headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/xml"},
        body=query.encode(),
    )
    text = answer.decode("utf-8", "replace")
    found = {}
    for name in ("AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration"):
        match = re.search(_XML_FIELD.format(name), text)
        if match is None:
            raise who.fail(f"{what} answered without {name}")
        found[name] = match.group(1)
    return AwsKeys(
        found["AccessKeyId"], found["SecretAccessKey"], found["SessionToken"], _epoch(found["Expiration"])
    )


def _pod_identity(who: cloud_http.Who, env: Mapping[str, str]) -> AwsKeys:
    headers = {}
    token_file = env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
    if token_file:
        headers["Authorization"] = _read(who, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token_file)
    what = "the EKS Pod Identity agent"
    answer = cloud_http.call(who, what, "GET", env["AWS_CONTAINER_CREDENTIALS_FULL_URI"], headers=headers)
    value = cloud_http.json_answer(who, what, answer)
    return AwsKeys(
        cloud_http.field(who, what, value, "AccessKeyId"),
        cloud_http.field(who, what, value, "SecretAccessKey"),
        str(value.get("Token") or ""),
        _epoch(str(value.get("Expiration") or "")),
    )


def keys(
    registry: CloudRegistry, identity: Identity | None, env: Mapping[str, str], who: cloud_http.Who
) -> AwsKeys:
    if identity is not None:
        if not identity.role_arn:
            raise who.fail(f"{identity.name} has no {ROLE_ANNOTATION} annotation naming the IAM role")
        return _assume_role(who, env, registry, identity.role_arn, identity.token())
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        # what aws-actions/configure-aws-credentials exports in CI (a role's session keys)
        return AwsKeys(
            env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env.get("AWS_SESSION_TOKEN", "")
        )
    if env.get("AWS_ROLE_ARN") and env.get("AWS_WEB_IDENTITY_TOKEN_FILE"):
        token = _read(who, "AWS_WEB_IDENTITY_TOKEN_FILE", env["AWS_WEB_IDENTITY_TOKEN_FILE"])
        return _assume_role(who, env, registry, env["AWS_ROLE_ARN"], token)
    if env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        return _pod_identity(who, env)
    raise who.fail(
        "no AWS workload identity: set AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE (IRSA) or "
        "AWS_CONTAINER_CREDENTIALS_FULL_URI (EKS Pod Identity), or give the sync a serviceAccountName"
    )


def mint(registry: CloudRegistry, identity: Identity | None, env: Mapping[str, str]) -> Minted:
    who = cloud_http.Who("aws", describe(identity, env), registry.host)
    aws_keys = keys(registry, identity, env, who)
    url = _endpoint(env, "ecr", f"https://api.ecr.{registry.region}.{registry.domain}") + "/"
    body = b"{}"
    headers = sign(
        "POST",
        url,
        {
            "Content-Type": "application/x-amz-json-1.1",
            "X-Amz-Target": "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken",
        },
        body,
        keys=aws_keys,
        region=registry.region,
        service="ecr",
        now=datetime.datetime.now(datetime.UTC),
    )
    what = "ECR GetAuthorizationToken"
    value = cloud_http.json_answer(
        who, what, cloud_http.call(who, what, "POST", url, headers=headers, body=body)
    )
    data = value.get("authorizationData")
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise who.fail(f"{what} answered without authorizationData")
    token = cloud_http.field(who, what, data[0], "authorizationToken")
    try:
        username, _, password = base64.b64decode(token).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise who.fail(f"{what} answered a token that is not base64 of USER:PASSWORD") from None
    expires = data[0].get("expiresAt")
    expires_at = float(expires) if isinstance(expires, int | float) else time.time() + 12 * 3600
    origin = f"provider aws ({describe(identity, env)})"
    return Minted(Credentials(username=username, secret=password, origin=origin), expires_at)


def _epoch(text: str) -> float:
    """ISO 8601 (STS, the Pod Identity agent) to epoch seconds; an hour from now when absent."""
    if not text:
        return time.time() + 3600
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return time.time() + 3600


__all__ = ["AUDIENCE", "ROLE_ANNOTATION", "describe", "mint"]
