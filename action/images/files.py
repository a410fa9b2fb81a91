"""Which files image automation reads: YAML under a directory, never through links or ``.git``.

Shared by ``config`` (configuration documents) and ``update`` (marked files), which both
walk the whole repository; ``os.scandir`` entries carry their type, so a 5,000-file tree
costs one ``getdents`` per directory and no ``stat`` per file. Order is stable: a
directory's files by name, then its subdirectories by name. I/O.
"""

from __future__ import annotations

import os
from pathlib import Path

YAML_SUFFIXES = (".yaml", ".yml")


def walk(start: Path, *, names: tuple[str, ...] = ()) -> list[str]:
    """Paths (strings) of regular files under ``start`` ending in ``.yaml``/``.yml`` or named ``names``."""
    found: list[str] = []
    pending = [str(start)]
    while pending:
        directory = pending.pop()
        files: list[str] = []
        subdirs: list[str] = []
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != ".git":
                        subdirs.append(entry.path)
                elif entry.name.endswith(YAML_SUFFIXES) or entry.name in names:
                    files.append(entry.path)
        found.extend(sorted(files))
        pending.extend(sorted(subdirs, reverse=True))
    return found


def read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()
