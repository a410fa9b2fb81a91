"""Click commands ``keygen``, ``sign``, ``attest`` and ``verify``: flags in, one library call,
a value out.

``commands`` (and through it the crypto stack) is imported inside each command, so loading
this module for ``--help`` or for another command costs nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from action import cliopts
from lockgate import terminal
from lockgate.signing import buildclaims
from lockgate.signing.options import VerifyOptions

F = TypeVar("F", bound=Callable[..., Any])


def _emit(output: str, value: dict[str, Any], text: list[str]) -> None:
    click.echo(json.dumps(value, indent=2) if output == "json" else terminal.lines("\n".join(text)))


def _signer_options(func: F) -> F:
    """How ``sign`` and ``attest`` sign: ``--key FILE``, or ``--keyless`` with its token and trust."""
    for option in reversed(
        (
            click.option(
                "--key", "key_path", type=click.Path(path_type=Path), help="cosign private key file."
            ),
            click.option("--keyless", is_flag=True, help="Sign with Sigstore using the CI's OIDC identity."),
            click.option(
                "--identity-token",
                envvar="SIGSTORE_ID_TOKEN",
                help="OIDC token for --keyless (else ambient).",
            ),
            click.option("--staging", is_flag=True, help="Use Sigstore's staging instance (testing only)."),
            click.option(
                "--trust-config",
                type=click.Path(path_type=Path, exists=True, dir_okay=False),
                help="Sigstore client trust config (trusted root + signing config) of a private Sigstore "
                "(--keyless).",
            ),
        )
    ):
        func = option(func)
    return func


@click.command("keygen")
@click.option(
    "--output-key-prefix", default="cosign", show_default=True, help="Write PREFIX.key and PREFIX.pub."
)
@click.option("--force", is_flag=True, help="Overwrite existing key files.")
@cliopts.output_option
def keygen(output_key_prefix: str, force: bool, output: str) -> None:
    """Create a cosign-compatible key pair (ECDSA P-256, encrypted private key)."""
    from action.signing import commands

    private, public = commands.keygen(output_key_prefix, force=force)
    if output == "json":
        click.echo(json.dumps({"privateKey": str(private), "publicKey": str(public)}, indent=2))
        return
    terminal.echo(f"Private key written to {private}\nPublic key written to {public}", err=True)


@click.command("sign")
@click.argument("reference")
@_signer_options
@click.option(
    "--annotation",
    "-a",
    "annotations",
    multiple=True,
    metavar="KEY=VALUE",
    help="Annotation in the signed payload (--key only).",
)
@cliopts.registry_options
@cliopts.output_option
def sign(
    reference: str,
    key_path: Path | None,
    keyless: bool,
    identity_token: str | None,
    staging: bool,
    trust_config: Path | None,
    annotations: tuple[str, ...],
    creds: str | None,
    insecure: bool,
    output: str,
) -> None:
    """Sign an artifact by digest: oci://REGISTRY/REPO@sha256:..."""
    from action.signing import commands

    request = commands.SignRequest(
        key_path=key_path,
        keyless=keyless,
        identity_token=identity_token,
        staging=staging,
        trust_config=trust_config,
        annotations=annotations,
    )
    result = commands.sign(reference, request, creds=creds, insecure=insecure)
    _emit(
        output,
        result.to_json(),
        [
            f"{'Already signed' if result.already_signed else 'Signed'} {result.reference}"
            + (f" by {result.signer}: nothing added" if result.already_signed else ""),
            f"  signer:    {result.signer}",
            f"  stored at: {result.stored_at}",
        ],
    )


@click.command("attest")
@click.argument("reference")
@_signer_options
@click.option(
    "--predicate-type",
    required=True,
    metavar="URI",
    help="The attestation's type, a URI (e.g. https://example.com/attestations/qa-approved/v1).",
)
@click.option(
    "--predicate",
    "predicate_path",
    type=click.Path(path_type=Path, allow_dash=True),
    required=True,
    help="A file holding the predicate, a JSON object ('-': standard input).",
)
@cliopts.registry_options
@cliopts.output_option
def attest(
    reference: str,
    key_path: Path | None,
    keyless: bool,
    identity_token: str | None,
    staging: bool,
    trust_config: Path | None,
    predicate_type: str,
    predicate_path: Path,
    creds: str | None,
    insecure: bool,
    output: str,
) -> None:
    """Attest a predicate about an artifact by digest (e.g. a manual approval), signed with a
    key or keyless."""
    from action.signing import commands

    request = commands.SignRequest(
        key_path=key_path,
        keyless=keyless,
        identity_token=identity_token,
        staging=staging,
        trust_config=trust_config,
    )
    result = commands.attest(
        reference,
        request,
        predicate_type=predicate_type,
        predicate=commands.read_predicate(predicate_path),
        creds=creds,
        insecure=insecure,
    )
    _emit(
        output,
        result.to_json() | {"predicateType": predicate_type},
        [
            f"{'Already attested' if result.already_signed else 'Attested'} {predicate_type} "
            f"of {result.reference}" + (": nothing added" if result.already_signed else ""),
            f"  signer:    {result.signer}",
            f"  stored at: {result.stored_at}",
        ],
    )


def keyless_policy_options(func: F) -> F:
    """The keyless identity flags (cosign's names), the GitHub pins and the trust root, for
    ``verify`` and ``fleet``; ``keyless_verify_options`` reads them back."""
    for option in reversed(
        (
            click.option("--certificate-identity", help="Expected certificate identity (SAN), exactly."),
            click.option(
                "--certificate-identity-regexp",
                help="Expected certificate identity, a regexp over all of it.",
            ),
            click.option("--certificate-oidc-issuer", help="Expected OIDC issuer, exactly."),
            click.option(
                "--certificate-oidc-issuer-regexp", help="Expected OIDC issuer, a regexp over all of it."
            ),
            click.option(
                "--certificate-github-workflow-repository",
                "--github-repository",
                "github_repository",
                help="Expected GitHub repository that ran the workflow (owner/name): the caller of a "
                "reusable one.",
            ),
            click.option(
                "--certificate-github-workflow-ref",
                "--github-ref",
                "github_ref",
                help="Expected ref the workflow ran for (refs/heads/main, refs/tags/v1).",
            ),
            click.option(
                "--certificate-github-workflow-trigger",
                "github_workflow_trigger",
                help="Expected event that triggered the workflow (push, workflow_dispatch).",
            ),
            click.option(
                "--certificate-github-workflow-sha",
                "github_workflow_sha",
                help="Expected commit the workflow ran for.",
            ),
            click.option(
                "--certificate-github-workflow-name",
                "github_workflow_name",
                help="Expected workflow name (its name:).",
            ),
            *(
                click.option(
                    f"--certificate-{claim.flag}", claim.attribute, help=buildclaims.describe(claim.attribute)
                )
                for claim in buildclaims.CLAIMS
            ),
            click.option(
                "--trusted-root",
                type=click.Path(path_type=Path, exists=True, dir_okay=False),
                help="Sigstore trusted_root.json (default: the production Sigstore instance).",
            ),
            click.option(
                "--offline", is_flag=True, help="Do not refresh the production trust root over the network."
            ),
        )
    ):
        func = option(func)
    return func


def keyless_verify_options(key_path: Path | None, flags: dict[str, Any]) -> VerifyOptions:
    """``VerifyOptions`` from ``--key`` and the flags ``keyless_policy_options`` added."""
    from lockgate.signing.buildclaims import BuildClaims
    from lockgate.signing.github import GitHubClaims

    return VerifyOptions(
        key=key_path,
        identity=flags["certificate_identity"],
        identity_regexp=flags["certificate_identity_regexp"],
        issuer=flags["certificate_oidc_issuer"],
        issuer_regexp=flags["certificate_oidc_issuer_regexp"],
        github=GitHubClaims(
            repository=flags["github_repository"],
            ref=flags["github_ref"],
            workflow_trigger=flags["github_workflow_trigger"],
            workflow_sha=flags["github_workflow_sha"],
            workflow_name=flags["github_workflow_name"],
        ),
        build=BuildClaims(**{claim.attribute: flags[claim.attribute] for claim in buildclaims.CLAIMS}),
        trusted_root=flags["trusted_root"],
        offline=flags["offline"],
    )


@click.command("verify")
@click.argument("reference")
@click.option("--key", "key_path", type=click.Path(path_type=Path), help="cosign public key file.")
@keyless_policy_options
@click.option(
    "--attestation",
    "predicate_type",
    metavar="TYPE",
    help="Check the attestations of this predicate type (a URI), signed with --key or by the keyless "
    "identity, instead of the signature (as cosign verify-attestation --type).",
)
@click.option(
    "--signed-repository",
    metavar="REGISTRY/REPO",
    help="Key signatures name this repository (REFERENCE is a mirror or oci-layout:// copy of it).",
)
@cliopts.registry_options
@cliopts.output_option
def verify(
    reference: str,
    key_path: Path | None,
    predicate_type: str | None,
    creds: str | None,
    insecure: bool,
    output: str,
    signed_repository: str | None,
    **keyless: Any,
) -> None:
    """Verify an artifact's signature (or, with --attestation, its attestations); prints the
    verified digest and who signed it."""
    from action.signing import commands

    options = keyless_verify_options(key_path, keyless)
    for warning in commands.verify_warnings(options):
        terminal.echo(f"warning: {warning}", err=True)
    if predicate_type is not None:
        found = commands.verify_attestation(
            reference, options, predicate_type, creds=creds, insecure=insecure
        )
        text = [f"Verified {len(found)} attestation(s) of type {predicate_type} of {reference}"]
        for item in found:
            text += [
                f"  signed by: {item.signer}",
                f"  stored at: {item.manifest_digest}",
                f"  predicate: {json.dumps(item.predicate, sort_keys=True)}",
            ]
        _emit(output, {"reference": reference, "attestations": [a.to_json() for a in found]}, text)
        return
    result = commands.verify(
        reference, options, creds=creds, insecure=insecure, signed_repository=signed_repository
    )
    signer = result.signer + (f" (issuer {result.issuer})" if result.issuer else "")
    _emit(
        output,
        result.to_json(),
        [f"Verified {result.reference}", f"  signed by: {signer}", f"  signature: {result.signature}"],
    )
