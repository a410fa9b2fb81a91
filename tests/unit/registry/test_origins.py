"""lockgate.registry.origins: which URLs are the registry's own host, and where redirects lead."""

from __future__ import annotations

import pytest

from lockgate.registry import origins


@pytest.mark.parametrize(
    ("url", "home", "same"),
    [
        pytest.param("https://ghcr.io/v2/a/blobs/uploads/1", "https://ghcr.io", True, id="same-host"),
        pytest.param("https://GHCR.io:443/v2/", "https://ghcr.io", True, id="explicit-default-port"),
        pytest.param("https://pkg-containers.githubusercontent.com/x", "https://ghcr.io", False, id="cdn"),
        pytest.param("https://ghcr.io.evil.example/v2/", "https://ghcr.io", False, id="suffix-trick"),
        pytest.param("https://evil.example/@ghcr.io/v2/", "https://ghcr.io", False, id="at-in-path"),
        pytest.param("https://ghcr.io@evil.example/v2/", "https://ghcr.io", False, id="userinfo-trick"),
        pytest.param("http://ghcr.io/v2/", "https://ghcr.io", False, id="downgrade-to-plain-http"),
        pytest.param("https://ghcr.io:5000/v2/", "https://ghcr.io", False, id="other-port"),
        pytest.param("http://127.0.0.1:5000/v2/x", "http://127.0.0.1:5000", True, id="loopback-same-port"),
        pytest.param("http://127.0.0.1:5001/v2/x", "http://127.0.0.1:5000", False, id="loopback-other-port"),
        pytest.param("https://127.0.0.1:5000/v2/x", "http://127.0.0.1:5000", True, id="upgrade-to-https"),
        pytest.param("http://[::1]:5000/v2/", "http://[::1]:5000", True, id="ipv6"),
        pytest.param("http://127.0.0.1:x/v2/", "http://127.0.0.1:5000", False, id="port-not-a-number"),
    ],
)
def test_same_host(url: str, home: str, same: bool) -> None:
    assert origins.same_host(url, home) is same


@pytest.mark.parametrize(
    ("method", "status", "location", "hop"),
    [
        pytest.param(
            "GET", 307, "https://cdn.example/blob?sig=1", ("https://cdn.example/blob?sig=1", "GET", True)
        ),
        pytest.param("HEAD", 302, "/v2/other", ("https://reg.example/v2/other", "HEAD", True), id="relative"),
        pytest.param(
            "PUT", 308, "https://up.example/u", ("https://up.example/u", "PUT", True), id="308-keeps"
        ),
        pytest.param("POST", 302, "https://x.example/", ("https://x.example/", "GET", False), id="302-post"),
        pytest.param("PUT", 303, "https://x.example/", ("https://x.example/", "GET", False), id="303-put"),
        pytest.param("HEAD", 303, "https://x.example/", ("https://x.example/", "HEAD", True), id="303-head"),
        pytest.param("GET", 200, "https://x.example/", None, id="not-a-redirect"),
        pytest.param("GET", 307, "", None, id="no-location"),
        pytest.param("GET", 307, "file:///etc/passwd", None, id="not-http"),
    ],
)
def test_redirect(method: str, status: int, location: str, hop: tuple[str, str, bool] | None) -> None:
    found = origins.redirect(method, status, location, "https://reg.example/v2/app/blobs/sha256:1")
    assert (None if found is None else (found.url, found.method, found.keep_body)) == hop


def test_shown_is_host_and_port_only() -> None:
    assert origins.shown("https://s3.example/bucket/key?X-Amz-Signature=abc") == "s3.example:443"
    assert origins.shown("http://[::1]:5000/v2/") == "[::1]:5000"
