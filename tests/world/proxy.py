"""A forward proxy: Debian's tinyproxy on loopback, with basic authentication, logging every request.

``start_proxy(workdir)`` runs ``tinyproxy -d`` (foreground) with ``BasicAuth`` for a generated
user and password and ``LogLevel Info``, which writes one ``Request`` line per request
(``CONNECT 127.0.0.1:PORT`` for https); ``requests_seen()`` reads them back, so a test proves
its traffic went through the proxy. ``stop()`` makes the proxy "down" for the tests that need one.
"""

from __future__ import annotations

import re
import secrets
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from tests.world.errors import WorldSetupError
from tests.world.process import Process, free_port, start, wait_until

PROXY_BINARY = "tinyproxy"
_REQUEST = re.compile(r"Request \(file descriptor \d+\): (\S+ \S+)")


@dataclass
class Proxy:
    """A running tinyproxy at ``address`` (``http://127.0.0.1:PORT``) requiring ``username``/``password``."""

    address: str
    port: int
    username: str
    password: str
    process: Process
    log: Path

    def requests_seen(self) -> list[str]:
        """``METHOD TARGET`` of every request the proxy received, in order (from its log)."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return _REQUEST.findall(text)

    def url_with_credentials(self) -> str:
        return f"http://{self.username}:{self.password}@127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.stop()


def start_proxy(workdir: Path, *, name: str = "proxy") -> Proxy:
    binary = shutil.which(PROXY_BINARY)
    if binary is None:
        raise WorldSetupError(
            "starting the proxy: 'tinyproxy' is not installed (run 'make setup', which installs "
            "Debian's tinyproxy)"
        )
    root = workdir / name
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    username, password = "lockgate", secrets.token_urlsafe(12)
    log = root / "tinyproxy.log"
    config = root / "tinyproxy.conf"
    config.write_text(
        f"Port {port}\nListen 127.0.0.1\nTimeout 60\nMaxClients 50\n"
        f'LogFile "{log}"\nLogLevel Info\nBasicAuth {username} {password}\n'
    )
    process = start(name, [binary, "-d", "-c", config], log=root / "stdout.log")

    def ready() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    wait_until(process, ready, timeout=15, what="accepting connections")
    return Proxy(
        address=f"http://127.0.0.1:{port}",
        port=port,
        username=username,
        password=password,
        process=process,
        log=log,
    )
