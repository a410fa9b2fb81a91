"""``lockgate import``: a lockgate config from a running Flux (its files or its cluster), and a
report of everything that could not be carried.

Thin: flags become an ``ImportRequest``, ``runner.pipeline.fluximport.run`` reads and
converts, and the files and the report are written here. The config goes to ``-O FILE``
(default stdout, the report then on stderr); ``-o json`` prints the report as JSON on
stdout, so it needs ``-O``. Exit 0: the report is empty; 10: it is not (the config was
written); 2 with ``--strict`` (nothing written); 4: an unsigned source without
``--allow-unsigned`` (nothing written).
"""

from __future__ import annotations

from pathlib import Path

import click

from lockgate.errors import ExitCode, UsageError
from lockgate.output import output_option
from lockgate.paths import require_writable_file
from runner.pipeline import fluximport
from runner.plan.fluximport import convert


def _renames(values: tuple[str, ...]) -> dict[tuple[str, str], str]:
    renames: dict[tuple[str, str], str] = {}
    for value in values:
        source, sep, target = value.partition("=")
        namespace, slash, name = source.partition("/")
        if not (sep and slash and namespace and name and target):
            raise UsageError(
                f"--rename {value!r}: expected NAMESPACE/NAME=SYNC (a Kustomization and its sync name)"
            )
        renames[(namespace, name)] = target
    return renames


@click.command("import")
@click.option(
    "--from-files",
    "files",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Read the Flux objects of these directories or files (a fleet repository); repeatable.",
)
@click.option(
    "--from-cluster", is_flag=True, help="Read the Flux objects of the cluster (needs get and list)."
)
@click.option("--namespace", "-n", help="Only the Flux objects of this namespace (default: all).")
@click.option(
    "--out", "-O", "out", type=click.Path(path_type=Path), help="Write the config here (default stdout)."
)
@click.option(
    "--images-out",
    type=click.Path(path_type=Path),
    help="Write the lockgate images config (the image automation objects) here.",
)
@click.option(
    "--runner-namespace",
    default="lockgate-system",
    show_default=True,
    help="The runner namespace of the config: its inventories, and where it reads the Secrets syncs name.",
)
@click.option(
    "--allow-unsigned",
    is_flag=True,
    help="Carry OCIRepositories without verify as verify.insecureSkip (each a security row), not stop.",
)
@click.option(
    "--rename", multiple=True, metavar="NAMESPACE/NAME=SYNC", help="The sync name of a Kustomization."
)
@click.option(
    "--artifact-prefix",
    default="oci://REGISTRY/fleet",
    show_default=True,
    help="Where the replacements of Git sources and HelmReleases push their artifacts.",
)
@click.option(
    "--strict", is_flag=True, help="Any row in the report fails the import (exit 2), writing nothing."
)
@click.option("--kubeconfig", type=click.Path(path_type=Path), help="Kubeconfig (default $KUBECONFIG).")
@click.option("--context", help="The kubeconfig context to use (default: the current context).")
@output_option
def import_(
    files: tuple[Path, ...],
    from_cluster: bool,
    namespace: str | None,
    out: Path | None,
    images_out: Path | None,
    runner_namespace: str,
    allow_unsigned: bool,
    rename: tuple[str, ...],
    artifact_prefix: str,
    strict: bool,
    kubeconfig: Path | None,
    context: str | None,
    output: str,
) -> None:
    """Write a lockgate config from Flux's objects, and report what it cannot carry."""
    if bool(files) == from_cluster:
        raise UsageError("give --from-files DIR (repeatable) or --from-cluster, one of the two")
    if output == "json" and out is None:
        raise UsageError("-o json prints the report on stdout: write the config with -O FILE")
    for path, flag in ((out, "-O"), (images_out, "--images-out")):
        if path is not None:
            require_writable_file(path, flag)
    options = convert.ImportOptions(
        runner_namespace=runner_namespace,
        allow_unsigned=allow_unsigned,
        renames=_renames(rename),
        artifact_prefix=artifact_prefix.rstrip("/"),
    )
    request = fluximport.ImportRequest(
        files=files, namespace=namespace, options=options, kubeconfig=kubeconfig, context=context
    )
    result = fluximport.run(request)
    report = result.report.json_text() if output == "json" else result.report.table()
    if strict and not result.report.empty:
        click.echo(report, nl=False, err=out is None)
        raise UsageError(f"--strict: the report has {len(result.report.rows)} row(s); nothing was written")
    if out is None:
        click.echo(result.config, nl=False)
    else:
        fluximport.write_whole(out, result.config)
    if images_out is not None and result.images:
        fluximport.write_whole(images_out, result.images)
    elif result.images:
        report += (
            "the image automation objects are not written: give --images-out FILE\n"
            if output != "json"
            else ""
        )
    click.echo(report, nl=False, err=out is None)
    if not result.report.empty:
        # the one error line of every exit past 1: the config is written, its report is not empty
        rows = len(result.report.rows)
        click.echo(
            f"error: {rows} field(s) could not be carried as Flux has them: review the report "
            "(written; --strict refuses instead)",
            err=True,
        )
        raise click.exceptions.Exit(int(ExitCode.PARTIAL))
