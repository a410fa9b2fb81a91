"""AWS Signature Version 4 for one request (the ECR API call), as AWS documents it.

Pure: the clock is a parameter; checked against AWS's published test-suite example.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class AwsKeys:
    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str = field(default="", repr=False)
    expires_at: float = 0.0


def _quote(text: str) -> str:
    return urllib.parse.quote(text, safe="-_.~")


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sign(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    keys: AwsKeys,
    region: str,
    service: str,
    now: datetime.datetime,
) -> dict[str, str]:
    """``headers`` plus ``X-Amz-Date``, ``X-Amz-Security-Token`` (with a session) and ``Authorization``."""
    parts = urllib.parse.urlsplit(url)
    amz_date = now.astimezone(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    signed = {k.lower(): " ".join(v.split()) for k, v in headers.items()}
    signed["host"] = parts.netloc
    signed["x-amz-date"] = amz_date
    if keys.session_token:
        signed["x-amz-security-token"] = keys.session_token
    names = sorted(signed)
    query = sorted(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    canonical = "\n".join(
        [
            method,
            urllib.parse.quote(parts.path or "/", safe="/-_.~"),
            "&".join(
                f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}" for k, v in query
            ),
            "".join(f"{name}:{signed[name]}\n" for name in names),
            ";".join(names),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(("AWS4" + keys.secret_access_key).encode(), amz_date[:8])
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    out = dict(headers)
    out["X-Amz-Date"] = amz_date
    if keys.session_token:
        out["X-Amz-Security-Token"] = keys.session_token
    out["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={keys.access_key_id}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return out
