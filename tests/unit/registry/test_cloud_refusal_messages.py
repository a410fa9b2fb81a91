"""What lockgate says when a cloud token service refuses: the service's code and message, as
each documents its error body, never a secret lockgate sent (``cloud.http.refusal``)."""

from __future__ import annotations

import json

import pytest

from lockgate.registry.cloud import http as cloud_http

TOKEN = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXN1YmplY3Q.c2lnbmF0dXJl"

CASES = {
    "aws-query-xml": (
        '<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type>'
        "<Code>ValidationError</Code><Message>1 validation error detected: Value null at "
        "&apos;roleSessionName&apos; failed to satisfy constraint: Member must not be null</Message>"
        "</Error><RequestId>r</RequestId></ErrorResponse>",
        " (ValidationError: 1 validation error detected: Value null at 'roleSessionName' failed to "
        "satisfy constraint: Member must not be null)",
    ),
    "aws-json": (
        json.dumps(
            {
                "__type": "com.amazon.coral.service#InvalidSignatureException",
                "message": "Credential should be scoped to a valid region.",
            }
        ),
        " (InvalidSignatureException: Credential should be scoped to a valid region.)",
    ),
    "oauth-google-sts": (
        json.dumps({"error": "invalid_grant", "error_description": f"The ID Token {TOKEN} is not trusted."}),
        " (invalid_grant: The ID Token <redacted> is not trusted.)",
    ),
    "oauth-entra-first-line": (
        json.dumps(
            {
                "error": "invalid_request",
                "error_description": "AADSTS90002: Tenant 'tenant-b' not found.\r\nTrace ID: 1\r\n",
                "error_codes": [90002],
            }
        ),
        " (invalid_request: AADSTS90002: Tenant 'tenant-b' not found.)",
    ),
    "google-api": (
        json.dumps({"error": {"code": 400, "message": "Scope required.", "status": "INVALID_ARGUMENT"}}),
        " (INVALID_ARGUMENT: Scope required.)",
    ),
    "acr": (
        json.dumps({"errors": [{"code": "UNAUTHORIZED", "message": "service mismatch"}]}),
        " (UNAUTHORIZED: service mismatch)",
    ),
    "not-an-error-body": ("<html>bad gateway</html>", ""),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_refusal_names_the_service_code_and_its_message(name: str) -> None:
    body, said = CASES[name]
    assert cloud_http.refusal(body, hidden=[TOKEN]) == said


def test_a_long_message_is_cut_and_control_characters_go() -> None:
    body = json.dumps({"error": "invalid_request", "error_description": "x\x1b[31m" + "y" * 1000})
    said = cloud_http.refusal(body)
    assert "\x1b" not in said and len(said) < cloud_http.MAX_CAUSE + 30 and said.endswith("…)")


def test_what_was_sent_as_a_secret_is_found_in_the_form_the_body_and_the_credential_header() -> None:
    hidden = cloud_http._sent_secrets(
        {"Authorization": f"Bearer {TOKEN}"},
        None,
        f"Action=AssumeRoleWithWebIdentity&WebIdentityToken={TOKEN}x&RoleSessionName=s".encode(),
    )
    assert TOKEN in hidden and f"{TOKEN}x" in hidden and "s" not in hidden
