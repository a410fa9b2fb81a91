"""lockgate push with the build cache: an unchanged tree is not packed again, a changed one
always is, a wrong cache entry can never put a wrong digest in the registry, and a signed push
never takes its layer from the cache."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from action.artifacts import push as push_mod
from lockgate import registry as lg_registry
from lockgate.artifact import cache, pack
from tests.integration.artifacts_support import client, lockgate, write_tree
from tests.world.registry import Registry

META = ("--source", "https://git.example/repo", "--revision", "main@sha1:" + "b" * 40)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    monkeypatch.setenv("LOCKGATE_CACHE", str(tmp_path / "cache"))
    for name in ("GITHUB_ACTIONS", "SOURCE_DATE_EPOCH"):
        monkeypatch.delenv(name, raising=False)


def _settled_tree(root: Path, marker: str) -> Path:
    tree = write_tree(root, marker)
    time.sleep(cache.SETTLE_SECONDS + 0.2)
    return tree


def _digest(*args: str) -> str:
    run = lockgate("push", *args, *META, "--output", "json")
    assert run.code == 0, run.err
    digest: str = json.loads(run.out)["digest"]
    return digest


def _layer_digest(reg: Registry, ref: str) -> str:
    parsed = lg_registry.parse(ref)
    fetched = client(reg, parsed).get_manifest(parsed.repository, parsed.tag or "")
    layer: str = json.loads(fetched.content)["layers"][0]["digest"]
    return layer


def test_unchanged_tree_is_not_packed_again(registry: Registry, unique: str, tmp_path: Path) -> None:
    tree = _settled_tree(tmp_path / "src", unique)
    ref = registry.oci(unique, ":v1")
    first = _digest(str(tree), ref)
    assert len(list((tmp_path / "cache" / "build").glob("*.json"))) == 1

    options = push_mod.PushOptions(source=META[1], revision=META[3])
    target = lg_registry.parse(ref)
    result = push_mod.push(str(tree), target, client(registry, target), options)
    assert result.status is push_mod.Status.UNCHANGED and result.digest == first
    assert result.packed is False, "packed an unchanged tree"
    edited = tree / "ns.yaml"
    edited.write_text(edited.read_text() + "# changed\n")
    again = push_mod.push(str(tree), target, client(registry, target), options)
    assert again.packed is True and again.status is push_mod.Status.PUSHED


def test_an_edited_file_is_packed_and_pushed(registry: Registry, unique: str, tmp_path: Path) -> None:
    tree = _settled_tree(tmp_path / "src", unique)
    ref = registry.oci(unique, ":v1")
    first = _digest(str(tree), ref)
    # same size, edited right after the push: only the file's ctime tells
    (tree / "ns.yaml").write_text((tree / "ns.yaml").read_text().replace("Namespace", "Namespacf"))
    second = _digest(str(tree), ref)
    assert second != first
    built = lockgate("build", str(tree), "--no-validate")
    assert built.code == 0, built.err
    assert _layer_digest(registry, ref) == built.out.split()[0]


def test_a_wrong_cache_entry_never_reaches_the_registry(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = write_tree(tmp_path / "src", unique)
    options = pack.PackOptions()
    key = cache.key(tree, pack.collect(tree, options), options, validated=True)
    where = tmp_path / "cache" / "build"
    where.mkdir(parents=True)
    (where / f"{key}.json").write_text(json.dumps({"digest": "sha256:" + "0" * 64, "size": 123}))

    ref = registry.oci(unique, ":v1")
    pushed = _digest(str(tree), ref)
    uncached = lockgate("build", str(tree))
    assert uncached.code == 0, uncached.err
    assert _layer_digest(registry, ref) == uncached.out.split()[0]
    again = lockgate("push", str(tree), ref, *META, env={"LOCKGATE_CACHE": "off"})
    assert again.code == 0 and again.out.strip() == f"unchanged {ref}@{pushed}"


def test_a_planted_cache_entry_never_gets_an_older_layer_signed(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    """A cache writer (an earlier job on the runner) maps the new tree to the layer of an older
    release, which the registry holds: a signed push packs the tree, pushes and signs its own
    layer, and drops the planted entry."""
    old_release = write_tree(tmp_path / "old", f"{unique}-old")
    ref = registry.oci(unique, ":v1")
    _digest(str(old_release), ref)
    old_layer = _layer_digest(registry, ref)
    tree = _settled_tree(tmp_path / "src", unique)
    _digest(str(tree), registry.oci(unique, ":scratch"))  # a push that fills the cache
    [entry] = (tmp_path / "cache" / "build").glob("*.json")
    parsed = lg_registry.parse(ref)
    size = json.loads(client(registry, parsed).get_manifest(unique, "v1").content)["layers"][0]["size"]
    entry.write_text(json.dumps({"digest": old_layer, "size": size}))
    private = tmp_path / "cosign.key"
    made = lockgate(
        "keygen", "--output-key-prefix", str(tmp_path / "cosign"), env={"LOCKGATE_PASSWORD": "pw"}
    )
    assert made.code == 0 and private.is_file(), made.err

    v2 = registry.oci(unique, ":v2")
    signed = lockgate(
        "push", str(tree), v2, *META, "--sign", "key", "--key", str(private), "--output", "json",
        env={"LOCKGATE_PASSWORD": "pw"},
    )  # fmt: skip

    assert signed.code == 0, signed.err
    fresh = lockgate("build", str(tree), env={"LOCKGATE_CACHE": "off"})
    assert _layer_digest(registry, v2) == fresh.out.split()[0] != old_layer
    assert json.loads(signed.out)["signed"]["digest"] == json.loads(signed.out)["digest"]
    assert json.loads(entry.read_text())["digest"] != old_layer
