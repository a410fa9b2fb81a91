"""The local build cache: an unchanged tree is known by its file stamps, without re-packing.

``push`` collects the tree anyway (ignore rules, symlink policy); the key is a hash of that
entry list with each file's (size, mtime_ns, ctime_ns, inode, device), the packing and
validation options, the tree's real path, and the versions of lockgate, Python and the
bundled compressor (the gzip bytes depend on them). The value is only the layer digest and size: with them
the manifest is planned and a HEAD request tells whether the registry already has it.

It must never yield a wrong digest. A file edited after packing changes its ctime (which
users cannot set back), so the key changes. Timestamps are coarse (a few ms), so a tree
with any file changed in the last ``SETTLE_SECONDS`` is not stored at all ("racy" entries,
as Git handles its index). A corrupt or unreadable cache entry is a miss; whenever the
layer has to be uploaded it is packed for real and the fresh digest wins.

Location: ``$LOCKGATE_CACHE/build``, else ``$XDG_CACHE_HOME/lockgate/build``, else
``~/.cache/lockgate/build``; ``LOCKGATE_CACHE=off`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lockgate import __version__
from lockgate.artifact import gz, pack

FORMAT = 2
SETTLE_SECONDS = 2
#: entries kept; the oldest are removed past this
MAX_ENTRIES = 512


@dataclass(frozen=True)
class Known:
    """A layer packed before from exactly these files: its digest and compressed size."""

    digest: str
    size: int


def directory(env: Mapping[str, str] | None = None) -> Path | None:
    env = os.environ if env is None else env
    chosen = env.get("LOCKGATE_CACHE")
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "0", "false", "no") else Path(chosen) / "build"
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lockgate" / "build"


def key(
    root: Path, entries: Sequence[pack.Entry], options: pack.PackOptions, *, validated: bool | str
) -> str:
    """The cache key of packing ``entries`` (as collected from ``root``) with ``options``."""
    h = hashlib.sha256()
    header = {
        "format": FORMAT,
        "lockgate": __version__,
        "python": sys.version,
        "compressor": gz.IDENTITY,
        "gzip_level": pack.GZIP_LEVEL,
        "root": str(root.resolve()),
        "ignore_paths": list(options.ignore_paths),
        "resolve_symlinks": options.resolve_symlinks,
        "use_sourceignore": options.use_sourceignore,
        "validated": validated,
    }
    h.update(json.dumps(header, sort_keys=True).encode())
    for entry in entries:
        h.update(f"\n{entry.name}\0{int(entry.is_dir)}\0{entry.mode}\0{entry.source}\0".encode())
        h.update(",".join(map(str, entry.stamp)).encode())
    return h.hexdigest()


def settled(entries: Sequence[pack.Entry], now_ns: int | None = None) -> bool:
    """Every file's stamp is complete and its times lie well in the past (see the module note)."""
    limit = (time.time_ns() if now_ns is None else now_ns) - SETTLE_SECONDS * 1_000_000_000
    for entry in entries:
        if entry.is_dir:
            continue
        if len(entry.stamp) != 5:
            return False
        _, mtime_ns, ctime_ns, _, _ = entry.stamp
        if mtime_ns >= limit or ctime_ns >= limit:
            return False
    return True


def load(where: Path | None, cache_key: str) -> Known | None:
    if where is None:
        return None
    try:
        value = json.loads((where / f"{cache_key}.json").read_text())
        digest, size = value["digest"], value["size"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(digest, str) or not digest.startswith("sha256:") or len(digest) != 71:
        return None
    if not isinstance(size, int) or size <= 0:
        return None
    return Known(digest, size)


def store(
    where: Path | None,
    cache_key: str,
    layer: pack.Layer,
    entries: Sequence[pack.Entry],
    *,
    now_ns: int | None = None,
    max_entries: int = MAX_ENTRIES,
) -> None:
    """Remember ``layer`` for ``cache_key`` if the tree had settled; never fails the push."""
    if where is None or not settled(entries, now_ns):
        return
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump({"digest": layer.digest, "size": layer.size}, handle)
            os.replace(tmp, where / f"{cache_key}.json")
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _prune(where, max_entries)
    except OSError:
        return


def forget(where: Path | None, cache_key: str) -> None:
    if where is not None:
        with contextlib.suppress(OSError):
            (where / f"{cache_key}.json").unlink(missing_ok=True)


def _prune(where: Path, max_entries: int) -> None:
    found = [p for p in where.iterdir() if p.suffix == ".json" and not p.name.startswith(".")]
    if len(found) <= max_entries:
        return
    found.sort(key=lambda p: p.stat().st_mtime_ns)
    for stale in found[: len(found) - max_entries]:
        stale.unlink(missing_ok=True)
