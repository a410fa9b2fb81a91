"""``lockgate adopt [NAME...] --config FILE``: syncs take over what Flux applied, after ``flux suspend``.

Thin: ``runner.serve.adoption.by_hand`` adopts each sync under its Lease
(``runner.pipeline.adopt`` says the steps); each adoption is printed as a table or JSON. The
exit code is that of the first adoption that failed or was refused (2: Flux not suspended or
the sync names no Kustomization; 5: the pre-flight found objects that would be created,
recreated or changed).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from lockgate.output import output_option
from runner.pipeline import adopt as adopt_mod
from runner.serve import adoption


def _table(adopted: adopt_mod.Adoption) -> str:
    lines = [
        f"adopt {adopted.sync}: Kustomization {adopted.kustomization or '?'}"
        + (f" at {adopted.revision}" if adopted.revision else "")
        + (" (dry run: nothing was changed)" if adopted.dry_run else "")
    ]
    done = adopted.result or adopted.preflight
    if done is not None and done.changeset.entries:
        lines.extend("  " + line for line in done.changeset.table().splitlines())
    if adopted.flux_members:
        verb = "would seed" if adopted.dry_run else "seeded"
        count = adopted.flux_members if adopted.dry_run else adopted.seeded
        lines.append(f"  inventory: {verb} {count} of the {adopted.flux_members} objects in Flux's inventory")
    if adopted.error is None:
        verb = "would take" if adopted.dry_run else "took"
        lines.append(
            f"  {verb} over {adopted.taken_over} object(s) from kustomize-controller: its fields are "
            "lockgate's, Flux's owner labels removed"
        )
    if done is not None:
        lines.extend(f"  note: {note}" for note in done.notes)
    lines.extend(f"  note: {note}" for note in adopted.notes())
    lines.append(f"  {sum(adopted.requests.values())} API requests in {adopted.seconds:.1f}s")
    if adopted.error is not None:
        first, *rest = adopted.error.message.splitlines() or [""]
        lines.append(f"  FAILED: {first}")
        lines.extend(f"    {line}" for line in rest)
    return "\n".join(lines)


@click.command("adopt")
@click.argument("names", nargs=-1)
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(path_type=Path),
    help="The config lockgate import wrote; each Sync names its Kustomization "
    "(annotation lockgate.dev/flux-kustomization).",
)
@click.option("--dry-run", is_flag=True, help="Check and show what adopting would change; change nothing.")
@click.option(
    "--kubeconfig", type=click.Path(path_type=Path), help="Kubeconfig (default $KUBECONFIG, in-cluster)."
)
@click.option("--context", help="The kubeconfig context to use (default: the current context).")
@output_option
def adopt(
    names: tuple[str, ...],
    config_path: Path,
    dry_run: bool,
    kubeconfig: Path | None,
    context: str | None,
    output: str,
) -> None:
    """Take over what Flux's kustomize-controller applied (after flux suspend), re-creating nothing."""
    done = adoption.by_hand(config_path, names, dry_run=dry_run, kubeconfig=kubeconfig, context=context)
    if output == "json":
        click.echo(json.dumps([a.to_json() for a in done], indent=2))
    else:
        click.echo("\n".join(_table(a) for a in done))
    failed = next((a.error for a in done if a.error is not None), None)
    if failed is not None:
        failed.json_reported = output == "json"
        raise failed
