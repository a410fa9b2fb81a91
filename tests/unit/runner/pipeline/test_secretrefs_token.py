"""secretrefs.usable_token: webhook and status page tokens of at least 16 bytes, or a usage error."""

from __future__ import annotations

import pytest

from lockgate.errors import ExitCode, UsageError
from runner.pipeline import secretrefs

WHERE = "Secret/lockgate-system/hook (spec.webhook.secretRef.name)"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        pytest.param({"token": b""}, "its 'token' entry is 0 bytes long", id="empty"),
        pytest.param({"token": b"x" * 15}, "its 'token' entry is 15 bytes long", id="15-bytes"),
        pytest.param({"other": b"x" * 32}, "has no 'token' entry", id="missing"),
    ],
)
def test_a_missing_or_short_token_is_refused_with_the_reason(data: dict[str, bytes], problem: str) -> None:
    with pytest.raises(UsageError) as caught:
        secretrefs.usable_token(data, where=WHERE, what="webhook")
    assert caught.value.exit_code == ExitCode.USAGE
    assert caught.value.message.startswith(f"{WHERE}: {problem}; the webhook token must be at least 16 bytes")
    assert "openssl rand -hex 32" in caught.value.message


def test_the_value_never_appears_in_the_message() -> None:
    with pytest.raises(UsageError) as caught:
        secretrefs.usable_token({"token": b"sup3r-s3cret"}, where=WHERE, what="webhook")
    assert "sup3r-s3cret" not in caught.value.message


def test_sixteen_bytes_and_more_are_the_token() -> None:
    assert secretrefs.usable_token({"token": b"y" * 16}, where=WHERE, what="status page") == b"y" * 16
