"""Click commands ``keygen``, ``sign`` and ``verify``: flags in, one library call, a value out."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from action.signing import password
from lockgate import goregex, registry
from lockgate.errors import UsageError
from lockgate.signing import keys
from lockgate.signing import sign as signing
from lockgate.signing import verify as verifying
from lockgate.signing.policy import KeylessPolicy, KeyPolicy, Match, Policy

_output = click.option("--output", "-o", "output", type=click.Choice(["text", "json"]), default="text")
_creds = click.option("--creds", metavar="USER:PASSWORD", help="Registry credentials (else Docker config).")
_insecure = click.option(
    "--insecure", is_flag=True, help="Plain http (automatic for localhost and 127.0.0.1)."
)


def _client(ref: registry.Reference, creds: str | None, insecure: bool) -> registry.RegistryClient:
    explicit = registry.Credentials.from_flag(creds) if creds else None
    return registry.RegistryClient.for_reference(ref, credentials=explicit, insecure=insecure)


def _emit(output: str, value: dict[str, Any], text: list[str]) -> None:
    click.echo(json.dumps(value, indent=2) if output == "json" else "\n".join(text))


@click.command("keygen")
@click.option(
    "--output-key-prefix", default="cosign", show_default=True, help="Write PREFIX.key and PREFIX.pub."
)
@click.option("--force", is_flag=True, help="Overwrite existing key files.")
def keygen(output_key_prefix: str, force: bool) -> None:
    """Create a cosign-compatible key pair (ECDSA P-256, encrypted private key)."""
    private, public = Path(f"{output_key_prefix}.key"), Path(f"{output_key_prefix}.pub")
    for path in (private, public):
        if path.exists() and not force:
            raise UsageError(f"{path} already exists; pass --force to overwrite it")
    pair = keys.generate_key_pair(password.key_password(confirm=True))
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pair.private_pem)
    public.write_bytes(pair.public_pem)
    click.echo(f"Private key written to {private}\nPublic key written to {public}", err=True)


@click.command("sign")
@click.argument("reference")
@click.option("--key", "key_path", type=click.Path(path_type=Path), help="cosign private key file.")
@click.option("--keyless", is_flag=True, help="Sign with Sigstore using the CI's OIDC identity.")
@click.option("--identity-token", envvar="SIGSTORE_ID_TOKEN", help="OIDC token for --keyless (else ambient).")
@click.option("--staging", is_flag=True, help="Use Sigstore's staging instance (testing only).")
@click.option(
    "--trust-config",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="Sigstore client trust config (trusted root + signing config) of a private Sigstore (--keyless).",
)
@click.option(
    "--annotation",
    "-a",
    "annotations",
    multiple=True,
    metavar="KEY=VALUE",
    help="Annotation in the signed payload (--key only).",
)
@_creds
@_insecure
@_output
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
    if (key_path is None) == (not keyless):
        raise UsageError("pass exactly one of --key FILE or --keyless")
    if key_path is not None and (staging or trust_config is not None):
        raise UsageError("--staging and --trust-config apply to --keyless signatures only")
    ref = signing.by_digest(reference)
    client = _client(ref, creds, insecure)
    if key_path is not None:
        key = password.load_private_key(key_path)
        notes = dict(_pair(item) for item in annotations)
        result = signing.sign_with_key(ref, key, client=client, annotations=notes)
    else:
        if annotations:
            raise UsageError("--annotation applies to --key signatures only")
        result = signing.sign_keyless(
            ref, token=identity_token, client=client, staging=staging, trust_config=trust_config
        )
    _emit(
        output,
        result.to_json(),
        [f"Signed {result.reference}", f"  signer:    {result.signer}", f"  stored at: {result.stored_at}"],
    )


@click.command("verify")
@click.argument("reference")
@click.option("--key", "key_path", type=click.Path(path_type=Path), help="cosign public key file.")
@click.option("--certificate-identity", help="Expected certificate identity (SAN), exactly.")
@click.option("--certificate-identity-regexp", help="Expected certificate identity, a regexp over all of it.")
@click.option("--certificate-oidc-issuer", help="Expected OIDC issuer, exactly.")
@click.option("--certificate-oidc-issuer-regexp", help="Expected OIDC issuer, a regexp over all of it.")
@click.option("--github-repository", help="Expected GitHub workflow repository (owner/name).")
@click.option("--github-ref", help="Expected GitHub workflow ref (refs/heads/main, refs/tags/v1).")
@click.option(
    "--trusted-root",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="Sigstore trusted_root.json (default: the production Sigstore instance).",
)
@click.option("--offline", is_flag=True, help="Do not refresh the production trust root over the network.")
@_creds
@_insecure
@_output
def verify(
    reference: str,
    key_path: Path | None,
    certificate_identity: str | None,
    certificate_identity_regexp: str | None,
    certificate_oidc_issuer: str | None,
    certificate_oidc_issuer_regexp: str | None,
    github_repository: str | None,
    github_ref: str | None,
    trusted_root: Path | None,
    offline: bool,
    creds: str | None,
    insecure: bool,
    output: str,
) -> None:
    """Verify an artifact's signature; prints the verified digest and who signed it."""
    policy: Policy
    keyless_flags = (
        certificate_identity,
        certificate_identity_regexp,
        certificate_oidc_issuer,
        certificate_oidc_issuer_regexp,
        github_repository,
        github_ref,
    )
    if key_path is not None:
        if any(keyless_flags):
            raise UsageError("--key cannot be combined with the --certificate-*/--github-* flags")
        policy = KeyPolicy.from_file(key_path)
    else:
        policy = KeylessPolicy(
            identity=_match("--certificate-identity", certificate_identity, certificate_identity_regexp),
            issuer=_match(
                "--certificate-oidc-issuer", certificate_oidc_issuer, certificate_oidc_issuer_regexp
            ),
            github_repository=github_repository,
            github_ref=github_ref,
            trusted_root=trusted_root,
            offline=offline,
        )
    ref = registry.parse(reference)
    result = verifying.verify(ref, policy, client=_client(ref, creds, insecure))
    signer = result.signer + (f" (issuer {result.issuer})" if result.issuer else "")
    _emit(
        output,
        result.to_json(),
        [f"Verified {result.reference}", f"  signed by: {signer}", f"  signature: {result.signature}"],
    )


def _match(flag: str, exact: str | None, regexp: str | None) -> Match:
    if (exact is None) == (regexp is None):
        raise UsageError(f"pass --key, or exactly one of {flag} and {flag}-regexp")
    if exact is not None:
        return Match(exact, regexp=False)
    try:
        return Match(str(regexp), regexp=True)
    except goregex.RegexpError as exc:
        raise exc.within(f"{flag}-regexp") from None


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"annotation {text!r} must be KEY=VALUE")
    return key, value
