"""lockgate pull, inspect, list and tag against the world's registry, with and without auth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from action.artifacts import inspect as inspect_mod
from action.artifacts import push as push_mod
from lockgate import registry as lg_registry
from lockgate.artifact import pull as pull_mod
from lockgate.errors import ResolveError, VerificationError
from lockgate.registry.oci import Descriptor, ImageManifest, sha256_digest
from tests.integration.artifacts_support import client, creds_flag, lockgate, write_tree
from tests.world.registry import Registry


@pytest.fixture(autouse=True)
def _isolated_docker_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))


def _pushed(reg: Registry, unique: str, tmp_path: Path, tag: str = "v1") -> tuple[lg_registry.Reference, str]:
    ref = lg_registry.parse(reg.oci(unique, f":{tag}"))
    result = push_mod.push(str(write_tree(tmp_path / "src", unique)), ref, client(reg, ref))
    return ref, result.digest


@pytest.mark.parametrize("which", ["registry", "auth_registry"])
def test_pull_by_tag_and_digest_round_trips(
    which: str, unique: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    reg: Registry = request.getfixturevalue(which)
    ref, digest = _pushed(reg, unique, tmp_path)
    by_tag = lockgate("pull", str(ref), "-O", str(tmp_path / "a"), "--output", "json", *creds_flag(reg))
    assert by_tag.code == 0, by_tag.err
    assert json.loads(by_tag.out)["digest"] == digest
    by_digest = lockgate("pull", reg.oci(unique, f"@{digest}"), "-O", str(tmp_path / "b"), *creds_flag(reg))
    assert by_digest.code == 0, by_digest.err
    for out in ("a", "b"):
        assert (tmp_path / out / "ns.yaml").read_text() == (tmp_path / "src" / "ns.yaml").read_text()
        assert (tmp_path / out / "apps" / "web.yaml").is_file()


def test_dash_o_is_the_output_format_in_pull_and_build_too(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    """``-o json`` prints JSON in pull and build as in every command; what they write is ``-O``."""
    ref, digest = _pushed(registry, unique, tmp_path)
    pulled = lockgate("pull", str(ref), "-O", str(tmp_path / "out"), "-o", "json", cwd=tmp_path)
    assert pulled.code == 0, pulled.err
    assert json.loads(pulled.out)["digest"] == digest and (tmp_path / "out" / "ns.yaml").is_file()
    built = lockgate("build", str(tmp_path / "src"), "-O", str(tmp_path / "layer.tgz"), "-o", "json")
    assert built.code == 0, built.err
    assert json.loads(built.out)["output"] == str(tmp_path / "layer.tgz")
    for argv in (
        ["pull", str(ref), "-o", "json"],
        ["pull", str(ref), "-O", "json"],
        ["build", "src", "-O", "json"],
    ):
        refused = lockgate(*argv, cwd=tmp_path)
        assert refused.code == 2, (argv, refused.err)
    assert not (tmp_path / "json").exists()


def test_tag_not_found(registry: Registry, unique: str, tmp_path: Path) -> None:
    _pushed(registry, unique, tmp_path)
    run = lockgate("pull", registry.oci(unique, ":nope"), "-O", str(tmp_path / "out"))
    assert run.code == 7 and f"{registry.oci(unique, ':nope')} not found" in run.err
    assert not (tmp_path / "out").exists()


def test_wrong_media_type_is_refused(registry: Registry, unique: str, tmp_path: Path) -> None:
    ref = lg_registry.parse(registry.oci(unique, ":text"))
    c = client(registry, ref)
    blob = f"plain text {unique}".encode()
    for data in (blob, b"{}"):
        c.upload_blob(unique, data, digest=sha256_digest(data), size=len(data))
    m = ImageManifest(
        config=Descriptor("application/vnd.oci.image.config.v1+json", sha256_digest(b"{}"), 2),
        layers=(Descriptor("text/plain", sha256_digest(blob), len(blob)),),
    )
    c.put_manifest(unique, "text", m.to_bytes(), m.media_type)
    with pytest.raises(ResolveError, match="text/plain is not a tar\\+gzip layer"):
        pull_mod.pull(c, ref, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_tampered_blob_is_refused_and_leaves_nothing(
    registry: Registry, world_dir: Path, unique: str, tmp_path: Path
) -> None:
    ref, digest = _pushed(registry, unique, tmp_path)
    c = client(registry, ref)
    layer = ImageManifest.from_bytes(c.get_manifest(unique, digest).content, where="x").layers[0]
    hexdigest = layer.digest.split(":")[1]
    stored = (
        world_dir
        / "registry"
        / "data"
        / "docker/registry/v2/blobs/sha256"
        / hexdigest[:2]
        / hexdigest
        / "data"
    )
    assert stored.is_file(), f"registry storage layout changed: {stored}"
    original = stored.read_bytes()
    stored.write_bytes(original[:-1] + bytes([original[-1] ^ 0xFF]))
    with pytest.raises(VerificationError, match="tampered with or corrupted"):
        pull_mod.pull(c, ref, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_inspect_shows_annotations_files_and_sizes(registry: Registry, unique: str, tmp_path: Path) -> None:
    ref, digest = _pushed(registry, unique, tmp_path)
    info = inspect_mod.inspect(client(registry, ref), ref)
    assert isinstance(info, inspect_mod.Inspection)
    assert info.resolved.digest == digest
    assert [(f.name, f.size) for f in info.files if not f.is_dir] == [
        ("apps/web.yaml", (tmp_path / "src" / "apps" / "web.yaml").stat().st_size),
        ("ns.yaml", (tmp_path / "src" / "ns.yaml").stat().st_size),
    ]
    run = lockgate("inspect", str(ref))
    assert run.code == 0 and f"digest: {digest}" in run.out and "0644" in run.out


def test_list_hides_signature_and_fallback_tags_and_pages(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    ref, digest = _pushed(registry, unique, tmp_path)
    c = client(registry, ref)
    content = c.get_manifest(unique, digest).content
    fallback = "sha256-" + digest.split(":")[1]
    for t in ("v2", "v3", f"{fallback}.sig", f"{fallback}.att", f"{fallback}.sbom", fallback):
        c.put_manifest(unique, t, content, "application/vnd.oci.image.manifest.v1+json")
    assert inspect_mod.list_tags(c, ref, page_size=2) == ["v1", "v2", "v3"]
    assert len(inspect_mod.list_tags(c, ref, show_all=True, page_size=1)) == 7
    run = lockgate("list", registry.oci(unique), "--page-size", "2")
    assert run.out.split() == ["v1", "v2", "v3"]
    missing = lockgate("list", registry.oci(f"{unique}-none"))
    assert missing.code == 7 and "not found" in missing.err


def test_tag_points_new_tags_at_the_same_digest(auth_registry: Registry, unique: str, tmp_path: Path) -> None:
    ref, digest = _pushed(auth_registry, unique, tmp_path)
    run = lockgate("tag", str(ref), "stable", "prod", *creds_flag(auth_registry))
    assert run.code == 0, run.err
    c = client(auth_registry, ref)
    assert c.resolve(ref.with_tag("stable")) == digest == c.resolve(ref.with_tag("prod"))
