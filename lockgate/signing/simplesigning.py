"""The simple-signing payload that cosign signs for a key signature (legacy ``.sig`` layout).

The payload names the signed manifest digest and the repository. cosign writes it as
Go's ``encoding/json`` does (struct field order, no spaces, ``optional`` null when there
are no annotations, map keys sorted, ``<``, ``>`` and ``&`` escaped), and so do we, so a
signature made by either tool is over the same bytes.

Checking a payload is ours to do strictly: Flux's legacy-path verification does not look
at the digest inside, which lets a valid signature be copied to another artifact.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lockgate import boundedjson
from lockgate.errors import VerificationError

MEDIA_TYPE = "application/vnd.dev.cosign.simplesigning.v1+json"
SIGNATURE_TYPE = "cosign container image signature"


@dataclass(frozen=True)
class SimpleSigning:
    """What a simple-signing payload claims: this repository's manifest with this digest."""

    docker_reference: str
    manifest_digest: str
    annotations: dict[str, str] = field(default_factory=dict)


def encode(claim: SimpleSigning) -> bytes:
    """The payload bytes, exactly as cosign writes them."""
    doc: dict[str, Any] = {
        "critical": {
            "identity": {"docker-reference": claim.docker_reference},
            "image": {"docker-manifest-digest": claim.manifest_digest},
            "type": SIGNATURE_TYPE,
        },
        "optional": dict(sorted(claim.annotations.items())) or None,
    }
    return _go_json(doc)


def decode(payload: bytes) -> SimpleSigning:
    """Parse a payload; anything that is not a cosign image signature is a ``VerificationError``."""
    try:
        doc = boundedjson.json_value(payload, "the signed payload", max_bytes=len(payload))
    except (ValueError, UnicodeDecodeError, boundedjson.LimitExceeded):
        raise VerificationError("the signed payload is not valid JSON") from None
    try:
        critical = doc["critical"]
        kind = critical["type"]
        reference = critical["identity"]["docker-reference"]
        digest = critical["image"]["docker-manifest-digest"]
        optional = doc.get("optional") or {}
    except (KeyError, TypeError):
        raise VerificationError(
            "the signed payload lacks critical.identity, critical.image or critical.type"
        ) from None
    if kind != SIGNATURE_TYPE:
        raise VerificationError(f"the signed payload has type {kind!r}, expected {SIGNATURE_TYPE!r}")
    if not isinstance(reference, str) or not isinstance(digest, str) or not isinstance(optional, dict):
        raise VerificationError("the signed payload has fields of the wrong type")
    return SimpleSigning(
        docker_reference=reference,
        manifest_digest=digest,
        annotations={str(k): str(v) for k, v in optional.items()},
    )


def check(claim: SimpleSigning, *, digest: str, repository: str | None) -> None:
    """Return if ``claim`` names exactly ``digest`` (and ``repository`` when given); raise if not.

    ``repository`` is ``<registry>/<path>`` as cosign writes it; a tag or digest suffix in
    the claimed reference is ignored, as cosign ignores it.
    """
    if claim.manifest_digest != digest:
        raise VerificationError(
            f"the signature is for {claim.manifest_digest}, not for {digest}: "
            "it was made for another artifact and copied here"
        )
    if repository is not None:
        check_repository(claim.docker_reference, repository)


def check_repository(reference: str, repository: str) -> None:
    """Return if ``reference`` (a signature's claim, a tag or digest suffix ignored) names
    ``repository``; raise if not."""
    claimed = strip_reference(reference)
    if claimed != repository:
        raise VerificationError(
            f"the signature names repository {claimed!r}, expected {repository!r} (a mirror or an "
            "oci-layout copy: name the repository it was copied from with --signed-repository, "
            "spec.verify.signedRepository in a Sync)"
        )


def strip_reference(reference: str) -> str:
    """``registry/repo`` from ``registry/repo[:tag][@digest]``."""
    name = reference.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def _go_json(doc: object) -> bytes:
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    for char, escape in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return text.encode()
