"""A Git remote: bare repositories served by ``git daemon`` over git:// on loopback.

Pushes are enabled (``--enable=receive-pack``), so pushes, non-fast-forward rejections
and concurrent pushers are the real protocol's behaviour.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.world.errors import WorldSetupError
from tests.world.process import Process, free_port, start, wait_until


@dataclass
class GitRemote:
    base: Path
    port: int
    process: Process

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}.git"

    def create(self, name: str, *, default_branch: str = "main") -> str:
        """Create an empty bare repository and return its URL."""
        path = self.base / f"{name}.git"
        subprocess.run(
            ["git", "init", "--quiet", "--bare", f"--initial-branch={default_branch}", str(path)],
            check=True,
        )
        (path / "git-daemon-export-ok").touch()
        return self.url(name)

    def stop(self) -> None:
        self.process.stop()


def start_git_remote(workdir: Path) -> GitRemote:
    if shutil.which("git") is None:
        raise WorldSetupError("starting the git remote: 'git' is not installed")
    base = workdir / "git"
    base.mkdir(parents=True, exist_ok=True)
    port = free_port()
    process = start(
        "git-daemon",
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={base}",
            "--export-all",
            "--enable=receive-pack",
            "--informative-errors",
            "--verbose",
            str(base),
        ],
        log=workdir / "git-daemon.log",
    )

    def ready() -> bool:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True

    wait_until(process, ready, timeout=10, what="listening")
    return GitRemote(base=base, port=port, process=process)
