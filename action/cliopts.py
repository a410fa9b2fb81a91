"""Options every CI-side command shares: registry access (``--creds``, ``--insecure``) and ``--output``.

One definition, so ``push``, ``pull``, ``sign``, ``verify`` and the rest spell, document
and interpret them the same way; ``client_for`` turns them into a registry client. The TLS
flags (``--ca-file``, ``--cert-file``, ``--key-file``, as oras names them) are kept in the
click context rather than passed through every command's signature: ``client_for`` reads
them from there, and the environment (``SSL_CERT_FILE``, ``HTTPS_PROXY``...) is read by
``lockgate.registry.connection``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lockgate import output

if TYPE_CHECKING:
    from lockgate import registry

F = TypeVar("F", bound=Callable[..., Any])


_TLS_FLAGS = "lockgate.registry.tls-flags"


def _keep_tls_flag(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None and param.name is not None:
        ctx.meta.setdefault(_TLS_FLAGS, {})[param.name] = value


def registry_options(func: F) -> F:
    """``--creds USER:PASSWORD`` and ``--insecure``, passed as ``creds`` and ``insecure``; the TLS
    flags ``--ca-file``, ``--cert-file`` and ``--key-file``, kept for ``client_for``."""
    for flag, text in (
        ("--key-file", "The key of --cert-file (PEM)."),
        ("--cert-file", "A client certificate (PEM) for registries that require one (mTLS)."),
        ("--ca-file", "A CA certificate (PEM) the registry's certificate is trusted through, besides "
         "the system's ($SSL_CERT_FILE)."),
    ):
        func = click.option(
            flag, metavar="FILE", help=text, expose_value=False, callback=_keep_tls_flag
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
    return registry.RegistryClient.for_reference(
        ref, credentials=explicit, insecure=insecure, options=transport_options(insecure)
    )


def transport_options(insecure: bool = False) -> registry.TransportOptions:
    """The TLS flags of the command being run (none outside a command), read once per client."""
    from lockgate import registry

    context = click.get_current_context(silent=True)
    flags: dict[str, str] = context.meta.get(_TLS_FLAGS, {}) if context is not None else {}
    return registry.TransportOptions.from_files(
        ca_file=flags.get("ca_file"),
        cert_file=flags.get("cert_file"),
        key_file=flags.get("key_file"),
        insecure=insecure,
    )
