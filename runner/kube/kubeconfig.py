"""Credentials for the API server from a kubeconfig or the in-cluster service account.

Read directly (certificates, token, CA, inline ``*-data``), because importing the
``kubernetes`` package costs most of a second of start-up, which dominates a no-op pass.
Anything this reader does not handle (exec plugins, auth providers) falls back to the
``kubernetes`` package's loader. Inline certificates are written to private temporary
files, as ``requests`` wants paths; nothing secret is ever put in a message.
"""

from __future__ import annotations

import base64
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lockgate.errors import UsageError

SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True)
class Credentials:
    server: str
    ca: str | None = None
    cert: tuple[str, str] | None = None
    token: str | None = None
    insecure: bool = False


class Unsupported(Exception):
    """The kubeconfig needs the full loader (exec plugin, auth provider)."""


def _named(items: Any, name: str, what: str, path: Path) -> dict[str, Any]:
    for item in items or []:
        if isinstance(item, dict) and item.get("name") == name:
            return dict(item.get(what) or {})
    raise UsageError(f"kubeconfig {path}: no {what} named {name!r}")


def _file(entry: dict[str, Any], key: str, base: Path) -> str | None:
    if entry.get(f"{key}-data"):
        handle = tempfile.NamedTemporaryFile(prefix="lockgate-kube-", delete=False)  # noqa: SIM115
        with handle:
            handle.write(base64.b64decode(entry[f"{key}-data"]))
        os.chmod(handle.name, 0o600)
        return handle.name
    if entry.get(key):
        return str(base / entry[key])
    return None


def from_file(path: Path, context: str | None = None) -> Credentials:
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"cannot read kubeconfig {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"kubeconfig {path} is not a mapping")
    name = context or doc.get("current-context")
    if not name:
        raise UsageError(f"kubeconfig {path} has no current-context; pass one")
    ctx = _named(doc.get("contexts"), name, "context", path)
    cluster = _named(doc.get("clusters"), str(ctx.get("cluster")), "cluster", path)
    user = _named(doc.get("users"), str(ctx.get("user")), "user", path) if ctx.get("user") else {}
    if user.get("exec") or user.get("auth-provider") or user.get("username"):
        raise Unsupported
    base = path.parent
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = (base / user["tokenFile"]).read_text().strip()
    cert, key = _file(user, "client-certificate", base), _file(user, "client-key", base)
    return Credentials(
        server=str(cluster["server"]),
        ca=_file(cluster, "certificate-authority", base),
        cert=(cert, key) if cert and key else None,
        token=token,
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
    )


def in_cluster() -> Credentials:
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise UsageError("no kubeconfig and not running in a cluster: pass --kubeconfig or set KUBECONFIG")
    host = f"[{host}]" if ":" in host else host
    return Credentials(
        server=f"https://{host}:{port}",
        ca=str(SA_DIR / "ca.crt"),
        token=(SA_DIR / "token").read_text().strip(),
    )


def find(path: Path | None, context: str | None = None) -> Credentials:
    """From ``path``, ``$KUBECONFIG`` (first file) or ``~/.kube/config``; in-cluster when none exists."""
    if path is None and os.environ.get("KUBECONFIG"):
        path = Path(os.environ["KUBECONFIG"].split(os.pathsep)[0])
    default = Path.home() / ".kube" / "config"
    if path is None and not default.exists():
        return in_cluster()
    return from_file(path or default, context)
