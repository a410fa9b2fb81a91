"""The action's install step: lockgate from the action's own checkout into a cached venv.

Run as a script with the runner's Python (standard library only: lockgate is not installed
yet). The venv lives under ``$RUNNER_TOOL_CACHE/lockgate/<version>-<key>`` (else
``$RUNNER_TEMP``), where the key hashes ``pyproject.toml`` and every file of the packages,
so a runner that already installed this exact lockgate reuses it, and a changed checkout
never runs stale code. A stamp file marks a complete install; a lock file serialises two
jobs installing at once on one self-hosted runner. Only the ``KEEP`` most recently used venvs
are kept: older ones are removed when nobody holds their lock (the run step holds it shared
while lockgate runs), so a runner that sees many versions does not fill its disk. Writes
``python=<venv python>`` to ``$GITHUB_OUTPUT`` and, to ``$GITHUB_PATH``, a directory holding
only a ``lockgate`` link (the venv's ``bin`` would also put its ``python`` and ``pip`` ahead
of the job's own).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

PACKAGES = ("lockgate", "action", "runner")
STAMP = ".lockgate-complete"
MINIMUM_PYTHON = (3, 11)
#: venvs kept in the cache (the one in use included)
KEEP = 3


def lock_path(venv: Path) -> Path:
    return venv.parent / f"{venv.name}.lock"


def prune(cache: Path, current: Path, keep: int = KEEP) -> list[Path]:
    """Remove all but the ``keep`` most recently used venvs in ``cache``, skipping any in use."""
    venvs = sorted(
        (p for p in cache.iterdir() if (p / STAMP).is_file() and p != current),
        key=lambda p: (p / STAMP).stat().st_mtime,
        reverse=True,
    )
    removed = []
    for old in venvs[max(keep - 1, 0) :]:
        with open(lock_path(old), "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # installing or running right now
            shutil.rmtree(old, ignore_errors=True)
            removed.append(old)
    return removed


def version(source: Path) -> str:
    match = re.search(r'^version\s*=\s*"([^"]+)"', (source / "pyproject.toml").read_text(), re.MULTILINE)
    return match.group(1) if match else "0"


def source_key(source: Path) -> str:
    """A hash of pyproject.toml and the packages' files (names and bytes), caches excluded."""
    digest = hashlib.sha256()
    files = [source / "pyproject.toml"]
    for package in PACKAGES:
        files += [p for p in (source / package).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    for path in sorted(files):
        digest.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def venv_dir(source: Path, env: Mapping[str, str]) -> Path:
    base = env.get("RUNNER_TOOL_CACHE") or env.get("RUNNER_TEMP")
    if not base:
        raise SystemExit("install: neither RUNNER_TOOL_CACHE nor RUNNER_TEMP is set (not in GitHub Actions?)")
    return Path(base) / "lockgate" / f"{version(source)}-{source_key(source)}"


def install(source: Path, python: str, env: Mapping[str, str]) -> tuple[Path, bool]:
    """The venv for ``source`` (created if missing) and whether it was reused."""
    target = venv_dir(source, env)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path(target), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / STAMP).is_file():
            (target / STAMP).touch()
            return target, True
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run([python, "-m", "venv", str(target)], check=True)
        subprocess.run(
            [
                str(target / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                str(source),
            ],
            check=True,
        )
        path_dir = target / "path"
        path_dir.mkdir()
        (path_dir / "lockgate").symlink_to(target / "bin" / "lockgate")
        (target / STAMP).write_text(f"{version(source)} {source_key(source)}\n")
        return target, False


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: install.py ACTION_PATH PYTHON", file=sys.stderr)
        return 2
    source, python = Path(argv[0]).resolve(), argv[1]
    if sys.version_info < MINIMUM_PYTHON:
        found = ".".join(map(str, sys.version_info[:3]))
        print(
            f"::error title=lockgate install::lockgate needs Python >= 3.11 and {python} is {found}: "
            "set the action's `python` input to a newer interpreter (or run actions/setup-python first)",
            flush=True,
        )
        return 1
    try:
        target, reused = install(source, python, os.environ)
    except subprocess.CalledProcessError as exc:
        print(f"::error title=lockgate install::installing lockgate failed: {exc}", flush=True)
        return 1
    print(
        f"lockgate {version(source)} {'reused from' if reused else 'installed into'} {target}",
        file=sys.stderr,
    )
    for old in prune(target.parent, target):
        print(f"removed the unused {old}", file=sys.stderr)
    outputs = f"python={target / 'bin' / 'python'}\n"
    for name, text in (("GITHUB_OUTPUT", outputs), ("GITHUB_PATH", f"{target / 'path'}\n")):
        path = os.environ.get(name)
        if path:
            with open(path, "a", encoding="utf-8") as stream:
                stream.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
