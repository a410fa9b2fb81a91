"""The HTTP calls of the cloud token exchanges: bounded answers, errors that name the
provider, the identity, the registry and the endpoint, with the service's own error code and
message (``refusal``: what the service says was wrong), and never a token lockgate sent.

Every answer is read through ``lockgate.replies`` (streamed, at most ``MAX_ANSWER``): a token
service answering without end costs a megabyte, not the process.
"""

from __future__ import annotations

import html
import json
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import requests

from lockgate import replies
from lockgate.errors import ReplyTooLarge
from lockgate.registry.cloud import CloudAuthError

#: a token service's answer is a few fields: the one cap of every reply lockgate reads whole
MAX_ANSWER = replies.MAX_REPLY_BYTES
#: how much of an error answer is looked at, and how much of its message is shown
_ERROR_BYTES = 4096
MAX_CAUSE = 300
#: form fields that carry a credential: never echoed from a service's error message
SECRET_FIELDS = frozenset(
    {
        "WebIdentityToken",
        "subject_token",
        "client_assertion",
        "access_token",
        "refresh_token",
        "client_secret",
    }
)
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
                text = replies.read(reply, limit=MAX_ANSWER)[:_ERROR_BYTES].decode("utf-8", "replace")
                cause = refusal(text, hidden=_sent_secrets(headers, form, body))
                status = reply.status_code
                raise who.fail(f"{what} at {_shown(url)} refused the request: HTTP {status}{cause}")
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


def _sent_secrets(
    headers: Mapping[str, str] | None, form: Mapping[str, str] | None, body: bytes | None
) -> list[str]:
    """What this request carried that a service's error message must not carry on: the
    credential header and every token field of the form (sent as ``form`` or as a body)."""
    fields = dict(form or {})
    if body and not fields:
        try:
            fields = dict(urllib.parse.parse_qsl(body.decode(), strict_parsing=True))
        except (UnicodeDecodeError, ValueError):
            fields = {}
    hidden = [v for k, v in fields.items() if k in SECRET_FIELDS and v]
    for name, value in (headers or {}).items():
        if name.lower() == "authorization" and value:
            hidden += [value, value.partition(" ")[2]]
    return [h for h in hidden if h]


def refusal(text: str, *, hidden: Iterable[str] = ()) -> str:
    """`` (CODE: message)`` of a token service's error body, as each service documents it:
    AWS JSON (``__type``, ``message``) and XML (``<Code>``, ``<Message>``), OAuth 2.0
    (``error``, ``error_description``: Google STS, Entra ID), Google APIs (``error.status``,
    ``error.message``) and ACR (``errors[0].code``, ``.message``). The message is the first
    line only (Entra appends trace IDs), without control characters, at most ``MAX_CAUSE``
    characters, and with every value in ``hidden`` (what was sent as a secret) blanked."""
    code, message = _code_and_message(text)
    if not code:
        return ""
    message = message.strip().splitlines()[0] if message.strip() else ""
    for secret in sorted(hidden, key=len, reverse=True):
        if len(secret) >= 4:
            message = message.replace(secret, "<redacted>")
    message = "".join(c if c.isprintable() else " " for c in message)
    if len(message) > MAX_CAUSE:
        message = message[: MAX_CAUSE - 1] + "…"
    return f" ({code}: {message})" if message else f" ({code})"


def _code_and_message(text: str) -> tuple[str, str]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        found = re.search(r"<Code>([A-Za-z0-9_.]{1,64})</Code>", text)
        said = re.search(r"<Message>([^<]{0,2000})</Message>", text)
        return (found.group(1) if found else "", html.unescape(said.group(1)) if said else "")
    if not isinstance(value, dict):
        return "", ""
    errors = value.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        value = errors[0]  # ACR (the Distribution error format)
    error = value.get("error")
    if isinstance(error, dict):  # Google APIs
        return _token(error.get("status") or error.get("code")), str(error.get("message") or "")
    for key in ("__type", "error", "code"):
        named = _token(value.get(key))
        if named:
            return named, str(
                value.get("error_description") or value.get("message") or value.get("Message") or ""
            )
    return "", ""


def _token(found: object) -> str:
    """An error code as services write them (``ExpiredTokenException``, ``invalid_grant``,
    ``com.amazon.coral.service#UnrecognizedClientException``: the part after ``#``)."""
    if not isinstance(found, str) or len(found) > 96:
        return ""
    code = found.rsplit("#", 1)[-1]
    return code if code.replace("_", "").replace(".", "").isalnum() else ""
