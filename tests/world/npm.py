"""npm tools the tests use, pinned, installed once into ``~/.cache/lockgate/npm/<name>-<version>``.

``ensure("axe-core")`` runs ``npm install`` of the pinned version into that directory the
first time (under a lock, so parallel workers install once) and returns it. A machine
without npm, or an install that fails, raises ``WorldSetupError`` with the log's tail:
the test that needs the tool fails, it is never skipped.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

from tests.world.binaries import cache_root
from tests.world.errors import WorldSetupError, log_tail

#: name -> version, exact
PINS = {"axe-core": "4.10.2"}


def package_dir(name: str) -> Path:
    """Where the pinned ``name`` is installed: its ``node_modules/<name>`` directory."""
    return cache_root() / "npm" / f"{name}-{PINS[name]}" / "node_modules" / name


def ensure(name: str) -> Path:
    version = PINS[name]
    root = cache_root() / "npm" / f"{name}-{version}"
    done = root / ".installed"
    if done.exists():
        return package_dir(name)
    npm = shutil.which("npm")
    if npm is None:
        raise WorldSetupError(f"step 'install {name}@{version}' failed: npm is not installed (make setup)")
    root.mkdir(parents=True, exist_ok=True)
    log = root / "install.log"
    with open(root.parent / f".{name}-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return package_dir(name)
        with open(log, "wb") as out:
            proc = subprocess.run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(root),
                    "--no-audit",
                    "--no-fund",
                    "--no-save",
                    "--ignore-scripts",
                    f"{name}@{version}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=300,
            )
        if proc.returncode != 0 or not package_dir(name).is_dir():
            raise WorldSetupError(
                f"step 'npm install {name}@{version}' failed (exit {proc.returncode}):\n{log_tail(log)}"
            )
        done.write_text(version + "\n")
    return package_dir(name)


def main() -> None:
    for name in PINS:
        print(ensure(name))


if __name__ == "__main__":
    main()
