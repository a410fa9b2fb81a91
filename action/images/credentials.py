"""Which credentials the scanner uses for one ImageRepository, and why.

Flux reads ``spec.secretRef`` from a ``kubernetes.io/dockerconfigjson`` Secret. A CI job
has no cluster, so lockgate maps the Secret to a file:

- Flux ``secretRef.name: N`` with ``--secrets-dir DIR``: ``DIR/N/.dockerconfigjson`` (the
  layout of a mounted Secret, or of ``kubectl extract``) or else ``DIR/N.json`` (a file a CI
  step wrote from a CI secret). A missing file is an error for that repository only.
- Flux ``secretRef`` without ``--secrets-dir``: the job's own Docker login
  (``$DOCKER_CONFIG``, ``~/.docker/config.json``, credential helpers), as ``docker login``
  or ``docker/login-action`` leave it.
- native ``credentials: PATH``: a Docker config file; ``$VAR`` / ``${VAR}`` are expanded
  and a relative path is relative to the working directory. Keep it out of Git.
- nothing configured: the job's Docker login, else anonymous (bearer tokens included).

As in Flux, a config file without an entry for the image's host means anonymous access.
``Access.origin`` says which rule applied, for the report; no secret is ever put in it
or in an error. Reading files is the only I/O here.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from action.images.model import ImageRepository
from lockgate import bounded, registry
from lockgate.errors import ExitCode, UsageError

SECRET_KEY = ".dockerconfigjson"
#: a Docker config larger than this is not one
_MAX_BYTES = bounded.DEFAULT.max_document_bytes


class CredentialsError(UsageError):
    """A configured credential source cannot be read; names the repository and the file."""


@dataclass(frozen=True)
class Access:
    """Credentials for one repository (None: anonymous) and how they were found."""

    credentials: registry.Credentials | None
    origin: str
    ambient: bool = False  #: let the shared registry code look for a Docker login


def _host_key(key: str) -> str:
    host = key.split("://", 1)[-1].split("/", 1)[0]
    return "docker.io" if host in ("index.docker.io", "registry-1.docker.io") else host


def from_docker_config(document: Mapping[str, Any], host: str, origin: str) -> registry.Credentials | None:
    """The ``auths`` entry of a Docker config for ``host`` (Flux secrets hold only ``auths``)."""
    auths = document.get("auths")
    if not isinstance(auths, Mapping):
        raise CredentialsError(f"{origin}: no 'auths' mapping; expected a Docker config JSON document")
    wanted = _host_key(host)
    for key, entry in auths.items():
        if _host_key(str(key)) != wanted or not isinstance(entry, Mapping):
            continue
        username, secret = str(entry.get("username") or ""), str(entry.get("password") or "")
        if isinstance(entry.get("auth"), str) and entry["auth"]:
            try:
                username, _, secret = base64.b64decode(entry["auth"], validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                raise CredentialsError(
                    f"{origin}: auths[{key!r}].auth is not base64 of USER:PASSWORD"
                ) from None
        token = entry.get("identitytoken")
        if isinstance(token, str) and token:
            return registry.Credentials(username or "<token>", token, identity_token=True, origin=origin)
        if username and secret:
            return registry.Credentials(username, secret, origin=origin)
    return None


def _read(path: Path, what: str) -> Mapping[str, Any]:
    try:
        document = bounded.json_value(
            path.read_text(encoding="utf-8"), str(path), max_bytes=_MAX_BYTES, exit_code=ExitCode.USAGE
        )
    except OSError as exc:
        raise CredentialsError(f"{what}: cannot read {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise CredentialsError(f"{what}: {path} is not a Docker config JSON document") from None
    if not isinstance(document, Mapping):
        raise CredentialsError(f"{what}: {path} is not a Docker config JSON document")
    return document


def secret_file(secrets_dir: Path, name: str) -> Path | None:
    """Where a Secret named ``name`` lives under ``--secrets-dir``, if it does."""
    for candidate in (secrets_dir / name / SECRET_KEY, secrets_dir / f"{name}.json"):
        if candidate.is_file():
            return candidate
    return None


def for_repository(repo: ImageRepository, host: str, *, secrets_dir: Path | None) -> Access:
    """Decide the credentials for ``repo`` (whose registry is ``host``); raises ``CredentialsError``."""
    what = f"ImageRepository {repo.key}" + (f" ({repo.where})" if repo.where else "")
    if repo.credentials_file:
        path = Path(os.path.expandvars(repo.credentials_file))
        origin = f"credentials {repo.credentials_file}"
        if "$" in str(path):
            raise CredentialsError(
                f"{what}: credentials {repo.credentials_file!r} names an unset environment variable"
            )
        return Access(from_docker_config(_read(path, what), host, origin), origin)
    if repo.secret_ref:
        if secrets_dir is None:
            return Access(None, f"secretRef {repo.secret_ref}: the job's Docker login", ambient=True)
        found = secret_file(secrets_dir, repo.secret_ref)
        if found is None:
            mounted = secrets_dir / repo.secret_ref / SECRET_KEY
            single = secrets_dir / f"{repo.secret_ref}.json"
            raise CredentialsError(
                f"{what}: spec.secretRef.name {repo.secret_ref!r}: neither {mounted} nor {single} exists; "
                "write the Secret's Docker config JSON there, or fix --secrets-dir"
            )
        origin = f"secretRef {repo.secret_ref} ({found})"
        return Access(from_docker_config(_read(found, what), host, origin), origin)
    return Access(None, "the job's Docker login, else anonymous", ambient=True)
