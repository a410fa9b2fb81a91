"""Keyless attestations against the private Sigstore on loopback (tests/world/sigstore.py).

An attestation signed keyless (Fulcio certificate for the OIDC identity, Rekor v2 entry,
TSA timestamp) is stored with the artifact and read back with a keyless policy: the
identity and issuer must match, the statement must name this digest.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from lockgate.errors import ExitCode
from lockgate.signing import attest, requirements, store
from lockgate.signing.policy import KeylessPolicy, Match
from tests.integration.signing_support import client_for, digest_of, push_artifact
from tests.integration.test_promotion import World
from tests.integration.test_signing_keyless_e2e import lockgate
from tests.world.kube import Cluster
from tests.world.registry import Registry
from tests.world.sigstore import DEFAULT_IDENTITY, SigstoreStack

pytestmark = [
    pytest.mark.world,
    pytest.mark.filterwarnings("ignore:Attribute's length must be:UserWarning"),
]

QA = "https://example.com/attestations/qa-approved/v1"


def policy(stack: SigstoreStack, identity: str = DEFAULT_IDENTITY) -> KeylessPolicy:
    return KeylessPolicy(
        identity=Match(identity), issuer=Match(stack.issuer), trusted_root=stack.trusted_root
    )


def test_keyless_attestations_are_read_with_the_identity(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str
) -> None:
    ref = push_artifact(registry, unique)
    other = push_artifact(registry, unique, b"kind: Other\n", tag="other")
    made = attest.attest_keyless(
        ref,
        predicate_type=QA,
        predicate={"approvedBy": "ci"},
        token=sigstore_stack.token(),
        trust_config=sigstore_stack.trust_config,
    )
    assert made.signer == f"{DEFAULT_IDENTITY} (issuer {sigstore_stack.issuer})"
    (found,) = attest.verify_attestation(ref, policy(sigstore_stack), QA)
    assert found.predicate == {"approvedBy": "ci"} and found.signer.startswith(DEFAULT_IDENTITY)

    client = client_for(registry, unique)
    stranger = attest.read(client, unique, digest_of(ref), policy(sigstore_stack, "someone@else.test"))
    assert stranger.attestations == [] and len(stranger.refused) == 1

    # the requirement a runner checks: any attestation of this type by that identity
    need = requirements.Requirement(cluster=None, policy=policy(sigstore_stack), predicate_type=QA)
    (ok,) = requirements.check_requirements(client, unique, digest_of(ref), (need,))
    assert ok.ok

    # copied onto another digest: refused
    bundle = store.read_bundles(client, unique, digest_of(ref))[0].bundle
    assert bundle is not None
    store.write_bundle(
        client, unique, digest_of(other), bundle, predicate_type=QA, created="2026-01-01T00:00:00Z"
    )
    (replayed,) = requirements.check_requirements(
        client, unique, digest_of(other), (need,), now=dt.datetime.now(dt.UTC)
    )
    assert not replayed.ok and "another artifact" in replayed.reason


def test_a_sync_requires_a_keyless_approval(
    sigstore_stack: SigstoreStack, cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    world = World(cluster, registry, unique, tmp_path)
    v100 = world.push("1.0.0")
    need = {"predicateType": QA, "identity": DEFAULT_IDENTITY, "issuer": sigstore_stack.issuer}
    verify = {"insecureSkip": True, "trustedRoot": str(sigstore_stack.trusted_root), "attestations": [need]}
    path = world.config("production", verify=verify)
    waiting = world.run(path)
    assert waiting.error is None and world.applied("production") is None
    assert f"waiting for {QA}: no such attestation" in waiting.waiting
    attest.attest_keyless(
        v100,
        predicate_type=QA,
        predicate={"approvedBy": "someone@else.test"},
        token=sigstore_stack.token("someone@else.test"),
        trust_config=sigstore_stack.trust_config,
    )
    other = world.run(path)
    assert world.applied("production") is None and "1 refused" in other.waiting
    attest.attest_keyless(
        v100,
        predicate_type=QA,
        predicate={"approvedBy": DEFAULT_IDENTITY},
        token=sigstore_stack.token(),
        trust_config=sigstore_stack.trust_config,
    )
    approved = world.run(path)
    assert approved.error is None, approved.error
    assert world.applied("production") == "1.0.0"


def test_the_cli_attests_and_verifies_keyless(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ref = push_artifact(registry, unique)
    (tmp_path / "approval.json").write_text(json.dumps({"approvedBy": "ci"}))
    made = lockgate(
        "attest",
        ref,
        "--keyless",
        "--identity-token",
        sigstore_stack.token(),
        "--trust-config",
        str(sigstore_stack.trust_config),
        "--predicate-type",
        QA,
        "--predicate",
        "approval.json",
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    assert f"signer:    {DEFAULT_IDENTITY} (issuer {sigstore_stack.issuer})" in made.stdout
    checked = lockgate(
        "verify",
        ref,
        "--attestation",
        QA,
        "--certificate-identity",
        DEFAULT_IDENTITY,
        "--certificate-oidc-issuer",
        sigstore_stack.issuer,
        "--trusted-root",
        str(sigstore_stack.trusted_root),
        "-o",
        "json",
        cwd=tmp_path,
    )
    assert checked.returncode == 0, checked.stderr
    (found,) = json.loads(checked.stdout)["attestations"]
    assert found["predicate"] == {"approvedBy": "ci"}
    stranger = lockgate(
        "verify",
        ref,
        "--attestation",
        QA,
        "--certificate-identity",
        "someone@else.test",
        "--certificate-oidc-issuer",
        sigstore_stack.issuer,
        "--trusted-root",
        str(sigstore_stack.trusted_root),
        cwd=tmp_path,
    )
    assert stranger.returncode == ExitCode.VERIFICATION, stranger.stderr
