"""Start and stop the world's processes: loopback, free ports, a log file each, stop by PID."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.world.errors import WorldSetupError, log_tail


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Process:
    """A running world component."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    #: how it was started, so a fault test can stop it and start it again (``restart``)
    argv: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: Path | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def check(self) -> None:
        """Raise with the log tail if the process died."""
        if not self.alive():
            raise WorldSetupError(
                f"{self.name} exited with code {self.popen.returncode}; last lines of {self.log}:\n"
                f"{log_tail(self.log)}"
            )

    def stop(self, timeout: float = 10.0) -> None:
        if not self.alive():
            return
        try:
            os.killpg(self.popen.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout)

    def kill(self) -> None:
        """SIGKILL, no clean-up: what a crash or the OOM killer does."""
        if self.alive():
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)

    def restart(self) -> None:
        """Stop and start the same command again (same log, same ports)."""
        self.stop()
        self.popen = start(self.name, self.argv, log=self.log, env=self.env, cwd=self.cwd).popen


def start(
    name: str,
    argv: Sequence[str | Path],
    *,
    log: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Process:
    log.parent.mkdir(parents=True, exist_ok=True)
    out = open(log, "ab")  # noqa: SIM115 - handed to the child, closed below
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    try:
        popen = subprocess.Popen(
            [str(a) for a in argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=full_env,
            cwd=cwd,
            start_new_session=True,  # its own process group, so stop() reaches its children
        )
    except OSError as exc:
        raise WorldSetupError(f"cannot start {name} ({argv[0]}): {exc}") from exc
    finally:
        out.close()
    return Process(name=name, popen=popen, log=log, argv=tuple(str(a) for a in argv), env=env, cwd=cwd)


def wait_until(
    process: Process,
    ready: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    interval: float = 0.05,
) -> None:
    """Poll ``ready`` until true; fail with the log tail if the process dies or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        process.check()
        try:
            if ready():
                return
        except Exception:
            pass
        time.sleep(interval)
    process.check()
    raise WorldSetupError(
        f"{process.name} not {what} after {timeout:.0f}s; "
        f"last lines of {process.log}:\n{log_tail(process.log)}"
    )
