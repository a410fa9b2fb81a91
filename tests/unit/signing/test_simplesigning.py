"""The simple-signing payload: cosign's exact bytes, and the checks that catch moved signatures."""

from __future__ import annotations

import pytest

from lockgate.errors import VerificationError
from lockgate.signing import simplesigning
from lockgate.signing.simplesigning import SimpleSigning

DIGEST = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32


def test_payload_bytes_are_cosigns() -> None:
    claim = SimpleSigning(docker_reference="127.0.0.1:5000/team/app", manifest_digest=DIGEST)
    assert simplesigning.encode(claim) == (
        b'{"critical":{"identity":{"docker-reference":"127.0.0.1:5000/team/app"},'
        b'"image":{"docker-manifest-digest":"' + DIGEST.encode() + b'"},'
        b'"type":"cosign container image signature"},"optional":null}'
    )


def test_annotations_are_sorted_and_html_escaped_as_go_does() -> None:
    claim = SimpleSigning("r.io/a", DIGEST, annotations={"z": "1", "a": "<&>"})
    assert simplesigning.encode(claim).endswith(b'"optional":{"a":"\\u003c\\u0026\\u003e","z":"1"}}')
    assert simplesigning.decode(simplesigning.encode(claim)) == claim


def test_check_accepts_the_same_digest_and_repository() -> None:
    claim = SimpleSigning("r.io/team/app", DIGEST)
    simplesigning.check(claim, digest=DIGEST, repository="r.io/team/app")
    simplesigning.check(SimpleSigning("r.io/team/app:v1", DIGEST), digest=DIGEST, repository="r.io/team/app")


@pytest.mark.parametrize(
    ("name", "claim", "message"),
    [
        ("moved to another digest", SimpleSigning("r.io/team/app", OTHER), "made for another artifact"),
        ("other repository", SimpleSigning("r.io/team/other", DIGEST), "names repository 'r.io/team/other'"),
        ("other registry", SimpleSigning("evil.io/team/app", DIGEST), "names repository"),
    ],
)
def test_check_refuses(name: str, claim: SimpleSigning, message: str) -> None:
    with pytest.raises(VerificationError, match=message):
        simplesigning.check(claim, digest=DIGEST, repository="r.io/team/app")


@pytest.mark.parametrize(
    ("name", "payload", "message"),
    [
        ("not json", b"\x00garbage", "not valid JSON"),
        ("no critical", b'{"optional":null}', "lacks critical"),
        (
            "other type",
            b'{"critical":{"identity":{"docker-reference":"a"},"image":{"docker-manifest-digest":"b"},'
            b'"type":"atomic container signature"}}',
            "has type",
        ),
        (
            "wrong field types",
            b'{"critical":{"identity":{"docker-reference":1},'
            b'"image":{"docker-manifest-digest":"b"},'
            b'"type":"cosign container image signature"}}',
            "wrong type",
        ),
    ],
)
def test_decode_refuses_malformed_payloads(name: str, payload: bytes, message: str) -> None:
    with pytest.raises(VerificationError, match=message):
        simplesigning.decode(payload)


@pytest.mark.parametrize(
    ("reference", "repository"),
    [
        ("r.io/a/b", "r.io/a/b"),
        ("r.io:5000/a/b:tag", "r.io:5000/a/b"),
        ("r.io:5000/a@sha256:00", "r.io:5000/a"),
    ],
)
def test_strip_reference(reference: str, repository: str) -> None:
    assert simplesigning.strip_reference(reference) == repository
