"""``lockgate preview PATH --cluster CONFIG...``: what each cluster's next pass does with PATH.

Thin: flags become a ``pipeline.preview.run.Request``, one ``run`` call makes the preview, and
it is printed as a table, Markdown or JSON (``runner.plan.preview.report``). With ``--comment``
the Markdown also goes to the pull request the CI job runs for, as one comment kept current
(``lockgate.forge.comments``). Exit 0 when no sync changes, 1 when one does, else the first
failed target's code (README's table): the output is printed first in every case.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from lockgate import output, registry, terminal, tlsflags
from lockgate.artifact import pack
from lockgate.errors import ExitCode, UsageError
from lockgate.signing import github
from lockgate.signing.github import GitHubClaims
from lockgate.signing.options import VERIFY_FLAGS, VerifyOptions, build_policy
from runner.pipeline.preview import run as preview_run
from runner.plan.preview import report


def _attester_key(value: str) -> tuple[str, Path]:
    name, sep, file = value.partition("=")
    if not sep or not name or not file:
        raise UsageError(f"--attester-key {value}: expected CLUSTER=FILE (the cluster's runner public key)")
    return name, Path(file)


def _client_for(creds: str | None, insecure: bool) -> preview_run.ClientFor:
    explicit = registry.Credentials.from_flag(creds) if creds else None
    options = tlsflags.transport_options(insecure)

    def client_for(ref: registry.Reference) -> registry.RegistryClient:
        return registry.RegistryClient.for_reference(
            ref, credentials=explicit, insecure=insecure, options=options
        )

    return client_for


@click.command("preview")
@click.argument("path", type=click.Path(path_type=Path, exists=True))
@click.option(
    "--cluster",
    "clusters",
    multiple=True,
    metavar="[NAME=]CONFIG",
    help="A cluster's runner configuration (its Runner and Sync documents); repeat per cluster.",
)
@click.option(
    "--url", metavar="oci://REGISTRY/REPO", help="The repository PATH is published to (else: by source)."
)
@click.option(
    "--attester-key",
    "attester_keys",
    multiple=True,
    metavar="CLUSTER=FILE",
    help="Public key of CLUSTER's runner attestations; without one, the cluster's tag is compared.",
)
@click.option("--certificate-identity", help="Keyless attesters: certificate identity, exactly.")
@click.option("--certificate-identity-regexp", help="Keyless attesters: identity, a full-match regexp.")
@click.option("--certificate-oidc-issuer", help="Keyless attesters: OIDC issuer, exactly.")
@click.option("--certificate-oidc-issuer-regexp", help="Keyless attesters: OIDC issuer, a full-match regexp.")
@click.option("--certificate-github-workflow-repository", help=github.describe("repository"))
@click.option(
    "--trusted-root", type=click.Path(path_type=Path), help="Keyless attesters: a Sigstore trusted_root.json."
)
@click.option(
    "--base", metavar="REV", help="Also read each CONFIG at this Git revision: tell who-may-sign changes."
)
@click.option("--ignore-paths", multiple=True, help="Paths left out of PATH, as push takes them.")
@click.option(
    "--comment", is_flag=True, help="Post the Markdown as one comment on the CI job's pull request."
)
@click.option("--comment-key", help="Names the comment (default: the workflow or job name).")
@click.option("--creds", metavar="USER:PASSWORD", help="Registry credentials (else Docker config).")
@click.option("--insecure", is_flag=True, help="Plain http (localhost and 127.0.0.1: https, then http).")
@tlsflags.tls_options()
@output.output_option_with(
    "markdown", help="A table, the Markdown of the comment, or JSON (docs/preview.md; a failure too)."
)
def preview(
    path: Path,
    clusters: tuple[str, ...],
    url: str | None,
    attester_keys: tuple[str, ...],
    base: str | None,
    ignore_paths: tuple[str, ...],
    comment: bool,
    comment_key: str | None,
    creds: str | None,
    insecure: bool,
    output: str,
    **keyless: Any,
) -> None:
    """Render PATH as each cluster's Sync would and diff it against what that cluster runs:
    the digest its runner last attested healthy (verified), else the Sync's tag, saying which.
    Shows per cluster and sync the objects created, changed and pruned, and the hazards."""
    options = VerifyOptions(
        identity=keyless["certificate_identity"],
        identity_regexp=keyless["certificate_identity_regexp"],
        issuer=keyless["certificate_oidc_issuer"],
        issuer_regexp=keyless["certificate_oidc_issuer_regexp"],
        github=GitHubClaims(repository=keyless["certificate_github_workflow_repository"]),
        trusted_root=keyless["trusted_root"],
    )
    request = preview_run.Request(
        path=path,
        clusters=clusters,
        url=url,
        attester_keys=tuple(_attester_key(v) for v in attester_keys),
        keyless=build_policy(options, VERIFY_FLAGS) if options.keyless else None,
        base=base,
        pack_options=pack.PackOptions(ignore_paths=ignore_paths),
    )
    done = preview_run.run(
        request,
        client_for=_client_for(creds, insecure),
        comment=comment,
        comment_key=comment_key,
        env=os.environ,
    )
    text = report.markdown(done.preview)
    if output == "json":
        document = {**done.preview.to_json(), "markdown": text, "requests": done.requests}
        if done.posted is not None:
            document["comment"] = done.posted.to_json()
        click.echo(json.dumps(document, indent=2))
    else:
        click.echo(text if output == "markdown" else report.table(done.preview))
        if done.posted is not None:
            said = done.posted.url or done.posted.reason
            click.echo(f"comment {done.posted.status}: {said}", err=True)
    failed = done.preview.error
    if failed is not None:
        # the report says it per target; the one error line every failing command prints
        broken = [t for t in done.preview.targets if t.error is not None]
        more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
        terminal.echo(f"error: {broken[0].cluster} / {broken[0].sync}: {failed.message}{more}", err=True)
        raise click.exceptions.Exit(int(failed.exit_code))
    raise click.exceptions.Exit(int(ExitCode.FAILURE) if done.preview.changed else 0)
