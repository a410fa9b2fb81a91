"""The install step's cache key: the same source reuses the venv, any changed file does not."""

from __future__ import annotations

import fcntl
import os
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


def _venv(cache: Path, name: str, used: float) -> Path:
    venv = cache / name
    venv.mkdir(parents=True)
    (venv / install.STAMP).write_text("x\n")
    os.utime(venv / install.STAMP, (used, used))
    return venv


def test_prune_keeps_the_most_recently_used_and_those_in_use(tmp_path: Path) -> None:
    cache = tmp_path / "lockgate"
    current = _venv(cache, "0.1.0-current", 1)  # in use now, whatever its stamp says
    recent = _venv(cache, "0.1.0-recent", 100)
    busy = _venv(cache, "0.1.0-busy", 20)
    old = _venv(cache, "0.1.0-old", 10)
    next_ = _venv(cache, "0.1.0-next", 50)
    (cache / "not-a-venv").mkdir()
    with open(install.lock_path(busy), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)  # a run step of that version is running
        removed = install.prune(cache, current, keep=3)
    assert removed == [old]
    assert sorted(p.name for p in cache.iterdir() if p.is_dir()) == [
        "0.1.0-busy", "0.1.0-current", "0.1.0-next", "0.1.0-recent", "not-a-venv",
    ]  # fmt: skip
    assert next_.is_dir() and recent.is_dir()
