"""A real Prometheus Alertmanager on loopback, for the ``alertmanager`` notification provider.

Built from the Go module proxy (``tests.world.pins``: without its web UI, whose assets npm
builds for a release). One instance, no cluster gossip (``--cluster.listen-address=``), its
storage in a temporary directory. Its route sends every alert to a webhook receiver with
``send_resolved``, so a test can also see Alertmanager itself report an alert resolved;
``users`` adds basic auth (``--web.config.file``, bcrypt from apache2-utils' htpasswd), so a
refused password is Alertmanager's own 401. ``alerts()`` is ``GET /api/v2/alerts`` (active,
silenced and inhibited alerts: a resolved one is not listed).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.world import binaries
from tests.world.errors import WorldSetupError
from tests.world.process import Process, free_port, start, wait_until


@dataclass
class Alertmanager:
    url: str
    process: Process
    #: ``(user, password)`` for basic auth, when started with users
    auth: tuple[str, str] | None = None

    def get(self, path: str) -> Any:
        request = urllib.request.Request(f"{self.url}{path}")
        if self.auth is not None:
            token = base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response) if path.startswith("/api/") else response.status

    def alerts(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.get("/api/v2/alerts")
        return found

    def stop(self) -> None:
        self.process.stop()


def _config(receiver_url: str) -> str:
    return (
        "route:\n"
        "  receiver: recorder\n"
        "  group_by: ['...']\n"
        "  group_wait: 0s\n"
        "  group_interval: 1s\n"
        "  repeat_interval: 1h\n"
        "receivers:\n"
        "  - name: recorder\n"
        "    webhook_configs:\n"
        f"      - url: {json.dumps(receiver_url)}\n"
        "        send_resolved: true\n"
    )


def start_alertmanager(root: Path, *, receiver_url: str, users: dict[str, str] | None = None) -> Alertmanager:
    program = binaries.binary("alertmanager")
    root.mkdir(parents=True, exist_ok=True)
    (root / "alertmanager.yml").write_text(_config(receiver_url))
    port = free_port()
    argv: list[str | Path] = [
        program,
        f"--config.file={root / 'alertmanager.yml'}",
        f"--storage.path={root / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
        "--log.level=debug",
    ]
    if users:
        htpasswd = shutil.which("htpasswd")
        if htpasswd is None:
            raise WorldSetupError("htpasswd (apache2-utils) is not installed; run make setup")
        lines = []
        for user, password in users.items():
            argv_ = [htpasswd, "-nbB", user, password]
            out = subprocess.run(argv_, capture_output=True, text=True, check=True)
            lines.append(f"  {user}: {json.dumps(out.stdout.strip().split(':', 1)[1])}")
        (root / "web.yml").write_text("basic_auth_users:\n" + "\n".join(lines) + "\n")
        argv.append(f"--web.config.file={root / 'web.yml'}")
    process = start("alertmanager", argv, log=root / "alertmanager.log")
    auth = next(iter(users.items())) if users else None
    alertmanager = Alertmanager(f"http://127.0.0.1:{port}", process, auth)
    try:
        wait_until(process, lambda: alertmanager.get("/-/ready") == 200, timeout=30, what="ready")
    except BaseException:
        process.stop()  # not handed to a fixture yet: nobody else would stop it
        raise
    return alertmanager
