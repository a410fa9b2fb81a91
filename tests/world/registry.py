"""An OCI registry: Debian's docker-registry (Distribution 2.8) on loopback, deletes enabled.

``start_registry(auth=True)`` adds htpasswd basic auth (bcrypt, from apache2-utils) for
auth tests. Storage is a temporary directory that goes away with the world.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.world.errors import WorldSetupError
from tests.world.process import Process, free_port, start, wait_until

REGISTRY_BINARY = "docker-registry"


@dataclass
class Registry:
    """A running registry. ``host`` is ``127.0.0.1:<port>``; it speaks plain http."""

    host: str
    process: Process
    username: str | None = None
    password: str | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def oci(self, repository: str, ref: str = "") -> str:
        """An ``oci://`` URL into this registry; ``ref`` is ``:tag`` or ``@sha256:...``."""
        return f"oci://{self.host}/{repository}{ref}"

    def stop(self) -> None:
        self.process.stop()


def _config(root: Path, port: int, htpasswd: Path | None) -> str:
    auth = f"auth:\n  htpasswd:\n    realm: lockgate-test\n    path: {htpasswd}\n" if htpasswd else ""
    return (
        "version: 0.1\n"
        "log:\n  level: info\n  accesslog:\n    disabled: true\n"
        f"storage:\n  filesystem:\n    rootdirectory: {root / 'data'}\n  delete:\n    enabled: true\n"
        "  cache:\n    blobdescriptor: inmemory\n"
        f"http:\n  addr: 127.0.0.1:{port}\n  headers:\n    X-Content-Type-Options: [nosniff]\n"
        f"{auth}"
    )


def start_registry(workdir: Path, *, auth: bool = False, name: str = "registry") -> Registry:
    binary = shutil.which(REGISTRY_BINARY)
    if binary is None:
        raise WorldSetupError(
            "starting the registry: 'docker-registry' is not installed "
            "(run 'make setup', which installs Debian's docker-registry)"
        )
    root = workdir / name
    root.mkdir(parents=True, exist_ok=True)
    username = password = None
    htpasswd = None
    if auth:
        if shutil.which("htpasswd") is None:
            raise WorldSetupError("starting the auth registry: 'htpasswd' (apache2-utils) is not installed")
        username, password = "lockgate", secrets.token_urlsafe(12)
        htpasswd = root / "htpasswd"
        out = subprocess.run(
            ["htpasswd", "-Bbn", username, password], capture_output=True, text=True, check=True
        )
        htpasswd.write_text(out.stdout)
    port = free_port()
    config = root / "config.yml"
    config.write_text(_config(root, port, htpasswd))
    process = start(
        name, [binary, "serve", config], log=root / "registry.log", env={"OTEL_TRACES_EXPORTER": "none"}
    )
    registry = Registry(host=f"127.0.0.1:{port}", process=process, username=username, password=password)

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"{registry.url}/v2/", timeout=1) as resp:
                return bool(resp.status == 200)
        except urllib.error.HTTPError as exc:
            return exc.code == 401 and auth
        except OSError:
            return False

    wait_until(process, ready, timeout=15, what="answering /v2/")
    return registry
