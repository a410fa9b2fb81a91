"""``lockgate status``, ``lockgate sync`` and ``lockgate rollback``: the inventory's history, by hand.

Thin: ``status`` is ``pipeline.status.read`` rendered as a table or JSON; ``sync`` is
``pipeline.status.request`` (the requestedAt annotation that ``serve`` answers); ``rollback``
loads the sync from the configuration file, for its verification policy and apply
settings, and is one ``pipeline.rollback.by_hand`` call printed like a pass.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from lockgate.errors import UsageError
from lockgate.output import output_option
from runner.pipeline import config, report, status
from runner.serve import leases
from runner.serve.web import local

_KUBECONFIG = click.option(
    "--kubeconfig", type=click.Path(path_type=Path), help="Kubeconfig (default $KUBECONFIG, in-cluster)."
)
_NAMESPACE = click.option(
    "--namespace", "-n", help="Runner namespace holding the inventories (default lockgate-system)."
)
_OUTPUT = output_option


@click.command("status")
@click.argument("name", required=False)
@_NAMESPACE
@_KUBECONFIG
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
            address=address,
            open_browser=not no_open,
            announce=click.echo,
        )
        return
    listing = status.read(namespace=namespace, name=name, kubeconfig=kubeconfig)
    if output == "json":
        docs = [status.to_json(inv) for inv in listing.inventories]
        click.echo(json.dumps(docs[0] if name else docs, indent=2))
    elif name:
        click.echo(status.detail(listing.inventories[0]))
    else:
        click.echo(status.table(listing))


@click.command("sync")
@click.argument("name")
@_NAMESPACE
@_KUBECONFIG
def sync(name: str, namespace: str | None, kubeconfig: Path | None) -> None:
    """Ask lockgate serve for a pass now (retrying a digest that was rolled back from)."""
    at = status.request(name, namespace=namespace, kubeconfig=kubeconfig)
    click.echo(f"sync {name}: requested at {at}; lockgate serve runs it within seconds")


@click.command("rollback")
@click.argument("name")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    required=True,
    help="The file of Sync documents.",
)
@click.option("--to", "to", help="Digest to roll back to (default: the last healthy one before the current).")
@_KUBECONFIG
@_OUTPUT
def rollback_(name: str, config_path: Path, to: str | None, kubeconfig: Path | None, output: str) -> None:
    """Roll a sync back to an earlier digest, verified again and applied with prune."""
    syncs = {s.name: s for s in config.load(config_path).syncs}
    if name not in syncs:
        raise UsageError(
            f"--config {config_path}: no Sync named {name!r} (found: {', '.join(syncs) or 'none'})"
        )
    keeper = leases.LeaseKeeper.from_kubeconfig(kubeconfig)
    result = leases.rollback(keeper, syncs[name], to=to, kubeconfig=kubeconfig)
    click.echo(json.dumps(result.to_json(), indent=2) if output == "json" else report.table(result))
    if result.error is not None:
        result.error.json_reported = output == "json"
        raise result.error
