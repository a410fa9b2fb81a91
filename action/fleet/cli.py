"""Click command ``fleet``: flags in, one library call (``commands.read`` or ``commands.watch``),
the table or JSON out.

With ``--watch`` a terminal is redrawn in place (as ``watch(1)`` does); anything else gets one
table per refresh, each under the time it was read, or with ``-o json`` one JSON document per
line. The command ends with exit code 0 on Ctrl-C (SIGINT) or SIGTERM.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from action import cliopts
from action.signing.cli import keyless_policy_options, keyless_verify_options
from lockgate import output as output_mod
from lockgate import terminal

if TYPE_CHECKING:
    from lockgate.errors import LockgateError
    from lockgate.fleet.matrix import Fleet

#: clear the screen and go home, before each redraw on a terminal
REDRAW = "\x1b[H\x1b[2J"


@click.command("fleet")
@click.argument("url")
@click.option(
    "--key",
    "key_paths",
    multiple=True,
    type=click.Path(path_type=Path),
    help="cosign public key of an attesting runner; repeat it for each runner (any one verifying counts).",
)
@click.option(
    "--bind-keys-to-clusters",
    "bind_keys",
    is_flag=True,
    help="Each --key file <clusterName>.pub attests for that cluster only (claims for others: unverified).",
)
@keyless_policy_options
@click.option("--semver", metavar="RANGE", help="Only the tags in this semver range (e.g. '>=1.4.0').")
@click.option(
    "--last", type=int, metavar="N", help="Only the N newest digests (by their created annotation, then tag)."
)
@click.option("--watch", is_flag=True, help="Read again every --interval until Ctrl-C.")
@click.option("--interval", default="10s", show_default=True, help="Time between --watch refreshes.")
@cliopts.registry_options
@cliopts.output_option
def fleet(
    url: str,
    key_paths: tuple[Path, ...],
    bind_keys: bool,
    semver: str | None,
    last: int | None,
    watch: bool,
    interval: str,
    creds: str | None,
    insecure: bool,
    output: str,
    **keyless: Any,
) -> None:
    """Where each revision of an artifact runs: revision x cluster, healthy since / failing /
    not yet, from the runners' health attestations in the registry (no cluster access).

    URL is a repository (oci://REGISTRY/REPO: its tags, or --semver, or --last), or one tag
    or digest of it. Each attestation is checked against --key (repeatable) or the keyless
    identity, as lockgate verify takes them; one that none of them verifies is shown as
    unverified, never as healthy."""
    from action.fleet import commands
    from lockgate.model import parse_duration

    request = commands.FleetRequest(
        url=url,
        keys=key_paths,
        bind_keys=bind_keys,
        keyless=keyless_verify_options(None, keyless),
        semver=semver,
        last=last,
    )
    for warning in commands.warnings(request):
        terminal.echo(f"warning: {warning}", err=True)
    if not watch:
        shown = commands.read(request, creds=creds, insecure=insecure)
        click.echo(
            json.dumps(shown.to_json(), indent=2) if output == "json" else terminal.lines(shown.table())
        )
        return
    every = parse_duration(interval)
    redraw = output != "json" and sys.stdout.isatty()

    def show(shown: Fleet) -> None:
        if output == "json":
            click.echo(json.dumps(shown.to_json(), separators=(",", ":")))
        elif redraw:
            # our own redraw sequence, then the table with everything else escaped
            click.echo(
                REDRAW
                + terminal.lines(f"Every {interval}: lockgate fleet {url}  ({shown.time})\n\n{shown.table()}")
            )
        else:
            terminal.echo(f"{shown.time}\n{shown.table()}\n")

    def failed(error: LockgateError) -> None:
        terminal.echo(f"error: {error.message}", err=True)
        if output == "json":
            click.echo(json.dumps(output_mod.error_json(error.message, int(error.exit_code))))

    commands.watch(request, interval=every, creds=creds, insecure=insecure, show=show, failed=failed)
