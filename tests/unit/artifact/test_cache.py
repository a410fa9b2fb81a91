"""The build cache: keys change with anything that changes the layer; racy or damaged entries miss."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lockgate.artifact import cache, pack

LATER = time.time_ns() + 3600 * 1_000_000_000  # an hour on: every file in the test looks settled


def _tree(root: Path) -> Path:
    (root / "apps").mkdir(parents=True)
    (root / "apps" / "web.yaml").write_text("kind: Deployment\n")
    (root / "ns.yaml").write_text("kind: Namespace\n")
    return root


def _edit_and_set_back(path: Path) -> None:
    path.write_text("kind: Namespacf\n")
    os.utime(path, ns=(0, 0))


def _key(root: Path, options: pack.PackOptions | None = None, *, validated: bool = True) -> str:
    options = options or pack.PackOptions()
    return cache.key(root, pack.collect(root, options), options, validated=validated)


def test_same_tree_same_key(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    assert _key(root) == _key(root)


CHANGES: dict[str, Callable[[Path], Any]] = {
    "content rewritten with the same size": lambda root: (root / "ns.yaml").write_text("kind: Namespacf\n"),
    "file added": lambda root: (root / "extra.yaml").write_text("a: 1\n"),
    "file removed": lambda root: (root / "ns.yaml").unlink(),
    "made executable": lambda root: (root / "ns.yaml").chmod(0o755),
    "times set back after an edit": lambda root: _edit_and_set_back(root / "ns.yaml"),
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_any_change_changes_the_key(tmp_path: Path, change: Callable[[Path], Any]) -> None:
    root = _tree(tmp_path / "src")
    before = _key(root)
    time.sleep(0.01)  # past the file system's timestamp granularity
    change(root)
    assert _key(root) != before


def test_options_are_part_of_the_key(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    assert _key(root) != _key(root, validated=False)
    assert _key(root) != _key(root, pack.PackOptions(ignore_paths=("*.md",)))


def test_stored_layer_is_found_again(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    entries = pack.collect(root)
    layer = pack.pack(root, tmp_path / "out.tgz", entries=entries)
    where = tmp_path / "cache"
    cache.store(where, "k", layer, entries, now_ns=LATER)
    assert cache.load(where, "k") == cache.Known(layer.digest, layer.size)
    cache.forget(where, "k")
    assert cache.load(where, "k") is None


def test_a_tree_changed_in_the_last_seconds_is_not_stored(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    entries = pack.collect(root)
    layer = pack.pack(root, tmp_path / "out.tgz", entries=entries)
    assert not cache.settled(entries)
    cache.store(tmp_path / "cache", "k", layer, entries)
    assert cache.load(tmp_path / "cache", "k") is None
    assert cache.settled(entries, now_ns=time.time_ns() + (cache.SETTLE_SECONDS + 1) * 1_000_000_000)


DAMAGED = {
    "not json": "{",
    "no digest": '{"size": 3}',
    "not a digest": '{"digest": "md5:abc", "size": 3}',
    "size not a number": '{"digest": "sha256:' + "a" * 64 + '", "size": "3"}',
}


@pytest.mark.parametrize("text", DAMAGED.values(), ids=DAMAGED.keys())
def test_damaged_entries_are_misses(tmp_path: Path, text: str) -> None:
    (tmp_path / "k.json").write_text(text)
    assert cache.load(tmp_path, "k") is None


def test_location_and_off_switch(tmp_path: Path) -> None:
    assert cache.directory({"LOCKGATE_CACHE": str(tmp_path)}) == tmp_path / "build"
    assert cache.directory({"LOCKGATE_CACHE": "off"}) is None
    assert cache.directory({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "lockgate" / "build"


def test_old_entries_are_pruned(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    entries = pack.collect(root)
    layer = pack.pack(root, tmp_path / "out.tgz", entries=entries)
    for i in range(5):
        cache.store(tmp_path / "cache", f"k{i}", layer, entries, now_ns=LATER, max_entries=3)
        os.utime(tmp_path / "cache" / f"k{i}.json", ns=(i, i))
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["k2.json", "k3.json", "k4.json"]
