"""Take credentials out of text before a user, a log or a JSON document sees it.

Every message lockgate writes can carry a URL or a reference a user typed or a server
sent: ``oci://user:password@host/...``, ``https://TOKEN@github.com/...``, a token service
or storage redirect with ``?access_token=...`` or a presigned ``X-Amz-Signature``. ``scrub``
keeps the shape (so the message still says which URL) and masks the secret part:
``user:***@``, ``***@`` (a bare token as userinfo), ``token=***``, ``Bearer ***``.
"""

from __future__ import annotations

import re

MASK = "***"

#: ``scheme://userinfo@``: userinfo runs to the last ``@`` before any ``/``, space or quote
#: (a password may hold an unescaped ``@``)
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/\s'\"]+)@")

#: query or fragment parameters whose value is a credential (case-insensitive)
_SECRET_PARAMS = (
    "access_token",
    "refresh_token",
    "id_token",
    "token",
    "password",
    "passwd",
    "pwd",
    "secret",
    "client_secret",
    "api_key",
    "apikey",
    "key",
    "sig",
    "signature",
    "code",
    "_state",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
)
_QUERY = re.compile(
    r"(?P<lead>[?&#;](?:" + "|".join(re.escape(p) for p in _SECRET_PARAMS) + r")=)(?P<value>[^&#\s'\"]+)",
    re.IGNORECASE,
)
_AUTH_HEADER = re.compile(r"\b(?P<scheme>Bearer|Basic)\s+(?P<value>[A-Za-z0-9._~+/=-]{8,})")


def _userinfo(match: re.Match[str]) -> str:
    user, sep, _ = match.group("user").partition(":")
    shown = f"{user}:{MASK}" if sep else MASK
    return f"{match.group('scheme')}{shown}@"


def scrub(text: str) -> str:
    """``text`` with URL userinfo, credential query parameters and auth headers masked."""
    if "@" not in text and "=" not in text and "Bearer" not in text and "Basic" not in text:
        return text
    text = _USERINFO.sub(_userinfo, text)
    text = _QUERY.sub(lambda m: m.group("lead") + MASK, text)
    return _AUTH_HEADER.sub(lambda m: f"{m.group('scheme')} {MASK}", text)


def _userinfo_end(reference: str) -> int:
    """Where the userinfo of a reference ends (the index of its ``@``), or -1 when it has none.

    A reference's only other ``@`` introduces a digest, which never holds a ``/``; so an
    ``@`` with a ``/`` after it ends a userinfo, even one whose password holds an
    unescaped ``/`` or ``@`` (the last such ``@`` is the one before the host).
    """
    start = reference.index("://") + 3 if "://" in reference else 0
    end = -1
    at = reference.find("@", start)
    while at != -1:
        if "/" in reference[at + 1 :]:
            end = at
        at = reference.find("@", at + 1)
    if end == -1:
        authority = reference[start:].split("/", 1)[0]
        if "@" in authority:
            end = start + authority.rindex("@")
    return end


def has_userinfo(reference: str) -> bool:
    """Whether ``reference`` (``[scheme://]authority/path``) carries ``user[:password]@``."""
    return _userinfo_end(reference) != -1


def mask_reference(reference: str) -> str:
    """``reference`` with its userinfo masked (``user:***@``), with or without a scheme."""
    end = _userinfo_end(reference)
    if end == -1:
        return scrub(reference)
    start = reference.index("://") + 3 if "://" in reference else 0
    user, sep, _ = reference[start:end].partition(":")
    shown = f"{user}:{MASK}" if sep else MASK
    return scrub(reference[:start] + shown + reference[end:])
