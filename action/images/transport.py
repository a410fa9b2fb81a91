"""An ImageRepository's ``certSecretRef`` and ``proxySecretRef`` as ``registry.TransportOptions``.

Beside ``credentials`` (which reads ``secretRef``), with the same mapping of a Flux Secret to
files a CI job has: ``--secrets-dir DIR`` holds Secret ``N`` as the directory ``DIR/N/`` with one
file per entry (the layout of a mounted Secret, or of ``kubectl extract secret/N --to DIR/N``):
``ca.crt``, ``tls.crt``, ``tls.key`` for ``certSecretRef``, ``address``, ``username``,
``password`` for ``proxySecretRef``. What the entries mean is ``lockgate.registry.connection``'s
decision, shared with the runner; the key is loaded from memory once read.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from action.images.credentials import CredentialsError
from action.images.model import ImageRepository
from lockgate import registry
from lockgate.errors import UsageError
from lockgate.registry import connection

_CERT_ENTRIES = (connection.CA_ENTRY, connection.CERT_ENTRY, connection.KEY_ENTRY)
_PROXY_ENTRIES = (connection.PROXY_ADDRESS, connection.PROXY_USERNAME, connection.PROXY_PASSWORD)
#: a certificate chain or a proxy entry is far smaller than this
_MAX_ENTRY_BYTES = 1 << 20


def options_for(repo: ImageRepository, *, secrets_dir: Path | None) -> registry.TransportOptions:
    """The TLS and proxy settings ``repo`` names; raises ``CredentialsError`` naming the field."""
    what = f"ImageRepository {repo.key}" + (f" ({repo.where})" if repo.where else "")
    options = registry.TransportOptions(insecure=repo.insecure, spelling=connection.FIELDS)
    try:
        if repo.cert_secret_ref:
            data, where = _entries(secrets_dir, repo.cert_secret_ref, _CERT_ENTRIES, what, "certSecretRef")
            found = registry.TransportOptions.from_cert_secret(data, where=where)
            options = dataclasses.replace(found, insecure=repo.insecure)
        if repo.proxy_secret_ref:
            data, where = _entries(secrets_dir, repo.proxy_secret_ref, _PROXY_ENTRIES, what, "proxySecretRef")
            options = options.with_proxy_secret(data, where=where)
    except CredentialsError:
        raise
    except UsageError as exc:
        raise CredentialsError(exc.message) from None
    return options


def _entries(
    secrets_dir: Path | None, name: str, entries: tuple[str, ...], what: str, ref: str
) -> tuple[dict[str, bytes], str]:
    """The Secret's entries as files under ``secrets_dir``, and how to name it in errors."""
    field = f"spec.{ref}.name"
    if secrets_dir is None:
        raise CredentialsError(
            f"{what}: {field} {name!r} needs --secrets-dir DIR holding the Secret as DIR/{name}/ "
            f"(one file per entry: {', '.join(entries)})"
        )
    folder = secrets_dir / name
    if not folder.is_dir():
        raise CredentialsError(
            f"{what}: {field} {name!r}: {folder} is not a directory; write the Secret's entries there "
            f"({', '.join(entries)}), or fix --secrets-dir"
        )
    found: dict[str, bytes] = {}
    for path in sorted(folder.iterdir()):
        if not path.is_file() or path.name.startswith("."):
            continue
        if path.stat().st_size > _MAX_ENTRY_BYTES:
            raise CredentialsError(f"{what}: {field} {name!r}: {path} is over {_MAX_ENTRY_BYTES} bytes")
        found[path.name] = path.read_bytes()
    return found, f"{what}: {field} {name!r} ({folder})"
