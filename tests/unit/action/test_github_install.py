"""The install step's cache key: the same source reuses the venv, any changed file does not."""

from __future__ import annotations

import shutil
from pathlib import Path

from action.github import install

ROOT = Path(__file__).resolve().parents[3]


def _tree(path: Path) -> Path:
    (path / "lockgate").mkdir(parents=True)
    (path / "action").mkdir()
    (path / "runner").mkdir()
    (path / "pyproject.toml").write_text('[project]\nname = "lockgate"\nversion = "1.2.3"\n')
    (path / "lockgate" / "__init__.py").write_text("")
    return path


def test_key_changes_with_any_package_file_but_not_with_caches(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "src")
    first = install.source_key(tree)
    (tree / "lockgate" / "__pycache__").mkdir()
    (tree / "lockgate" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert install.source_key(tree) == first
    (tree / "runner" / "new.py").write_text("x = 1\n")
    assert install.source_key(tree) != first
    copy = shutil.copytree(tree, tmp_path / "copy")
    assert install.source_key(copy) == install.source_key(tree)


def test_venv_lives_in_the_tool_cache_under_version_and_key(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "src")
    target = install.venv_dir(tree, {"RUNNER_TOOL_CACHE": "/opt/cache", "RUNNER_TEMP": "/tmp/x"})
    assert target == Path("/opt/cache/lockgate") / f"1.2.3-{install.source_key(tree)}"
    assert install.venv_dir(tree, {"RUNNER_TEMP": "/tmp/x"}).parent == Path("/tmp/x/lockgate")
    assert install.version(ROOT) != "0"
