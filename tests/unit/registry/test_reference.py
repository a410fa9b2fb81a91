"""Reference parsing: the shapes accepted, and the ones refused before any network call."""

from __future__ import annotations

import pytest

from lockgate.errors import UsageError
from lockgate.registry import reference

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("text", "host", "repo", "tag", "digest"),
    [
        ("oci://ghcr.io/org/app:v1", "ghcr.io", "org/app", "v1", None),
        ("oci://127.0.0.1:5000/a/b/c", "127.0.0.1:5000", "a/b/c", None, None),
        (f"oci://localhost/app@{DIGEST}", "localhost", "app", None, DIGEST),
        (f"oci://reg.io:443/app:main@{DIGEST}", "reg.io:443", "app", "main", DIGEST),
        ("ghcr.io/org/my_app-1:1.2.3", "ghcr.io", "org/my_app-1", "1.2.3", None),
    ],
)
def test_parses(text: str, host: str, repo: str, tag: str | None, digest: str | None) -> None:
    ref = reference.parse(text)
    assert (ref.host, ref.repository, ref.tag, ref.digest) == (host, repo, tag, digest)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("oci://ghcr.io", "expected oci://REGISTRY/REPOSITORY"),
        ("oci://org/app:v1", "is not a registry host"),
        ("oci://ghcr.io/Org/app", "must be lowercase"),
        ("oci://ghcr.io/app:bad/tag", "must be lowercase"),
        ("oci://ghcr.io/app:-x", "invalid tag"),
        ("oci://ghcr.io/app@sha256:abc", "invalid digest"),
        ("https://ghcr.io/app", "only oci://"),
    ],
)
def test_refuses(text: str, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        reference.parse(text)


def test_default_tag_and_ref() -> None:
    assert reference.parse("oci://r.io/a", default_tag="latest").ref == "latest"
    assert reference.parse(f"oci://r.io/a:v1@{DIGEST}").ref == DIGEST
    assert str(reference.parse("oci://r.io/a").with_tag("x")) == "oci://r.io/a:x"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1:5000", True),
        ("localhost:80", True),
        ("localhost", True),
        ("[::1]:5000", True),
        ("ghcr.io", False),
        ("localhost.example.com", False),
    ],
)
def test_loopback(host: str, loopback: bool) -> None:
    assert reference.Reference(host, "a").is_loopback is loopback
