"""Run a kubeconfig's exec credential plugin and read its ``ExecCredential``, as kubectl does.

Called by ``runner.kube.auth.ExecAuthenticator`` when it has no credential yet, when the
last one expired, and once after a 401. The plugin (``aws eks get-token``,
``gke-gcloud-auth-plugin``, ``kubelogin``...) gets the kubeconfig's ``env`` on top of
ours and ``KUBERNETES_EXEC_INFO`` (``spec.interactive``, and ``spec.cluster`` when
``provideClusterInfo``); it prints a ``client.authentication.k8s.io/v1`` or ``v1beta1``
``ExecCredential`` with a token or a client certificate and key, and maybe an expiry.

The plugin's output holds a secret: it is never put in a message, only its stderr tail
is, and only when the plugin failed.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate import terminal as term
from lockgate.errors import AuthError, UsageError
from runner.kube import kubeconfig

TIMEOUT = 120.0
STDERR_TAIL = 600


@dataclass(frozen=True)
class ExecCredential:
    token: str | None = field(default=None, repr=False)
    client_cert: bytes | None = field(default=None, repr=False)
    client_key: bytes | None = field(default=None, repr=False)
    expires: datetime.datetime | None = None

    def expired(self, now: datetime.datetime | None = None) -> bool:
        if self.expires is None:
            return False
        return (now or datetime.datetime.now(datetime.UTC)) >= self.expires

    def same_as(self, other: ExecCredential) -> bool:
        return (self.token, self.client_cert, self.client_key) == (
            other.token,
            other.client_cert,
            other.client_key,
        )


def cluster_info(cluster: kubeconfig.Cluster) -> dict[str, Any]:
    """``spec.cluster``: the kubeconfig's cluster with the CA as (base64) bytes, empty fields left out."""
    info: dict[str, Any] = {"server": cluster.server}
    if cluster.tls_server_name:
        info["tls-server-name"] = cluster.tls_server_name
    if cluster.insecure:
        info["insecure-skip-tls-verify"] = True
    if cluster.ca is not None:
        try:
            data = cluster.ca if isinstance(cluster.ca, bytes) else cluster.ca.read_bytes()
        except OSError as exc:
            raise UsageError(
                f"cannot read the certificate authority {cluster.ca!s} ({type(exc).__name__}) "
                "to pass to the exec plugin: check the kubeconfig"
            ) from None
        info["certificate-authority-data"] = base64.b64encode(data).decode("ascii")
    if cluster.exec_extension is not None:
        info["config"] = cluster.exec_extension
    return info


def exec_info(config: kubeconfig.ExecConfig, cluster: kubeconfig.Cluster, *, interactive: bool) -> str:
    """The ``KUBERNETES_EXEC_INFO`` value."""
    spec: dict[str, Any] = {"interactive": interactive}
    if config.provide_cluster_info:
        spec["cluster"] = cluster_info(cluster)
    return json.dumps({"apiVersion": config.api_version, "kind": "ExecCredential", "spec": spec})


def _tail(stderr: bytes) -> str:
    text = stderr.decode(errors="replace").strip()
    if not text:
        return "(no output on stderr)"
    return ("..." + text[-STDERR_TAIL:]) if len(text) > STDERR_TAIL else text


def parse(stdout: bytes, config: kubeconfig.ExecConfig) -> ExecCredential:
    """The plugin's ``ExecCredential``; messages describe what is wrong, never what it holds."""
    what = f"the exec plugin {config.command!r}"
    try:
        doc = json.loads(stdout)
    except ValueError:
        raise AuthError(f"{what} printed no ExecCredential (JSON) on stdout: check the plugin") from None
    if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
        raise AuthError(f"{what} printed JSON that is not an ExecCredential: check the plugin")
    if doc.get("apiVersion") != config.api_version:
        raise AuthError(
            f"{what} answered with apiVersion {str(doc.get('apiVersion'))!r}, the kubeconfig asks for "
            f"{config.api_version!r}: set users[].user.exec.apiVersion to the plugin's version"
        )
    status = doc.get("status")
    if not isinstance(status, dict):
        raise AuthError(f"{what} returned an ExecCredential without a status: check the plugin")
    token, cert, key = (status.get(k) for k in ("token", "clientCertificateData", "clientKeyData"))
    if any(v is not None and not isinstance(v, str) for v in (token, cert, key)):
        raise AuthError(f"{what} returned a status whose credential fields are not strings: check the plugin")
    if bool(cert) != bool(key):
        raise AuthError(f"{what} returned only one of a client certificate and its key: check the plugin")
    if not token and not cert:
        raise AuthError(f"{what} returned neither a token nor a client certificate and key: check the plugin")
    expires = None
    if status.get("expirationTimestamp"):
        try:
            expires = datetime.datetime.fromisoformat(str(status["expirationTimestamp"]))
        except ValueError:
            raise AuthError(f"{what} returned an expirationTimestamp that is not RFC 3339") from None
        if expires.tzinfo is None:
            raise AuthError(f"{what} returned an expirationTimestamp without a time zone")
    return ExecCredential(
        token=token or None,
        client_cert=cert.encode() if cert else None,
        client_key=key.encode() if key else None,
        expires=expires,
    )


def run(
    config: kubeconfig.ExecConfig,
    cluster: kubeconfig.Cluster,
    *,
    environ: Mapping[str, str] = os.environ,
    terminal: bool | None = None,
    timeout: float = TIMEOUT,
) -> ExecCredential:
    """Run the plugin once; ``terminal`` (default: whether stdin is one) decides ``spec.interactive``."""
    what = f"the exec plugin {config.command!r}"
    if terminal is None:
        terminal = sys.stdin is not None and sys.stdin.isatty()
    interactive = terminal and config.interactive_mode != "Never"
    if config.interactive_mode == "Always" and not interactive:
        raise AuthError(
            f"{what} needs a terminal (interactiveMode: Always) and standard input is not one: "
            "log in beforehand, or configure a non-interactive credential for CI"
        )
    info = exec_info(config, cluster, interactive=interactive)
    env = {**environ, **dict(config.env), "KUBERNETES_EXEC_INFO": info}
    try:
        done = subprocess.run(
            [config.command, *config.args],
            env=env,
            stdin=None if interactive else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            # interactive: the plugin talks to the user on stderr
            stderr=None if interactive else subprocess.PIPE,
            timeout=timeout,
        )
    except FileNotFoundError:
        hint = config.install_hint.strip() or "install it, or fix users[].user.exec.command in the kubeconfig"
        raise AuthError(f"{what} was not found: {hint}") from None
    except PermissionError:
        raise AuthError(f"{what} is not executable: check its permissions") from None
    except subprocess.TimeoutExpired:
        raise AuthError(f"{what} did not finish within {timeout:.0f}s: is it waiting for a login?") from None
    stderr = done.stderr or b""
    if done.returncode != 0:
        raise AuthError(f"{what} failed (exit {done.returncode}): {_tail(stderr)}")
    if stderr:
        # what kubectl shows too: the plugin's own warnings, for the user
        sys.stderr.write(term.lines(stderr.decode(errors="replace")))
    return parse(done.stdout, config)
