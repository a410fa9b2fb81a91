"""The TLS flags of every command that talks to a registry: ``--ca-file``, ``--cert-file``,
``--key-file`` (oras' names), defined once here for the CI commands (``action.cliopts``), the
runner's ``reconcile`` and ``rollback``, and ``lockgate copy``, which takes them once per side
with oras copy's prefixes (``--from-ca-file``... ``--to-key-file``).

The values are kept in the click context rather than passed through every command's
signature; ``transport_options`` reads them back as ``registry.TransportOptions``
(``lockgate.registry.connection`` reads the files and decides what they mean), and the
environment (``SSL_CERT_FILE``, ``HTTPS_PROXY``...) is read there too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from lockgate import registry

F = TypeVar("F", bound=Callable[..., Any])

_KEPT = "lockgate.registry.tls-flags"
#: the click parameter names of the three flags, without the side's prefix
_NAMES = ("ca_file", "cert_file", "key_file")


def _keep(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None and param.name is not None:
        ctx.meta.setdefault(_KEPT, {})[param.name] = value


def tls_options(prefix: str = "", *, what: str = "the registry") -> Callable[[F], F]:
    """``--{prefix}ca-file``, ``--{prefix}cert-file`` and ``--{prefix}key-file`` (not passed to
    the command: ``transport_options(prefix=...)`` reads them); ``what`` names the registry in
    the help (``SRC``'s registry for ``--from-``)."""

    def decorate(func: F) -> F:
        for flag, text in (
            ("key-file", f"The key of --{prefix}cert-file (PEM)."),
            ("cert-file", f"A client certificate (PEM) for {what}, when it requires one (mTLS)."),
            ("ca-file", f"A CA certificate (PEM) to trust for {what}, besides the system's "
             "($SSL_CERT_FILE)."),
        ):
            func = click.option(
                f"--{prefix}{flag}", metavar="FILE", help=text, expose_value=False, callback=_keep
            )(func)
        return func

    return decorate


def given_options(prefix: str = "") -> registry.TransportOptions | None:
    """``transport_options`` when the command being run got any of the side's TLS flags, else None."""
    return transport_options(prefix=prefix) if any(_flags(prefix).values()) else None


def transport_options(insecure: bool = False, *, prefix: str = "") -> registry.TransportOptions:
    """The side's TLS flags of the command being run (none outside a command), read once per client."""
    from lockgate import registry

    flags = _flags(prefix)
    return registry.TransportOptions.from_files(
        ca_file=flags["ca_file"],
        cert_file=flags["cert_file"],
        key_file=flags["key_file"],
        insecure=insecure,
        flag_prefix=prefix,
    )


def _flags(prefix: str) -> dict[str, str | None]:
    context = click.get_current_context(silent=True)
    kept: dict[str, str] = context.meta.get(_KEPT, {}) if context is not None else {}
    side = prefix.replace("-", "_")
    return {name: kept.get(side + name) for name in _NAMES}
