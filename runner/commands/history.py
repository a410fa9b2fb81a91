"""``lockgate status``, ``lockgate sync`` and ``lockgate rollback``: the inventory's history, by hand.

Thin: ``status`` is ``pipeline.status.read`` rendered as a table or JSON; ``sync`` is
``pipeline.status.request`` (the requestedAt annotation that ``serve`` answers); ``rollback``
finds the sync in ``--config``, else in the configuration the runner of the namespace runs
with (``pipeline.installed``), for its verification policy and apply settings, and is one
``pipeline.rollback.by_hand`` call (under the sync's Lease) printed like a pass.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from lockgate import terminal, tlsflags
from lockgate.output import output_option
from runner.pipeline import installed, report, status
from runner.serve import leases
from runner.serve.web import local

_KUBECONFIG = click.option(
    "--kubeconfig", type=click.Path(path_type=Path), help="Kubeconfig (default $KUBECONFIG, in-cluster)."
)
_NAMESPACE = click.option(
    "--namespace", "-n", help="Runner namespace holding the inventories (default lockgate-system)."
)
#: the same words as ``reconcile`` and ``serve`` (runner.cli)
_CONTEXT = click.option("--context", help="The kubeconfig context to use (default: the current context).")
_OUTPUT = output_option


@click.command("status")
@click.argument("name", required=False)
@_NAMESPACE
@_KUBECONFIG
@_CONTEXT
@_OUTPUT
@click.option("--web", is_flag=True, help="Serve the status page on loopback instead (Ctrl-C to stop).")
@click.option(
    "--address",
    default=local.DEFAULT_ADDRESS,
    show_default=True,
    help="With --web: the loopback address to listen on (port 0: a free one).",
)
@click.option("--no-open", is_flag=True, help="With --web: print the URL, do not open a browser.")
def status_(
    name: str | None,
    namespace: str | None,
    kubeconfig: Path | None,
    context: str | None,
    output: str,
    web: bool,
    address: str,
    no_open: bool,
) -> None:
    """Show what the runner last applied, its health and history (from the inventory Secrets)."""
    if web:
        local.run(
            name=name,
            namespace=namespace,
            kubeconfig=kubeconfig,
            context=context,
            address=address,
            open_browser=not no_open,
            announce=terminal.echo,
        )
        return
    listing = status.read(namespace=namespace, name=name, kubeconfig=kubeconfig, context=context)
    if output == "json":
        docs = [status.to_json(inv) for inv in listing.inventories]
        click.echo(json.dumps(docs[0] if name else docs, indent=2))
    elif name:
        terminal.echo(status.detail(listing.inventories[0]))
    else:
        terminal.echo(status.table(listing))


@click.command("sync")
@click.argument("name")
@_NAMESPACE
@_KUBECONFIG
@_CONTEXT
@_OUTPUT
def sync(name: str, namespace: str | None, kubeconfig: Path | None, context: str | None, output: str) -> None:
    """Ask lockgate serve for a pass now (retrying a digest that was rolled back from)."""
    at = status.request(name, namespace=namespace, kubeconfig=kubeconfig, context=context)
    if output == "json":
        click.echo(json.dumps({"name": name, "requestedAt": at}, indent=2))
        return
    terminal.echo(f"sync {name}: requested at {at}; lockgate serve runs it within seconds")


@click.command("rollback")
@click.argument("name")
@click.option(
    "--to",
    "to",
    help="Digest to roll back to: sha256:<64 hex>, or a unique prefix of one in the history, as "
    "lockgate status shows it (default: the last healthy one before the current).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="The file of Sync documents (default: the one the runner of the namespace runs with, read "
    "from its ConfigMap).",
)
@click.option(
    "--namespace",
    "-n",
    help="Without --config: the runner namespace whose runner's configuration names the sync "
    "(default lockgate-system).",
)
@_KUBECONFIG
@_CONTEXT
@tlsflags.tls_options()
@_OUTPUT
def rollback_(
    name: str,
    to: str | None,
    config_path: Path | None,
    namespace: str | None,
    kubeconfig: Path | None,
    context: str | None,
    output: str,
) -> None:
    """Roll a sync back to an earlier digest, verified again and applied with prune."""
    sync_options, _ = installed.sync_named(
        name, config_path=config_path, namespace=namespace, kubeconfig=kubeconfig, context=context
    )
    sync_options = sync_options.with_flags(tlsflags.given_options())
    keeper = leases.LeaseKeeper.from_kubeconfig(kubeconfig, context=context)
    result = leases.rollback(keeper, sync_options, to=to, kubeconfig=kubeconfig, context=context)
    click.echo(
        json.dumps(result.to_json(), indent=2) if output == "json" else terminal.lines(report.table(result))
    )
    if result.error is not None:
        result.error.json_reported = output == "json"
        raise result.error
