"""Reading a registry's replies: bodies within a limit, JSON within the parsing bounds, and the
error a refusal is (``failure``: the registry's first error code and message, as a
``LockgateError`` of the right class). Shared by ``client`` and ``referrers``.
"""

from __future__ import annotations

from typing import Any

import requests

from lockgate import replies
from lockgate.errors import AuthError, LockgateError, RegistryError, ReplyTooLarge, ResolveError
from lockgate.registry import oci

_ERROR_BODY_BYTES = replies.MAX_REPLY_BYTES


def read_limited(response: requests.Response, limit: int, where: str) -> bytes:
    return read_body(response, limit, f"manifest of oci://{where}")


def read_body(response: requests.Response, limit: int, what: str) -> bytes:
    try:
        return replies.read(response, limit=limit)
    except ReplyTooLarge as exc:
        raise RegistryError(f"{what} is larger than {limit} bytes; refusing it ({exc.detail})") from None


def json_body(response: requests.Response, limit: int, what: str) -> Any:
    """A streamed JSON body within ``limit`` bytes and the parsing bounds; malformed JSON is a
    registry error."""
    data = read_body(response, limit, what)
    try:
        return oci.read(data, what, max_bytes=limit)
    except ValueError:
        raise RegistryError(f"{what}: the registry answered something that is not JSON") from None


def failure(response: requests.Response, where: str) -> Exception:
    code, message = "", ""
    try:
        # an error body is read for its first code and message only, within the cap and the
        # parsing bounds (a streamed error never whole)
        body = oci.read(
            replies.read(response, limit=_ERROR_BODY_BYTES), "error body", max_bytes=_ERROR_BODY_BYTES
        )
        first = (body.get("errors") or [{}])[0] if isinstance(body, dict) else {}
        code, message = str(first.get("code", "")), str(first.get("message", ""))
    except (ValueError, AttributeError, IndexError, LockgateError, requests.RequestException):
        pass
    detail = (
        f"HTTP {response.status_code}" + (f" {code}" if code else "") + (f": {message}" if message else "")
    )
    if response.status_code == 403:
        return AuthError(f"oci://{where}: access denied ({detail}); check the credentials' permissions")
    if response.status_code == 404:
        return ResolveError(f"oci://{where} not found ({detail})")
    return RegistryError(f"oci://{where}: {detail}")
