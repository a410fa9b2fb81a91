"""Signature documents: the .sig manifest keeps every signature, the fallback index every referrer."""

from __future__ import annotations

import json

from lockgate.registry.oci import Referrers
from lockgate.signing import layout, simplesigning

DIGEST = "sha256:" + "ab" * 32


def test_tags_follow_cosign_and_the_oci_fallback_scheme() -> None:
    assert layout.signature_tag(DIGEST) == "sha256-" + "ab" * 32 + ".sig"
    assert layout.referrers_tag(DIGEST) == "sha256-" + "ab" * 32


def test_first_signature_makes_a_cosign_signature_manifest() -> None:
    layer = layout.signature_layer(b"payload", "c2ln")
    manifest, config = layout.add_signature_layer(None, layer)
    assert manifest["mediaType"] == layout.OCI_MANIFEST
    assert manifest["config"]["mediaType"] == layout.OCI_IMAGE_CONFIG
    assert manifest["config"]["digest"] == config.digest
    assert manifest["layers"] == [
        {
            "mediaType": simplesigning.MEDIA_TYPE,
            "size": 7,
            "digest": layout.sha256_digest(b"payload"),
            "annotations": {layout.SIGNATURE_ANNOTATION: "c2ln"},
        }
    ]
    assert json.loads(config.data)["rootfs"]["diff_ids"] == [layout.sha256_digest(b"payload")]


def test_signing_again_appends_and_keeps_foreign_layers() -> None:
    foreign = {"mediaType": "application/x-other", "size": 1, "digest": "sha256:" + "00" * 32}
    first, _ = layout.add_signature_layer({"layers": [foreign]}, layout.signature_layer(b"p", "one"))
    second, config = layout.add_signature_layer(first, layout.signature_layer(b"p", "two"))
    assert [item.get("annotations", {}).get(layout.SIGNATURE_ANNOTATION) for item in second["layers"]] == [
        None,
        "one",
        "two",
    ]
    assert len(json.loads(config.data)["history"]) == 3


def test_the_same_signature_is_not_added_twice() -> None:
    layer = layout.signature_layer(b"p", "one")
    once, _ = layout.add_signature_layer(None, layer)
    twice, _ = layout.add_signature_layer(once, layer)
    assert twice == once


def test_bundle_referrer_is_what_cosign_v3_writes() -> None:
    subject = {"mediaType": layout.OCI_MANIFEST, "size": 10, "digest": DIGEST}
    manifest, config, layer = layout.bundle_referrer(
        b'{"bundle":1}',
        subject=subject,
        predicate_type="https://sigstore.dev/cosign/sign/v1",
        created="2026-01-01T00:00:00Z",
    )
    assert manifest["artifactType"] == layout.BUNDLE_MEDIA_TYPE
    assert manifest["config"] == {
        "mediaType": layout.OCI_EMPTY,
        "size": 2,
        "digest": layout.sha256_digest(b"{}"),
        "artifactType": layout.BUNDLE_MEDIA_TYPE,
    }
    assert config.data == b"{}"
    assert manifest["layers"] == [layer.descriptor()]
    assert layer.media_type == layout.BUNDLE_MEDIA_TYPE
    assert manifest["subject"] == subject
    assert manifest["annotations"] == {
        "org.opencontainers.image.created": "2026-01-01T00:00:00Z",
        "dev.sigstore.bundle.content": "dsse-envelope",
        "dev.sigstore.bundle.predicateType": "https://sigstore.dev/cosign/sign/v1",
    }


def test_fallback_index_keeps_other_referrers() -> None:
    other = {
        "mediaType": layout.OCI_MANIFEST,
        "size": 3,
        "digest": "sha256:" + "11" * 32,
        "artifactType": "application/spdx+json",
    }
    manifest, _, _ = layout.bundle_referrer(b"{}", subject={}, predicate_type="p", created="t")
    data = layout.encode(manifest)
    entry = layout.referrer_entry(manifest, data)
    index = layout.add_referrer({"schemaVersion": 2, "manifests": [other]}, entry)
    assert index["mediaType"] == layout.OCI_INDEX
    assert index["manifests"] == [other, entry]
    assert entry["artifactType"] == layout.BUNDLE_MEDIA_TYPE
    assert entry["annotations"] == manifest["annotations"]
    assert layout.add_referrer(index, entry) == index
    listed = Referrers.from_bytes(layout.encode(index), from_api=False, where="test")
    assert [d.digest for d in listed.of_type(layout.BUNDLE_MEDIA_TYPE)] == [entry["digest"]]
