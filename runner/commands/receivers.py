"""``lockgate receivers --config FILE``: each registry receiver's hook path, to paste into the registry.

Thin: the Runner document of ``--config`` names the receivers and the runner namespace;
``runner.serve.receivers.hook_paths`` reads each one's Secret through the cluster (so only
someone allowed to read it learns the path, which is as secret as the token for Docker Hub
and Quay) and derives the path as ``serve`` does. Printed as a table or JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from lockgate import terminal
from lockgate.output import output_option
from runner.kube.client import Kube
from runner.pipeline import config as config_mod
from runner.pipeline.options import runner_namespace
from runner.serve import receivers


@click.command("receivers")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(path_type=Path),
    help="The file lockgate serve runs with: its Runner document's spec.receivers.",
)
@click.option(
    "--kubeconfig", type=click.Path(path_type=Path), help="Kubeconfig (default $KUBECONFIG, in-cluster)."
)
@click.option("--context", help="The kubeconfig context to use (default: the current context).")
@output_option
def receivers_(config_path: Path, kubeconfig: Path | None, context: str | None, output: str) -> None:
    """Print each registry receiver's secret hook path (POST it on serve's webhookAddress)."""
    loaded = config_mod.load(config_path)
    namespace = runner_namespace(loaded.runner.namespace)
    kube = Kube.from_kubeconfig(kubeconfig, context=context, pool=2)
    paths = receivers.hook_paths(kube, namespace, loaded.runner.receivers)
    if output == "json":
        click.echo(json.dumps([{"name": p.name, "type": p.type, "path": p.path} for p in paths], indent=2))
        return
    if not paths:
        terminal.echo(f"--config {config_path}: no receivers (spec.receivers of the Runner document)")
        return
    width = max(len(p.name) for p in paths)
    terminal.echo(f"{'NAME':<{width}}  {'TYPE':<9}  PATH")
    for p in paths:
        terminal.echo(f"{p.name:<{width}}  {p.type:<9}  {p.path}")
