"""Credentials are masked in every message (issue 15, item 6): URL userinfo, token
parameters and auth headers, with the shape of the URL kept."""

from __future__ import annotations

import pytest

from lockgate.errors import AuthError, LockgateError, UsageError
from lockgate.redact import has_userinfo, mask_reference, scrub
from lockgate.registry import parse

SECRET = "SuperSecretPW"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("oci://admin:SuperSecretPW@host/repo:tag", "oci://admin:***@host/repo:tag"),
        ("https://ghp_SuperSecretPW@github.com/o/r.git", "https://***@github.com/o/r.git"),
        (
            "fetch from https://x:SuperSecretPW@git.example/r failed",
            "fetch from https://x:***@git.example/r failed",
        ),
        ("https://a:p@SuperSecretPW@h/r", "https://a:***@h/r"),
        (
            "https://auth/token?scope=s&access_token=SuperSecretPW&n=1",
            "https://auth/token?scope=s&access_token=***&n=1",
        ),
        ("GET https://s3/b?X-Amz-Signature=SuperSecretPW", "GET https://s3/b?X-Amz-Signature=***"),
        ("https://h/v2/r/blobs/uploads/u?_state=SuperSecretPW", "https://h/v2/r/blobs/uploads/u?_state=***"),
        ("Authorization: Bearer SuperSecretPW", "Authorization: Bearer ***"),
        ("oci://host/repo@sha256:" + "a" * 64, "oci://host/repo@sha256:" + "a" * 64),
        ("plain text, user@example.com", "plain text, user@example.com"),
    ],
)
def test_scrub(text: str, expected: str) -> None:
    assert scrub(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "oci://admin:SuperSecretPW@localhost:5000/repo:tag",
        "admin:SuperSecretPW@localhost:5000/repo:tag",
        "oci://admin:Super/SecretPW@localhost:5000/repo",
        "oci://admin:Super@SecretPW@localhost:5000/repo@sha256:" + "a" * 64,
        "oci://admin:SuperSecretPW@localhost",
        "oci://SuperSecretPW@ghcr.io/org/repo:v1",
        "https://admin:SuperSecretPW@ghcr.io/org/repo",
    ],
)
def test_a_reference_with_credentials_is_refused_without_repeating_them(text: str) -> None:
    assert has_userinfo(text)
    assert "SuperSecret" not in mask_reference(text) and "SecretPW" not in mask_reference(text)
    with pytest.raises(UsageError) as caught:
        parse(text)
    message = caught.value.message
    assert "SuperSecret" not in message and "SecretPW" not in message
    assert "docker login" in message and "--creds" in message and "spec.secretRef.name" in message


@pytest.mark.parametrize(
    "text",
    ["oci://localhost:5000/repo:tag", "ghcr.io/org/repo@sha256:" + "b" * 64, "oci://h.io/r@latest"],
)
def test_references_without_userinfo_are_not_taken_for_credentials(text: str) -> None:
    assert not has_userinfo(text)


def test_every_error_message_is_scrubbed() -> None:
    for cls in (LockgateError, UsageError, AuthError):
        error = cls(f"cannot reach https://u:{SECRET}@h/x?token={SECRET}")
        assert SECRET not in error.message and SECRET not in str(error)
        assert error.message == "cannot reach https://u:***@h/x?token=***"


def test_serve_log_lines_are_scrubbed() -> None:
    import logging

    from runner.serve.log import JsonFormatter, TextFormatter

    record = logging.LogRecord("lockgate", logging.WARNING, __file__, 1, "pass failed", None, None)
    record.reason = f"GET https://u:{SECRET}@h/v2/?access_token={SECRET}"
    for formatter in (JsonFormatter(), TextFormatter()):
        line = formatter.format(record)
        assert SECRET not in line and "u:***@h" in line


def test_click_usage_errors_are_scrubbed(capsys: pytest.CaptureFixture[str]) -> None:
    from lockgate.cli import main

    # click quotes a refused choice back: here a URL with credentials given by mistake
    code = main(["list", "oci://h.io/r", "--output", f"https://u:{SECRET}@h.io"])
    said = capsys.readouterr()
    assert code == 2
    assert "u:***@h.io" in said.err and SECRET not in said.out + said.err
