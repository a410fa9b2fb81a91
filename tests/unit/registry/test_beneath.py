"""Files under a root, reached without following a symlink out of it (``lockgate.registry.beneath``):
links that stay under the root are followed, links out of it are refused naming the link and its
target, and writes land under the root or nowhere."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockgate.registry.beneath import Escape, Tree


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    root = tmp_path / "team-a"
    (root / "mirror" / "blobs").mkdir(parents=True)
    (root / "mirror" / "index.json").write_text("{}")
    (tmp_path / "team-b" / "mirror").mkdir(parents=True)
    (tmp_path / "team-b" / "mirror" / "index.json").write_text('{"secret": true}')
    return Tree(root, setting="Runner spec.layoutRoots")


def test_files_under_the_root_are_read_and_links_inside_it_followed(tree: Tree) -> None:
    assert tree.read_bytes(tree.root / "mirror" / "index.json") == b"{}"
    (tree.root / "current").symlink_to("mirror")  # relative, inside
    (tree.root / "mirror" / "again.json").symlink_to(tree.root / "mirror" / "index.json")  # absolute
    assert tree.read_bytes(tree.root / "current" / "index.json") == b"{}"
    assert tree.read_bytes(tree.root / "current" / "again.json") == b"{}"
    assert tree.is_file(tree.root / "current" / "index.json")
    assert not tree.is_file(tree.root / "current" / "missing.json")


@pytest.mark.parametrize(
    ("link", "target"),
    [("elsewhere", "../team-b/mirror"), ("abs", "/etc"), ("up", "..")],
)
def test_a_link_out_of_the_root_is_refused_naming_it(tree: Tree, link: str, target: str) -> None:
    (tree.root / link).symlink_to(target)
    with pytest.raises(Escape) as refused:
        tree.read_bytes(tree.root / link / "index.json")
    said = refused.value.message
    assert f"the symlink {tree.root / link} points to {target}" in said and str(tree.root) in said, said
    assert "Runner spec.layoutRoots" in said
    with pytest.raises(Escape):
        tree.write_atomic(tree.root / link / "planted.json", [b"x"])
    assert not (tree.root.parent / "team-b" / "mirror" / "planted.json").exists()


def test_a_final_link_out_of_the_root_is_refused_too(tree: Tree) -> None:
    (tree.root / "mirror" / "index2.json").symlink_to(tree.root.parent / "team-b" / "mirror" / "index.json")
    with pytest.raises(Escape):
        tree.read_bytes(tree.root / "mirror" / "index2.json")
    assert not tree.is_file(tree.root / "missing") and tree.exists(tree.root / "mirror")


def test_a_path_not_under_the_root_is_refused(tree: Tree) -> None:
    with pytest.raises(Escape) as refused:
        tree.read_bytes(tree.root.parent / "team-b" / "mirror" / "index.json")
    assert "not under the allowed root" in refused.value.message
    with pytest.raises(Escape):
        tree.read_bytes(tree.root / ".." / "team-b" / "mirror" / "index.json")


def test_writes_make_their_directories_and_leave_nothing_when_they_fail(tree: Tree) -> None:
    target = tree.root / "mirror" / "blobs" / "sha256" / "abc"
    tree.write_atomic(target, [b"one", b"two"])
    assert target.read_bytes() == b"onetwo"

    def chunks() -> Iterator[bytes]:
        yield b"half"
        raise ValueError("stop")

    with pytest.raises(ValueError):
        tree.write_atomic(target, chunks())
    assert target.read_bytes() == b"onetwo"
    assert os.listdir(target.parent) == ["abc"]


def test_a_loop_of_links_is_refused(tree: Tree) -> None:
    (tree.root / "a").symlink_to("b")
    (tree.root / "b").symlink_to("a")
    with pytest.raises(Escape) as refused:
        tree.read_bytes(tree.root / "a" / "x")
    assert "symlinks on the way" in refused.value.message


def test_the_command_lines_tree_is_everything(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    (tmp_path / "l").symlink_to(tmp_path / "f")
    assert Tree(Path("/")).read_bytes(tmp_path / "l") == b"x"
