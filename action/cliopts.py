"""Options every CI-side command shares: registry access (``--creds``, ``--insecure``,
``--provider``) and ``--output``.

One definition, so ``push``, ``pull``, ``sign``, ``verify`` and the rest spell, document
and interpret them the same way; ``client_for`` turns them into a registry client. The TLS
flags (``--ca-file``, ``--cert-file``, ``--key-file``, as oras names them; defined in
``lockgate.tlsflags``, shared with the runner's commands and ``lockgate copy``) and ``--provider``
are kept in the click context rather than passed through every command's signature:
``client_for`` reads them from there, and the environment (``SSL_CERT_FILE``, ``HTTPS_PROXY``...)
is read by ``lockgate.registry.connection``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lockgate import output, tlsflags

if TYPE_CHECKING:
    from lockgate import registry

F = TypeVar("F", bound=Callable[..., Any])


PROVIDER_KEY = "lockgate.provider"


def _keep_provider(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        ctx.meta[PROVIDER_KEY] = value
    return value


def registry_options(func: F) -> F:
    """``--creds USER:PASSWORD`` and ``--insecure``, passed as ``creds`` and ``insecure``; the TLS
    flags ``--ca-file``, ``--cert-file`` and ``--key-file`` and ``--provider`` (Flux's
    ``provider``), kept for ``client_for``."""
    func = tlsflags.tls_options()(func)
    func = click.option(
        "--provider",
        type=click.Choice(["generic", "aws", "azure", "gcp"]),
        envvar="LOCKGATE_PROVIDER",
        expose_value=False,
        is_eager=True,
        callback=_keep_provider,
        help="Registry credentials from this cloud's workload identity (ECR, Artifact Registry, ACR); "
        "generic (default): --creds or the Docker config.",
    )(func)
    func = click.option(
        "--creds", metavar="USER:PASSWORD", help="Registry credentials (else Docker config)."
    )(func)
    return click.option(
        "--insecure", is_flag=True, help="Plain http (localhost and 127.0.0.1: https, then http)."
    )(func)


#: ``-o/--output table|json`` (``text`` an alias of table), the same for every command
output_option = output.output_option


def client_for(ref: registry.Reference, creds: str | None, insecure: bool) -> registry.RegistryClient:
    """A client for ``ref``'s registry: ``--creds`` when given, else the Docker config."""
    from lockgate import registry

    explicit = registry.Credentials.from_flag(creds) if creds else None
    context = click.get_current_context(silent=True)
    provider = str(context.meta.get(PROVIDER_KEY) or "generic") if context is not None else "generic"
    return registry.RegistryClient.for_reference(
        ref,
        credentials=explicit,
        insecure=insecure,
        options=tlsflags.transport_options(insecure),
        provider=provider,
    )
