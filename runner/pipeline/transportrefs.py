"""A Sync's ``certSecretRef``, ``proxySecretRef`` and ``insecure`` as ``registry.TransportOptions``,
over the TLS flags of ``reconcile`` and ``rollback`` when the command line gave them.

Beside ``secretrefs`` (credentials and keys), in the same step of a pass: the Secrets are read
at each pass through the pass's ``Kube`` client, because certificates and proxy passwords
rotate, and their values stay in memory (the client key is loaded through
``lockgate.tls.private_file``, never a file). What the entries mean and which are required is
``lockgate.registry.connection``'s decision, shared with ``lockgate images``; errors name
``Secret/NS/NAME`` and the Sync field, never a value.
"""

from __future__ import annotations

import dataclasses

from lockgate import registry
from lockgate.registry import connection
from runner.pipeline.secretrefs import SecretReader

CERT_FIELD = "spec.certSecretRef.name"
PROXY_FIELD = "spec.proxySecretRef.name"


def options_for(
    *,
    insecure: bool,
    cert_secret_ref: str | None,
    proxy_secret_ref: str | None,
    secrets: SecretReader | None,
    flags: registry.TransportOptions | None = None,
) -> registry.TransportOptions:
    """The options a Sync's fields ask for; ``secrets`` is needed when it names a Secret.

    ``flags`` (the command line's ``--ca-file``/``--cert-file``/``--key-file``) stand where the
    Sync names no ``certSecretRef``: the Secret replaces them, as a ``proxySecretRef`` replaces
    the environment's proxy."""
    options = registry.TransportOptions(insecure=insecure, spelling=connection.FIELDS)
    if flags is not None:
        # the runner's commands have no --insecure: plain http is the Sync's spec.insecure
        spelling = dataclasses.replace(flags.spelling, insecure=connection.FIELDS.insecure)
        options = dataclasses.replace(flags, insecure=insecure or flags.insecure, spelling=spelling)
    if cert_secret_ref is not None:
        reader = _need(secrets, CERT_FIELD)
        data = reader.read(cert_secret_ref, field=CERT_FIELD)
        where = reader.where(cert_secret_ref, CERT_FIELD)
        found = registry.TransportOptions.from_cert_secret(data, where=where)
        options = dataclasses.replace(found, insecure=insecure)
    if proxy_secret_ref is not None:
        reader = _need(secrets, PROXY_FIELD)
        data = reader.read(proxy_secret_ref, field=PROXY_FIELD)
        options = options.with_proxy_secret(data, where=reader.where(proxy_secret_ref, PROXY_FIELD))
    return options


def _need(secrets: SecretReader | None, field: str) -> SecretReader:
    if secrets is None:
        from lockgate.errors import UsageError

        raise UsageError(f"{field} names a Secret, but this pass has no cluster to read it from")
    return secrets
