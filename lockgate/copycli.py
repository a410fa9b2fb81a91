"""``lockgate copy``: the click command over ``lockgate.registry.copy`` (used by CI and by
whoever feeds an air-gapped site, so it lives in the shared core, not in either half).

Each side has its own credentials and TLS flags, as ``oras copy`` spells them: ``--from-creds``,
``--from-ca-file``, ``--from-cert-file``, ``--from-key-file`` for SRC, ``--to-...`` for DST."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from lockgate import output, terminal, tlsflags

if TYPE_CHECKING:
    from lockgate import registry


@click.command("copy")
@click.argument("source", metavar="SRC")
@click.argument("destination", metavar="DST")
@click.option(
    "--tags",
    "tags",
    multiple=True,
    metavar="TAG[,TAG...]",
    help="Copy these tags of SRC (a repository), each under its own name. Repeatable.",
)
@click.option("--semver", metavar="RANGE", help="Copy every tag of SRC in this semver range (Flux rules).")
@click.option("--from-creds", metavar="USER:PASSWORD", help="Credentials for SRC (else Docker config).")
@click.option("--to-creds", metavar="USER:PASSWORD", help="Credentials for DST (else Docker config).")
@click.option("--insecure", is_flag=True, help="Plain http to both registries (automatic for loopback).")
@tlsflags.tls_options("from-", what="SRC's registry")
@tlsflags.tls_options("to-", what="DST's registry")
@click.option("--quiet", "-q", is_flag=True, help="No progress line.")
@output.output_option
def copy(
    source: str,
    destination: str,
    tags: tuple[str, ...],
    semver: str | None,
    from_creds: str | None,
    to_creds: str | None,
    insecure: bool,
    quiet: bool,
    output: str,
) -> None:
    """Copy an artifact by digest with its signatures, referrers and attestations from SRC to DST.

    SRC and DST are oci://REGISTRY/REPO[:TAG|@DIGEST] or oci-layout://DIR[:TAG|@DIGEST]
    (an OCI image layout directory, created when absent). Content already at DST is skipped,
    so an interrupted copy is completed by running it again."""
    from lockgate import progress, registry
    from lockgate.registry import copy as copying

    src_ref, dst_ref = registry.parse(source), registry.parse(destination)
    options = copying.CopyOptions(
        tags=tuple(t for item in tags for t in item.split(",") if t), semver=semver
    )
    with progress.shown(quiet=quiet):
        result = copying.copy(
            registry.RegistryClient.for_reference(
                src_ref,
                credentials=_creds(from_creds),
                insecure=insecure,
                options=tlsflags.transport_options(insecure, prefix="from-"),
            ),
            src_ref,
            copying.destination_client(
                dst_ref,
                credentials=_creds(to_creds),
                insecure=insecure,
                options=tlsflags.transport_options(insecure, prefix="to-"),
            ),
            dst_ref,
            options,
        )
    if output == "json":
        click.echo(json.dumps(result.to_json(), indent=2))
        return
    for artifact in result.artifacts:
        shown = f"{artifact.tag} " if artifact.tag else ""
        terminal.echo(
            f"copied {shown}{artifact.digest} with {len(artifact.cosign_tags)} cosign tag(s) and "
            f"{len(artifact.referrers)} referrer(s) to {dst_ref.pinned(artifact.digest)}"
        )
    terminal.echo(
        f"blobs: {result.copied('blob')} copied ({result.bytes_copied} bytes), "
        f"{result.skipped('blob')} present; "
        f"manifests: {result.copied('manifest')} copied, {result.skipped('manifest')} present"
    )


def _creds(flag: str | None) -> registry.Credentials | None:
    from lockgate import registry

    return registry.Credentials.from_flag(flag) if flag else None
