"""Options every CI-side command shares: registry access (``--creds``, ``--insecure``,
``--provider``) and ``--output``.

One definition, so ``push``, ``pull``, ``sign``, ``verify`` and the rest spell, document
and interpret them the same way; ``client_for`` turns them into a registry client.
``--provider`` is kept in click's context (``PROVIDER_KEY``) rather than passed to every
command function: only ``client_for`` reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lockgate import output

if TYPE_CHECKING:
    from lockgate import registry

F = TypeVar("F", bound=Callable[..., Any])


PROVIDER_KEY = "lockgate.provider"


def _keep_provider(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        ctx.meta[PROVIDER_KEY] = value
    return value


def registry_options(func: F) -> F:
    """``--creds USER:PASSWORD`` and ``--insecure``, passed as ``creds`` and ``insecure``;
    ``--provider`` (Flux's ``provider``), read by ``client_for``."""
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
        "--insecure", is_flag=True, help="Plain http (automatic for localhost and 127.0.0.1)."
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
        ref, credentials=explicit, insecure=insecure, provider=provider
    )
