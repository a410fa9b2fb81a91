"""Keyless signing end to end against a private Sigstore on loopback (tests/world/sigstore.py).

A real OIDC issuer hands out an ID token; Fulcio checks it against the issuer's keys and
issues a certificate with an embedded SCT from the CT log; the signature goes to Rekor v2
and gets a timestamp from the TSA; lockgate stores the bundle as a referrer of the artifact
in the world's registry. Verification then runs against the stack's trusted root, with
lockgate's own verifier, its CLI and the real cosign CLI.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lockgate.errors import ExitCode, LockgateError, VerificationError
from lockgate.signing import sign, store, verify
from lockgate.signing.policy import KeylessPolicy, Match
from tests.integration.signing_support import client_for, digest_of, push_artifact
from tests.world.binaries import binary
from tests.world.registry import Registry
from tests.world.sigstore import DEFAULT_IDENTITY, REKOR_ORIGIN, OIDCIssuer, SigstoreStack

pytestmark = [
    pytest.mark.world,
    # Fulcio's ephemeral CA names its country "USA"; cryptography warns that it is not 2 letters
    pytest.mark.filterwarnings("ignore:Attribute's length must be:UserWarning"),
]

#: the Rekor v2 entry sigstore-python makes for a DSSE envelope: a hashedrekord over it
REKOR_V2_DSSE = {"kind": "hashedrekord", "version": "0.0.2"}


def policy(
    stack: SigstoreStack, identity: str = DEFAULT_IDENTITY, issuer: str | None = None
) -> KeylessPolicy:
    return KeylessPolicy(
        identity=Match(identity), issuer=Match(issuer or stack.issuer), trusted_root=stack.trusted_root
    )


def stored_bundle(registry: Registry, ref: str) -> dict[str, object]:
    repository = ref.removeprefix("oci://").split("/", 1)[1].split("@")[0]
    found = store.read_bundles(client_for(registry, repository), repository, digest_of(ref))
    assert len(found) == 1 and found[0].bundle is not None
    bundle: dict[str, object] = json.loads(found[0].bundle)
    return bundle


def clean_env() -> dict[str, str]:
    """No ambient CI identity or Sigstore settings reach the child."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SIGSTORE_", "ACTIONS_ID_TOKEN", "LOCKGATE_", "COSIGN_"))
        and k not in {"GITHUB_ACTIONS", "GITLAB_CI", "CIRCLECI", "BUILDKITE"}
    }


def lockgate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lockgate", *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def cosign_verify(
    ref: str, stack: SigstoreStack, cwd: Path, *, identity: str
) -> subprocess.CompletedProcess[str]:
    env = clean_env() | {"TUF_ROOT": str(cwd / "tuf"), "HOME": str(cwd)}
    return subprocess.run(
        [
            str(binary("cosign")),
            "verify",
            "--trusted-root",
            str(stack.trusted_root),
            "--certificate-identity",
            identity,
            "--certificate-oidc-issuer",
            stack.issuer,
            "--allow-http-registry",
            ref.removeprefix("oci://"),
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def test_sign_keyless_then_verify(sigstore_stack: SigstoreStack, registry: Registry, unique: str) -> None:
    ref = push_artifact(registry, unique)
    signed = sign.sign_keyless(ref, token=sigstore_stack.token(), trust_config=sigstore_stack.trust_config)
    assert signed.mode == "keyless"
    assert signed.digest == digest_of(ref)
    assert signed.signer == f"{DEFAULT_IDENTITY} (issuer {sigstore_stack.issuer})"

    # the bundle went through every service of the stack
    bundle = stored_bundle(registry, ref)
    material = bundle["verificationMaterial"]
    assert isinstance(material, dict)
    (entry,) = material["tlogEntries"]
    assert entry["kindVersion"] == REKOR_V2_DSSE
    assert entry["inclusionProof"]["checkpoint"]["envelope"].startswith(f"{REKOR_ORIGIN}\n")
    assert len(material["timestampVerificationData"]["rfc3161Timestamps"]) == 1
    envelope = bundle["dsseEnvelope"]
    assert isinstance(envelope, dict)
    signed_statement = json.loads(base64.b64decode(envelope["payload"]))
    assert signed_statement["predicateType"] == "https://sigstore.dev/cosign/sign/v1"
    assert signed_statement["subject"] == [
        {"name": f"{registry.host}/{unique}", "digest": {"sha256": digest_of(ref).removeprefix("sha256:")}}
    ]

    verified = verify.verify(ref, policy(sigstore_stack))
    assert verified.digest == digest_of(ref)
    assert verified.mode == "keyless"
    assert verified.signer == DEFAULT_IDENTITY
    assert verified.issuer == sigstore_stack.issuer

    by_regexp = KeylessPolicy(
        identity=Match(r"ci@lockgate\.test", regexp=True),
        issuer=Match(r"http://127\.0\.0\.1:[0-9]+", regexp=True),
        trusted_root=sigstore_stack.trusted_root,
    )
    assert verify.verify(ref, by_regexp).digest == digest_of(ref)


def test_wrong_identity_or_issuer_is_refused(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str
) -> None:
    ref = push_artifact(registry, unique)
    sign.sign_keyless(
        ref, token=sigstore_stack.token("release@lockgate.test"), trust_config=sigstore_stack.trust_config
    )
    verify.verify(ref, policy(sigstore_stack, "release@lockgate.test"))

    with pytest.raises(VerificationError) as wrong_identity:
        verify.verify(ref, policy(sigstore_stack, "ci@lockgate.test"))
    assert "identity: expected 'ci@lockgate.test', found 'release@lockgate.test'" in str(wrong_identity.value)

    with pytest.raises(VerificationError) as wrong_issuer:
        verify.verify(ref, policy(sigstore_stack, "release@lockgate.test", "https://accounts.google.com"))
    assert f"issuer: expected 'https://accounts.google.com', found '{sigstore_stack.issuer}'" in str(
        wrong_issuer.value
    )


def test_another_trust_root_refuses_the_signature(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """The same identity and issuer are not enough: the chain must end in the trusted Fulcio."""
    ref = push_artifact(registry, unique)
    sign.sign_keyless(ref, token=sigstore_stack.token(), trust_config=sigstore_stack.trust_config)
    staging_root = Path(__file__).parents[1] / "data" / "sigstore" / "staging-trusted-root.json"
    foreign = KeylessPolicy(
        identity=Match(DEFAULT_IDENTITY), issuer=Match(sigstore_stack.issuer), trusted_root=staging_root
    )
    with pytest.raises(VerificationError):
        verify.verify(ref, foreign)


def test_fulcio_refuses_a_token_it_cannot_check(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """Fulcio verifies the token with the issuer's published keys: a token for the trusted
    issuer's URL signed by another key gets no certificate, and nothing is stored."""
    impostor = OIDCIssuer(tmp_path / "impostor.log")
    try:
        forged = impostor.token(claims={"iss": sigstore_stack.issuer})
    finally:
        impostor.stop()
    ref = push_artifact(registry, unique)
    with pytest.raises(LockgateError) as refused:
        sign.sign_keyless(ref, token=forged, trust_config=sigstore_stack.trust_config)
    assert "Sigstore keyless signing failed: FulcioClientError: 400" in str(refused.value)
    # and for the right reason: Fulcio checked the signature with the issuer's JWKS
    assert "failed to verify id token signature" in (sigstore_stack.directory / "fulcio.log").read_text()
    assert store.read_bundles(client_for(registry, unique), unique, digest_of(ref)) == []


def test_cli_sign_keyless_with_trust_config_and_verify(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ref = push_artifact(registry, unique)
    signed = lockgate(
        "sign",
        ref,
        "--keyless",
        "--trust-config",
        str(sigstore_stack.trust_config),
        "--identity-token",
        sigstore_stack.token(),
        "--insecure",
        "--output",
        "json",
        cwd=tmp_path,
    )
    assert signed.returncode == 0, signed.stderr
    assert json.loads(signed.stdout)["digest"] == digest_of(ref)

    def cli_verify(identity: str) -> subprocess.CompletedProcess[str]:
        return lockgate(
            "verify",
            ref,
            "--certificate-identity",
            identity,
            "--certificate-oidc-issuer",
            sigstore_stack.issuer,
            "--trusted-root",
            str(sigstore_stack.trusted_root),
            "--insecure",
            cwd=tmp_path,
        )

    accepted = cli_verify(DEFAULT_IDENTITY)
    assert accepted.returncode == 0, accepted.stderr
    assert f"signed by: {DEFAULT_IDENTITY} (issuer {sigstore_stack.issuer})" in accepted.stdout
    refused = cli_verify("someone-else@lockgate.test")
    assert refused.returncode == ExitCode.VERIFICATION, refused.stderr
    assert "found 'ci@lockgate.test'" in refused.stderr


def test_cosign_verifies_our_keyless_signature(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ref = push_artifact(registry, unique)
    sign.sign_keyless(ref, token=sigstore_stack.token(), trust_config=sigstore_stack.trust_config)
    accepted = cosign_verify(ref, sigstore_stack, tmp_path, identity=DEFAULT_IDENTITY)
    assert accepted.returncode == 0, accepted.stderr
    refused = cosign_verify(ref, sigstore_stack, tmp_path, identity="someone-else@lockgate.test")
    assert refused.returncode != 0


def test_certificate_carries_an_sct_from_the_local_ct_log(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str
) -> None:
    from cryptography import x509

    ref = push_artifact(registry, unique)
    sign.sign_keyless(ref, token=sigstore_stack.token(), trust_config=sigstore_stack.trust_config)
    material = stored_bundle(registry, ref)["verificationMaterial"]
    assert isinstance(material, dict)
    cert = x509.load_der_x509_certificate(base64.b64decode(material["certificate"]["rawBytes"]))
    scts = cert.extensions.get_extension_for_class(x509.PrecertificateSignedCertificateTimestamps).value
    trusted_root = json.loads(sigstore_stack.trusted_root.read_text())
    ct_log_id = base64.b64decode(trusted_root["ctlogs"][0]["logId"]["keyId"])
    assert [sct.log_id for sct in scts] == [ct_log_id]
