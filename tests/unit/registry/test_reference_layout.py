"""``oci-layout://DIR[:tag][@digest]`` references: where the tag ends and the directory begins."""

from __future__ import annotations

import pytest

from lockgate.errors import UsageError
from lockgate.registry import reference

DIGEST = "sha256:" + "b" * 64


@pytest.mark.parametrize(
    ("text", "layout", "tag", "digest"),
    [
        ("oci-layout:///srv/mirror", "/srv/mirror", None, None),
        ("oci-layout:///srv/mirror:1.2.3", "/srv/mirror", "1.2.3", None),
        ("oci-layout://mirror:v1", "mirror", "v1", None),
        (f"oci-layout://./a/b@{DIGEST}", "./a/b", None, DIGEST),
        (f"oci-layout:///m:v1@{DIGEST}", "/m", "v1", DIGEST),
        # a ':' in a parent directory is not a tag
        ("oci-layout:///mnt/c:d/mirror", "/mnt/c:d/mirror", None, None),
    ],
)
def test_parses_layouts(text: str, layout: str, tag: str | None, digest: str | None) -> None:
    ref = reference.parse(text)
    assert (ref.layout, ref.tag, ref.digest) == (layout, tag, digest)
    assert str(ref) == text
    assert not ref.is_loopback


def test_pinned_url_keeps_the_scheme() -> None:
    assert reference.parse("oci-layout:///m:v1").pinned(DIGEST) == f"oci-layout:///m@{DIGEST}"
    assert reference.parse("oci://ghcr.io/a:v1").pinned(DIGEST) == f"oci://ghcr.io/a@{DIGEST}"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("oci-layout://", "expected oci-layout://DIRECTORY"),
        ("oci-layout:///m:bad tag", "invalid tag"),
        ("oci-layout:///m@sha256:abc", "invalid digest"),
    ],
)
def test_refuses_layouts(text: str, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        reference.parse(text)
