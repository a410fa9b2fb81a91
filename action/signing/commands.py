"""The signing commands as library calls: ``keygen``, ``sign``, ``attest`` and ``verify`` for the CLI.

Each takes the options a user gave, checks their combination, and makes the one call into
the shared ``lockgate.signing`` (keys, sign, verify); the click commands in ``cli`` only
parse and print. Passwords come from ``password`` (environment, then a terminal prompt).
Each verb imports its own part of ``lockgate.signing``: ``verify`` never loads the signer.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from action import cliopts
from action.signing import password
from lockgate import boundedjson, parselimits, paths
from lockgate.errors import ExitCode, LockgateError, UsageError
from lockgate.signing.options import VERIFY_FLAGS, VerifyOptions, build_policy, policy_warnings

#: a predicate (an SBOM, say) may be large, but not larger than a file lockgate loads at all
_MAX_PREDICATE = parselimits.DEFAULT.max_bytes

if TYPE_CHECKING:
    from lockgate import registry
    from lockgate.signing.attest import Attestation
    from lockgate.signing.sign import SignedArtifact
    from lockgate.signing.verify import VerifiedArtifact


def keygen(prefix: str, *, force: bool = False) -> tuple[Path, Path]:
    """Write ``PREFIX.key`` (encrypted, mode 0600) and ``PREFIX.pub``; returns both paths.

    Nothing is written when either exists (unless ``force``) or the password cannot be read.
    """
    private, public = Path(f"{prefix}.key"), Path(f"{prefix}.pub")
    for path in (private, public):
        if path.exists() and not force:
            raise UsageError(f"{path} already exists; pass --force to overwrite it")
        paths.require_writable_file(path, "--output-key-prefix")
    from lockgate.signing import keys

    pair = keys.generate_key_pair(password.key_password(confirm=True))
    # created 0600 from the start: the key is never readable by others, not even for a moment
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pair.private_pem)
    public.write_bytes(pair.public_pem)
    return private, public


@dataclass(frozen=True)
class SignRequest:
    """``lockgate sign`` options: exactly one of a key file or keyless."""

    key_path: Path | None = None
    keyless: bool = False
    identity_token: str | None = None
    staging: bool = False
    trust_config: Path | None = None
    annotations: tuple[str, ...] = ()


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"annotation {text!r} must be KEY=VALUE")
    return key, value


def _annotations(items: Iterable[str]) -> dict[str, str]:
    return dict(_pair(item) for item in items)


def _refuse_tag(ref: registry.Reference, client: registry.RegistryClient) -> None:
    """Refuse a tag, naming the digest it points at now so the user can sign exactly that."""
    from lockgate.signing import sign as signing

    try:
        digest = client.resolve(ref)
    except LockgateError:
        digest = None
    hint = f"; {ref} is {digest} now: lockgate sign oci://{ref.name}@{digest}" if digest else ""
    signing.by_digest(ref, hint=hint)


def sign(reference: str, request: SignRequest, *, creds: str | None, insecure: bool) -> SignedArtifact:
    """Sign the artifact ``reference`` (by digest) as ``request`` says."""
    from lockgate import registry
    from lockgate.signing import sign as signing

    if (request.key_path is None) == (not request.keyless):
        raise UsageError("pass exactly one of --key FILE or --keyless")
    if request.key_path is not None and (request.staging or request.trust_config is not None):
        raise UsageError("--staging and --trust-config apply to --keyless signatures only")
    if request.keyless and request.annotations:
        raise UsageError("--annotation applies to --key signatures only")
    ref = registry.parse(reference)
    client = cliopts.client_for(ref, creds, insecure)
    if ref.digest is None:
        _refuse_tag(ref, client)
    if request.key_path is not None:
        notes = _annotations(request.annotations)
        key = password.load_private_key(request.key_path)
        return signing.sign_with_key(ref, key, client=client, annotations=notes)
    return signing.sign_keyless(
        ref,
        token=request.identity_token,
        client=client,
        staging=request.staging,
        trust_config=request.trust_config,
    )


def verify(
    reference: str,
    options: VerifyOptions,
    *,
    creds: str | None,
    insecure: bool,
    signed_repository: str | None = None,
) -> VerifiedArtifact:
    """Verify ``reference`` against the policy ``options`` describe (one is required);
    ``signed_repository``: the repository key signatures name, for a mirror."""
    from lockgate import registry
    from lockgate.signing import verify as verifying

    policy = build_policy(options, VERIFY_FLAGS, required=True)
    assert policy is not None  # required=True raises instead
    ref = registry.parse(reference)
    signed = signed_repository and registry.repository_name(signed_repository, "--signed-repository")
    return verifying.verify(
        ref, policy, client=cliopts.client_for(ref, creds, insecure), signed_repository=signed
    )


def verify_warnings(options: VerifyOptions) -> tuple[str, ...]:
    """What to tell the user about the policy ``options`` describe (an unpinned GitHub
    workflow identity); raises the ``UsageError`` ``verify`` would for a refused one."""
    return policy_warnings(build_policy(options, VERIFY_FLAGS), VERIFY_FLAGS)


def read_predicate(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` (``-``: standard input), or a usage error naming it."""
    where = "standard input" if str(path) == "-" else str(path)
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text()
    except OSError as exc:
        reason = (exc.strerror or type(exc).__name__).lower()
        raise UsageError(f"cannot read --predicate {where}: {reason}") from None
    try:
        value = boundedjson.json_value(
            text, f"--predicate {where}", max_bytes=_MAX_PREDICATE, exit_code=ExitCode.USAGE
        )
    except ValueError as exc:
        raise UsageError(f"--predicate {where} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"--predicate {where} must hold a JSON object, not {type(value).__name__}")
    return value


def attest(
    reference: str,
    request: SignRequest,
    *,
    predicate_type: str,
    predicate: dict[str, Any],
    creds: str | None,
    insecure: bool,
) -> SignedArtifact:
    """Attest ``predicate`` about the artifact ``reference`` (by digest), signed with the key
    file or keyless, as ``request`` says (annotations do not apply)."""
    from lockgate import registry
    from lockgate.signing import attest as attesting

    if (request.key_path is None) == (not request.keyless):
        raise UsageError("pass exactly one of --key FILE or --keyless")
    if request.key_path is not None and (request.staging or request.trust_config is not None):
        raise UsageError("--staging and --trust-config apply to --keyless attestations only")
    ref = registry.parse(reference)
    client = cliopts.client_for(ref, creds, insecure)
    if ref.digest is None:
        _refuse_tag(ref, client)
    if request.key_path is None:
        return attesting.attest_keyless(
            ref,
            predicate_type=predicate_type,
            predicate=predicate,
            token=request.identity_token,
            trust_config=request.trust_config,
            staging=request.staging,
            client=client,
        )
    key = password.load_private_key(request.key_path)
    return attesting.attest_with_key(
        ref, key, predicate_type=predicate_type, predicate=predicate, client=client
    )


def verify_attestation(
    reference: str, options: VerifyOptions, predicate_type: str, *, creds: str | None, insecure: bool
) -> list[Attestation]:
    """The attestations of ``predicate_type`` for ``reference`` signed as ``options`` say
    (``--key``, or keyless identity and issuer)."""
    from lockgate import registry
    from lockgate.signing import attest as attesting

    policy = build_policy(options, VERIFY_FLAGS, required=True)
    assert policy is not None  # required=True raises instead
    ref = registry.parse(reference)
    return attesting.verify_attestation(
        ref, policy, predicate_type, client=cliopts.client_for(ref, creds, insecure)
    )
