"""The AWS endpoints of the cloud stand-in, judged as AWS documents them.

- STS ``AssumeRoleWithWebIdentity`` (the Query protocol: a form POST, XML answer, unsigned:
  the web identity token is the credential). Refused as STS refuses: an ``Action`` or
  ``Version`` it has no operation for (``InvalidAction``), a missing or malformed ``RoleArn``,
  ``RoleSessionName`` (2-64 characters of ``[\\w+=,.@-]``), ``WebIdentityToken`` or
  ``DurationSeconds`` (``ValidationError``, the field named as STS names it), a token whose
  audience is not ``sts.amazonaws.com`` or that nobody trusts (``InvalidIdentityToken``), an
  expired one (``ExpiredTokenException``).
- ECR ``GetAuthorizationToken`` (the JSON 1.1 protocol, SigV4). The signature is verified
  with **botocore** (``SigV4Auth``'s canonical request, string to sign and signature over the
  headers the request says it signed), not with lockgate's signer; the credential scope must
  name this endpoint's region and ``ecr``, ``host`` and ``x-amz-date`` must be signed, the
  date within five minutes, the session token the one issued with the key. Errors are the
  JSON protocol's ``{"__type", "message"}``.
- The EKS Pod Identity agent (GET, the token file's content as ``Authorization``).
"""

from __future__ import annotations

import base64
import datetime
import json
import re
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler
from xml.sax.saxutils import escape

from botocore import auth as botocore_auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials

from lockgate.registry.cloud import sigv4
from tests.integration.cloud_judge import JSON, Judge, Refusal

REGION = "eu-west-1"
STS_VERSION = "2011-06-15"
STS_AUDIENCE = "sts.amazonaws.com"
ECR_TARGET = "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken"
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
_SESSION_NAME = re.compile(r"^[\w+=,.@-]{2,64}$")
_SKEW = 300
_XML = "text/xml"
_STS_NS = "https://sts.amazonaws.com/doc/2011-06-15/"


def _sts_error(code: str, message: str, status: int = 400) -> Refusal:
    body = (
        f'<ErrorResponse xmlns="{_STS_NS}"><Error><Type>Sender</Type><Code>{code}</Code>'
        f"<Message>{escape(message)}</Message></Error><RequestId>stand-in</RequestId></ErrorResponse>"
    )
    return Refusal(status, code, body.encode(), _XML)


def _json_error(code: str, message: str, status: int = 400) -> Refusal:
    return Refusal(status, code, json.dumps({"__type": code, "message": message}).encode())


def _validation(field: str, value: str | None, constraint: str) -> Refusal:
    shown = "null" if value is None else f"'{value}'"
    return _sts_error(
        "ValidationError",
        f"1 validation error detected: Value {shown} at '{field}' failed to satisfy constraint: {constraint}",
    )


class AwsJudge(Judge):
    def sts(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        self.count("aws-sts")
        if not handler.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            raise _sts_error("InvalidAction", "The action or operation requested is invalid.")
        form = dict(urllib.parse.parse_qsl(body.decode(errors="replace"), keep_blank_values=True))
        action, version = form.get("Action", ""), form.get("Version", "")
        if action != "AssumeRoleWithWebIdentity" or version != STS_VERSION:
            raise _sts_error("InvalidAction", f"Could not find operation {action} for version {version}")
        role, session, token = (form.get(k) for k in ("RoleArn", "RoleSessionName", "WebIdentityToken"))
        if role is None or not _ROLE_ARN.match(role):
            raise _validation("roleArn", role, "Member must satisfy the IAM role ARN format")
        if session is None or not _SESSION_NAME.match(session):
            raise _validation(
                "roleSessionName", session, "Member must satisfy regular expression pattern: [\\w+=,.@-]*"
            )
        if token is None or not 4 <= len(token) <= 20000:
            # the token itself is never echoed: STS names the field only
            raise _sts_error(
                "ValidationError",
                "1 validation error detected: Value at 'webIdentityToken' failed to satisfy "
                "constraint: Member must have length greater than or equal to 4",
            )
        duration = form.get("DurationSeconds")
        if duration is not None and not (duration.isdigit() and 900 <= int(duration) <= 43200):
            raise _validation("durationSeconds", duration, "Member must have value between 900 and 43200")
        trusted = self.trusted(token)
        if self.refusing or (trusted is not None and trusted.expired):
            raise _sts_error("ExpiredTokenException", "Token expired: current date/time must be before exp")
        if trusted is None:
            raise _sts_error(
                "InvalidIdentityToken",
                "Couldn't retrieve verification key from your identity provider, please reference "
                "AssumeRoleWithWebIdentity documentation for requirements",
            )
        if trusted.audiences and STS_AUDIENCE not in trusted.audiences:
            raise _sts_error("InvalidIdentityToken", "Incorrect token audience")
        keys = self.aws_keys(f"{role} as {trusted.subject}", role, trusted.subject, session)
        expiry = datetime.datetime.fromtimestamp(self.expires(), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        xml = (
            f'<AssumeRoleWithWebIdentityResponse xmlns="{_STS_NS}"><AssumeRoleWithWebIdentityResult>'
            f"<SubjectFromWebIdentityToken>{escape(trusted.subject)}</SubjectFromWebIdentityToken>"
            f"<Audience>{STS_AUDIENCE}</Audience><AssumedRoleUser><Arn>{escape(role)}/{session}</Arn>"
            f"<AssumedRoleId>AROA:{session}</AssumedRoleId></AssumedRoleUser>"
            f"<Credentials><AccessKeyId>{keys.access_key_id}</AccessKeyId><SecretAccessKey>"
            f"{keys.secret_access_key}</SecretAccessKey><SessionToken>{keys.session_token}</SessionToken>"
            f"<Expiration>{expiry}</Expiration></Credentials></AssumeRoleWithWebIdentityResult>"
            "<ResponseMetadata><RequestId>stand-in</RequestId></ResponseMetadata>"
            "</AssumeRoleWithWebIdentityResponse>"
        )
        self.reply(handler, 200, xml.encode(), _XML)

    def aws_keys(self, who: str, *decided_by: str, session: bool = True) -> sigv4.AwsKeys:
        """Keys for ``who``, the same for the same ``decided_by``: a role session's (``ASIA``,
        with a session token) or, with ``session=False``, an IAM user's long-term keys."""
        key_id = self.derive("aws-key-id", *decided_by).upper().replace("-", "A").replace("_", "B")[:16]
        keys = sigv4.AwsKeys(
            ("ASIA" if session else "AKIA") + key_id,
            self.derive("aws-secret", *decided_by, length=40),
            self.derive("aws-session", *decided_by, length=40) if session else "",
        )
        with self._guard:
            self._aws_keys[keys.access_key_id] = keys
            self._aws_who[keys.access_key_id] = who
        return keys

    def session_keys(self, who: str) -> sigv4.AwsKeys:
        """Keys as aws-actions/configure-aws-credentials exports them (a role's session)."""
        return self.aws_keys(who, "session", who)

    def pod_identity(self, handler: BaseHTTPRequestHandler) -> None:
        self.count("aws-pod-identity")
        if self.refusing or handler.headers.get("Authorization") != self.pod_identity_token:
            raise Refusal(401, "AccessDeniedException", b'{"code":"AccessDeniedException"}')
        keys = self.aws_keys("pod-identity", "pod-identity")
        expiry = datetime.datetime.fromtimestamp(self.expires(), datetime.UTC).isoformat()
        answer = {
            "AccessKeyId": keys.access_key_id,
            "SecretAccessKey": keys.secret_access_key,
            "Token": keys.session_token,
            "Expiration": expiry,
        }
        self.reply(handler, 200, json.dumps(answer).encode(), JSON)

    def ecr(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        self.count("aws-ecr")
        if handler.headers.get("X-Amz-Target") != ECR_TARGET:
            raise _json_error("UnknownOperationException", "")
        if handler.headers.get("Content-Type") != "application/x-amz-json-1.1":
            raise _json_error("UnknownOperationException", "")
        keys = self.verify_sigv4(handler, body, service="ecr")
        try:
            request = json.loads(body or b"null")
        except json.JSONDecodeError:
            request = None
        if not isinstance(request, dict):
            raise _json_error("SerializationException", "Start of structure or map found where not expected")
        if self.refusing:
            raise _json_error(
                "UnrecognizedClientException", "The security token included in the request is invalid."
            )
        password = self.derive("ecr", keys.access_key_id, str(self.generation), length=48)
        self.registry_cred("AWS", password, self._aws_who[keys.access_key_id])
        token = base64.b64encode(f"AWS:{password}".encode()).decode()
        answer = {"authorizationData": [{"authorizationToken": token, "expiresAt": self.expires()}]}
        self.reply(handler, 200, json.dumps(answer).encode(), "application/x-amz-json-1.1")

    def verify_sigv4(self, handler: BaseHTTPRequestHandler, body: bytes, *, service: str) -> sigv4.AwsKeys:
        """The keys that signed this request, as botocore computes the signature; else the
        refusal the service answers."""
        authorization = handler.headers.get("Authorization")
        if not authorization:
            raise _json_error("MissingAuthenticationTokenException", "Missing Authentication Token", 403)
        match = re.fullmatch(
            r"AWS4-HMAC-SHA256 Credential=([^/,]+)/(\d{8})/([^/,]+)/([^/,]+)/aws4_request, "
            r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})",
            authorization,
        )
        if match is None:
            raise _json_error(
                "IncompleteSignatureException",
                "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters.",
            )
        key_id, day, region, scoped_service, signed_names, signature = match.groups()
        with self._guard:
            keys = self._aws_keys.get(key_id)
        if keys is None:
            raise _json_error(
                "UnrecognizedClientException", "The security token included in the request is invalid."
            )
        if keys.session_token and handler.headers.get("X-Amz-Security-Token") != keys.session_token:
            raise _json_error(
                "UnrecognizedClientException", "The security token included in the request is invalid."
            )
        amz_date = handler.headers.get("X-Amz-Date", "")
        try:
            when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
        except ValueError:
            raise _json_error(
                "IncompleteSignatureException",
                "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.",
            ) from None
        if day != amz_date[:8]:
            raise _json_error(
                "InvalidSignatureException",
                f"Date in Credential scope does not match YYYYMMDD "
                f"from ISO-8601 version of date from HTTP: '{day}' != '{amz_date[:8]}'",
                403,
            )
        if region != REGION:
            raise _json_error(
                "InvalidSignatureException", "Credential should be scoped to a valid region.", 403
            )
        if scoped_service != service:
            raise _json_error(
                "InvalidSignatureException",
                f"Credential should be scoped to correct service: '{service}'.",
                403,
            )
        names = signed_names.split(";")
        if "host" not in names or "x-amz-date" not in names:
            raise _json_error(
                "InvalidSignatureException",
                "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.",
                403,
            )
        if abs(time.time() - when.timestamp()) > _SKEW:
            raise _json_error(
                "InvalidSignatureException",
                f"Signature expired: {amz_date} is now earlier than the allowed window.",
                403,
            )
        received = {k.lower(): v for k, v in handler.headers.items()}
        request = AWSRequest(
            method=handler.command,
            url=f"http://{received.get('host', '')}{handler.path}",
            headers={name: received.get(name, "") for name in names},
            data=body,
        )
        request.context["timestamp"] = amz_date
        signer = botocore_auth.SigV4Auth(
            BotoCredentials(keys.access_key_id, keys.secret_access_key, keys.session_token or None),
            service,
            region,
        )
        expected = signer.signature(
            signer.string_to_sign(request, signer.canonical_request(request)), request
        )
        if expected != signature:
            raise _json_error(
                "InvalidSignatureException",
                "The request signature we calculated does not match the signature you provided. Check "
                "your AWS Secret Access Key and signing method. Consult the service documentation for "
                "details.",
                403,
            )
        return keys
