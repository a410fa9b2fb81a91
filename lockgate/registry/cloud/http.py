"""The HTTP calls of the cloud token exchanges: bounded answers, errors that name the
provider, the identity, the registry and the endpoint, and never a token or a form field.

Every answer is read through ``lockgate.replies`` (streamed, at most ``MAX_ANSWER``): a token
service answering without end costs a megabyte, not the process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests

from lockgate import replies
from lockgate.errors import ReplyTooLarge
from lockgate.registry.cloud import CloudAuthError

#: a token service's answer is a few fields: the one cap of every reply lockgate reads whole
MAX_ANSWER = replies.MAX_REPLY_BYTES
#: of an error answer, only the service's error code is looked for, at its start
_ERROR_BYTES = 4096
TIMEOUT = 30.0


@dataclass(frozen=True)
class Who:
    """For messages: ``aws``, ``role arn:aws:iam::1:role/x``, ``1.dkr.ecr.eu-west-1.amazonaws.com``."""

    provider: str
    identity: str
    registry: str

    def fail(self, what: str) -> CloudAuthError:
        return CloudAuthError(
            f"provider {self.provider}: {what} (identity {self.identity}, registry {self.registry}); "
            "check the workload identity set-up (docs/registries.md, Cloud providers); "
            "the next pass tries again"
        )


def call(
    who: Who,
    what: str,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    form: Mapping[str, str] | None = None,
    body: bytes | None = None,
) -> bytes:
    """One request and its answer (at most ``MAX_ANSWER`` bytes); a refusal (4xx/5xx), an
    unreachable endpoint or an answer too large is a ``CloudAuthError`` naming ``what`` (e.g.
    ``STS AssumeRoleWithWebIdentity``), the endpoint and the service's error code."""
    with replies.session() as session:
        try:
            reply = session.request(
                method,
                url,
                headers=dict(headers or {}),
                data=form if form is not None else body,
                timeout=TIMEOUT,
                stream=True,
            )
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise who.fail(f"cannot reach {what} at {_shown(url)} ({type(exc).__name__})") from None
        try:
            if reply.status_code >= 400:
                code = _error_code(replies.read(reply, limit=MAX_ANSWER))
                raise who.fail(f"{what} at {_shown(url)} refused the request: HTTP {reply.status_code}{code}")
            return replies.read(reply, limit=MAX_ANSWER)
        except ReplyTooLarge as exc:
            if reply.status_code >= 400:
                raise who.fail(
                    f"{what} at {_shown(url)} refused the request: HTTP {reply.status_code}"
                ) from None
            raise who.fail(f"{what} at {_shown(url)} {exc.detail}") from None
        except requests.RequestException as exc:
            raise who.fail(f"{what} at {_shown(url)} broke off its answer ({type(exc).__name__})") from None


def json_answer(who: Who, what: str, content: bytes) -> dict[str, Any]:
    try:
        value = json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        raise who.fail(f"{what} answered something that is not JSON") from None
    if not isinstance(value, dict):
        raise who.fail(f"{what} answered JSON that is not an object")
    return value


def field(who: Who, what: str, value: Mapping[str, Any], name: str) -> str:
    found = value.get(name)
    if not isinstance(found, str) or not found:
        raise who.fail(f"{what} answered without {name}")
    return found


def _shown(url: str) -> str:
    """The endpoint without its query (a query may carry a token: STS's WebIdentityToken)."""
    return url.split("?", 1)[0]


def _error_code(content: bytes) -> str:
    """The service's error code (``ExpiredTokenException``, ``invalid_grant``...), never its
    whole body, which might echo what was sent."""
    text = content[:_ERROR_BYTES].decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        match = re.search(r"<Code>([A-Za-z0-9_.]{1,64})</Code>", text)
        return f" ({match.group(1)})" if match else ""
    if isinstance(value, dict):
        for key in ("__type", "error", "code"):
            code = value.get(key)
            if isinstance(code, dict):
                code = code.get("status") or code.get("code")
            if (
                isinstance(code, str)
                and len(code) <= 64
                and code.replace("_", "").replace("#", "").replace(".", "").isalnum()
            ):
                return f" ({code.rsplit('#', 1)[-1]})"
    return ""
