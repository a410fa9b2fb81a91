"""requirements.lock, what the Action installs with ``--require-hashes``, is pyproject's runtime
dependencies: every one pinned to a version its range allows, every entry hashed, nothing
compiled from an older pyproject (``make lock`` regenerates it)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from action.github import install

ROOT = Path(__file__).resolve().parents[3]
LOCK = ROOT / install.LOCK


def _entries() -> dict[str, tuple[str, set[str]]]:
    """``name -> (pinned version, what the lock says pulled it in)``."""
    entries: dict[str, tuple[str, set[str]]] = {}
    current = ""
    for line in LOCK.read_text().splitlines():
        pinned = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", line)
        if pinned:
            current = canonicalize_name(pinned[1])
            entries[current] = (pinned[2], set())
            continue
        via = re.match(r"^\s+#\s+(?:via\s+)?(\S.*)$", line)
        if via and current and via[1] != "via":
            entries[current][1].add(via[1].split(" (")[0])
    return entries


def _runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(text) for text in project["dependencies"]]


def test_every_runtime_dependency_is_pinned_in_the_lock_within_its_range() -> None:
    entries = _entries()
    for requirement in _runtime_requirements():
        name = canonicalize_name(requirement.name)
        assert name in entries, f"{requirement} is not in {install.LOCK}: run `make lock`"
        version, _ = entries[name]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{install.LOCK} pins {name}=={version}, outside pyproject's {requirement}: run `make lock`"
        )


def test_the_lock_was_compiled_from_these_dependencies_and_nothing_else() -> None:
    direct = {name for name, (_, via) in _entries().items() if "lockgate" in via}
    assert direct == {canonicalize_name(r.name) for r in _runtime_requirements()}, (
        f"{install.LOCK} was compiled from another dependency list: run `make lock`"
    )


def test_every_entry_is_pinned_and_hashed() -> None:
    hashes = install.lock_hashes(LOCK.read_text())  # refuses an entry without a hash
    assert set(hashes) == set(_entries())
    assert all(hashes.values())
    assert "make lock" in LOCK.read_text().split("\n", 3)[1]
