"""Find credentials for a registry host, the way docker, oras and Flux do.

Order: explicit ``--creds user:pass``; ``LOCKGATE_REGISTRY_USERNAME``/``PASSWORD`` from the
environment, for the one host named by ``LOCKGATE_REGISTRY_HOST`` (how the GitHub Action passes
its inputs without writing a Docker config to disk); the Docker config (``$DOCKER_CONFIG/config.json``
or ``~/.docker/config.json``): ``credHelpers[host]``, then ``auths[host]``, then
``credsStore``; ``GITHUB_TOKEN`` for ghcr.io inside GitHub Actions; else anonymous.
Credentials are held in a ``Credentials`` value whose ``repr`` hides the secret, and
nothing here ever puts a secret into an error message.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockgate import boundedjson, parselimits
from lockgate.errors import AuthError, ExitCode, UsageError

#: a Docker config (a file, or a Secret's .dockerconfigjson) larger than this is not one
_MAX_CONFIG = parselimits.DEFAULT.max_document_bytes


@dataclass(frozen=True)
class Credentials:
    """A username and a secret (password or token). ``identity_token`` is an OAuth2 refresh token."""

    username: str
    secret: str = field(repr=False)
    identity_token: bool = False
    origin: str = "explicit"

    @classmethod
    def from_flag(cls, text: str) -> Credentials:
        """Parse ``--creds user:password`` (a bare ``user`` is refused: we never prompt)."""
        username, sep, secret = text.partition(":")
        if not sep or not username or not secret:
            raise UsageError("--creds must be USER:PASSWORD (or USER:TOKEN)")
        return cls(username=username, secret=secret, origin="--creds")


def docker_config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("DOCKER_CONFIG")
    return Path(base) / "config.json" if base else Path.home() / ".docker" / "config.json"


def _normalise_host(key: str) -> str:
    host = key.split("://", 1)[-1]
    host = host.split("/", 1)[0]
    return "docker.io" if host in ("index.docker.io", "registry-1.docker.io") else host


def _read_config(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsageError(f"cannot read Docker config {path}: {exc.strerror}") from exc
    try:
        value = boundedjson.json_value(
            text, f"Docker config {path}", max_bytes=_MAX_CONFIG, exit_code=ExitCode.USAGE
        )
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"Docker config {path} is not valid JSON (line {exc.lineno}): fix or remove it"
        ) from exc
    return value if isinstance(value, dict) else {}


def _from_auth_entry(entry: Mapping[str, Any], origin: str) -> Credentials | None:
    token = entry.get("identitytoken")
    if isinstance(entry.get("auth"), str) and entry["auth"]:
        try:
            decoded = base64.b64decode(entry["auth"]).decode()
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise UsageError(f"{origin}: the 'auth' field is not base64 of USER:PASSWORD") from exc
        username, _, secret = decoded.partition(":")
    else:
        username, secret = str(entry.get("username", "")), str(entry.get("password", ""))
    if isinstance(token, str) and token:
        return Credentials(username=username or "<token>", secret=token, identity_token=True, origin=origin)
    if username and secret:
        return Credentials(username=username, secret=secret, origin=origin)
    return None


def from_docker_config(data: bytes, host: str, *, origin: str) -> Credentials | None:
    """Credentials for ``host`` from a Docker config held in memory (a ``kubernetes.io/dockerconfigjson``
    Secret's ``.dockerconfigjson``), matching ``auths`` keys as ``find`` does; None when no entry
    is for ``host``. ``origin`` names the config in messages, which never hold its values."""
    try:
        value = boundedjson.json_value(data, origin, max_bytes=_MAX_CONFIG, exit_code=ExitCode.USAGE)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line = f" (line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise UsageError(f"{origin} is not valid JSON{line}") from None
    auths = value.get("auths") if isinstance(value, dict) else None
    if not isinstance(auths, dict):
        raise UsageError(f"{origin} has no 'auths' mapping")
    wanted = _normalise_host(host)
    for key, entry in auths.items():
        if _normalise_host(key) == wanted and isinstance(entry, dict):
            found = _from_auth_entry(entry, f"{origin} auths[{key!r}]")
            if found is not None:
                return found
    return None


def auth_hosts(data: bytes) -> list[str]:
    """The hosts a Docker config has ``auths`` entries for (for "no entry for X; it has Y")."""
    try:
        value = boundedjson.json_value(data, "Docker config", max_bytes=_MAX_CONFIG)
    except (json.JSONDecodeError, UnicodeDecodeError, boundedjson.LimitExceeded):
        return []
    auths = value.get("auths") if isinstance(value, dict) else None
    return sorted({_normalise_host(str(k)) for k in auths}) if isinstance(auths, dict) else []


def _from_helper(helper: str, host: str) -> Credentials | None:
    program = shutil.which(f"docker-credential-{helper}")
    origin = f"credential helper docker-credential-{helper}"
    if program is None:
        raise AuthError(f"{origin} is configured for {host} but not found on PATH")
    for candidate in (host, f"https://{host}"):
        proc = subprocess.run([program, "get"], input=candidate, capture_output=True, text=True, timeout=60)
        if proc.returncode == 0:
            try:
                reply = json.loads(proc.stdout)
            except json.JSONDecodeError as exc:
                raise AuthError(f"{origin} returned something that is not JSON for {host}") from exc
            username, secret = str(reply.get("Username", "")), str(reply.get("Secret", ""))
            if not secret:
                return None
            if username == "<token>":
                return Credentials(username=username, secret=secret, identity_token=True, origin=origin)
            return Credentials(username=username, secret=secret, origin=origin)
        if "credentials not found" not in (proc.stdout + proc.stderr).lower():
            raise AuthError(f"{origin} failed for {host} (exit {proc.returncode})")
    return None


#: environment credentials, for the registry host named by ENV_HOST only
ENV_HOST = "LOCKGATE_REGISTRY_HOST"
ENV_USERNAME = "LOCKGATE_REGISTRY_USERNAME"
ENV_PASSWORD = "LOCKGATE_REGISTRY_PASSWORD"


def from_env(host: str, env: Mapping[str, str]) -> Credentials | None:
    """``LOCKGATE_REGISTRY_USERNAME``/``PASSWORD`` when ``LOCKGATE_REGISTRY_HOST`` is ``host``.

    Scoped to one host so a password meant for one registry is never sent to another (the
    image scanner talks to many). Half a pair, or a pair without a host, is a usage error.
    """
    username, password = env.get(ENV_USERNAME, ""), env.get(ENV_PASSWORD, "")
    if not username and not password:
        return None
    if not username or not password:
        raise UsageError(f"set both {ENV_USERNAME} and {ENV_PASSWORD}, or neither")
    scope = env.get(ENV_HOST, "")
    if not scope:
        raise UsageError(f"{ENV_USERNAME}/{ENV_PASSWORD} need {ENV_HOST}: the registry host they are for")
    if _normalise_host(scope) != _normalise_host(host):
        return None
    return Credentials(username=username, secret=password, origin=f"{ENV_USERNAME}/{ENV_PASSWORD}")


def find(
    host: str, *, explicit: Credentials | None = None, env: Mapping[str, str] | None = None
) -> Credentials | None:
    """The credentials to use for ``host``, or None for anonymous access."""
    if explicit is not None:
        return explicit
    env = os.environ if env is None else env
    from_environment = from_env(host, env)
    if from_environment is not None:
        return from_environment
    path = docker_config_path(env)
    config = _read_config(path)
    wanted = _normalise_host(host)
    helpers = config.get("credHelpers") or {}
    for key, helper in helpers.items() if isinstance(helpers, dict) else ():
        if _normalise_host(key) == wanted and isinstance(helper, str):
            return _from_helper(helper, host)
    auths = config.get("auths") or {}
    for key, entry in auths.items() if isinstance(auths, dict) else ():
        if _normalise_host(key) == wanted and isinstance(entry, dict):
            found = _from_auth_entry(entry, f"{path} auths[{key!r}]")
            if found is not None:
                return found
    store = config.get("credsStore")
    if isinstance(store, str) and store:
        found = _from_helper(store, host)
        if found is not None:
            return found
    if wanted == "ghcr.io" and env.get("GITHUB_ACTIONS") == "true" and env.get("GITHUB_TOKEN"):
        return Credentials(
            username=env.get("GITHUB_ACTOR", "github-actions"),
            secret=env["GITHUB_TOKEN"],
            origin="GITHUB_TOKEN",
        )
    return None
