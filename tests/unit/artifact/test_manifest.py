"""The Flux manifest: exact bytes, field order, media types, and Flux's layer selection."""

from __future__ import annotations

import json

import pytest

from lockgate.artifact import manifest
from lockgate.errors import ResolveError, UsageError
from lockgate.registry.oci import Descriptor, ImageManifest, sha256_digest

LAYER = "sha256:" + "b" * 64


def test_manifest_bytes_follow_go_containerregistry_order() -> None:
    built = manifest.build(
        LAYER, 123, {"org.opencontainers.image.source": "s", "org.opencontainers.image.created": "c"}
    )
    assert built.content == (
        b'{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",'
        b'"config":{"mediaType":"application/vnd.cncf.flux.config.v1+json","size":2,'
        b'"digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},'
        b'"layers":[{"mediaType":"application/vnd.cncf.flux.content.v1.tar+gzip","size":123,'
        b'"digest":"sha256:' + b"b" * 64 + b'"}],'
        b'"annotations":{"org.opencontainers.image.created":"c","org.opencontainers.image.source":"s"}}'
    )
    assert built.digest == sha256_digest(built.content)
    value = json.loads(built.content)
    assert "artifactType" not in value and "subject" not in value
    assert "annotations" not in value["layers"][0]


def test_roundtrip() -> None:
    built = manifest.build(LAYER, 1, {"a": "b"})
    assert ImageManifest.from_bytes(built.content, where="x").to_bytes() == built.content


def test_annotation_flags() -> None:
    assert manifest.parse_annotations(["a=b", "c=d=e", "empty="]) == {"a": "b", "c": "d=e", "empty": ""}
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        manifest.parse_annotations(["novalue"])


def _m(*types: str) -> ImageManifest:
    layers = tuple(Descriptor(t, "sha256:" + str(i) * 64, i) for i, t in enumerate(types))
    return ImageManifest(config=Descriptor(manifest.FLUX_CONFIG, LAYER, 2), layers=layers)


def test_layer_selection() -> None:
    assert manifest.select_layer(_m("text/plain", manifest.FLUX_CONTENT), where="x").size == 1
    assert manifest.select_layer(_m("application/vnd.oci.image.layer.v1.tar+gzip"), where="x").size == 0
    assert (
        manifest.select_layer(
            _m(manifest.FLUX_CONTENT, "text/plain"), media_type="text/plain", where="x"
        ).size
        == 1
    )
    with pytest.raises(ResolveError, match="text/plain is not a tar\\+gzip layer"):
        manifest.select_layer(_m("text/plain"), where="x")
    with pytest.raises(ResolveError, match=r"no layer of media type a/b"):
        manifest.select_layer(_m(manifest.FLUX_CONTENT), media_type="a/b", where="x")


def test_index_is_not_an_artifact() -> None:
    with pytest.raises(
        ResolveError, match=r"is a application/vnd\.oci\.image\.index\.v1\+json, not an image manifest"
    ):
        ImageManifest.from_bytes(
            b'{"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}', where="x"
        )
