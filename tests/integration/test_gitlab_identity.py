"""Who signed, from GitLab CI: keyless signatures of GitLab pipelines on the local Sigstore stack.

The stack's third OIDC issuer mints tokens shaped as GitLab CI's ID tokens
(``tests/world/ci_tokens.gitlab_ci``: project_path, ref, pipeline_source, ci_config_ref_uri...)
and Fulcio is configured for it with its ``gitlab-pipeline`` CI provider, as the public
Fulcio is for gitlab.com, here for the self-hosted ``https://gitlab.example.com``: the SAN is
``https://<ci_config_ref_uri>`` and the source and build extensions (OIDs
1.3.6.1.4.1.57264.1.11-.22) carry the project, ref, commit and pipeline source. Two projects,
``group/app`` and ``mallory/app``, sign; the pins (``sourceRepositoryURI``,
``sourceRepositoryRef``, ``buildTrigger``...) tell them apart on every verify surface:
``lockgate verify``, reconcile flags, a Sync's ``verify`` and ``verify.attestations[]``;
cosign verifies the same signature as the pipeline's identity.
"""

from __future__ import annotations

import base64
import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lockgate.errors import ExitCode, VerificationError
from lockgate.signing import attest, sign, store, verify
from lockgate.signing.buildclaims import BuildClaims
from lockgate.signing.github import GitHubClaims
from lockgate.signing.policy import CertificateFacts, KeylessPolicy, Match
from tests.integration.reconcile_support import cli, configmap, dump, get, push_tree
from tests.integration.signing_support import client_for, digest_of, push_artifact
from tests.integration.test_promotion import World
from tests.integration.test_signing_keyless_e2e import clean_env, lockgate
from tests.world import ci_tokens
from tests.world.binaries import binary
from tests.world.kube import Cluster
from tests.world.registry import Registry
from tests.world.sigstore import SigstoreStack

pytestmark = [
    pytest.mark.world,
    # Fulcio's ephemeral CA names its country "USA"; cryptography warns that it is not 2 letters
    pytest.mark.filterwarnings("ignore:Attribute's length must be:UserWarning"),
]

GITLAB = "https://gitlab.example.com"
PROJECT = f"{GITLAB}/group/app"
#: the identity of group/app's pipeline on main: its own top-level .gitlab-ci.yml
IDENTITY = f"{PROJECT}//.gitlab-ci.yml@refs/heads/main"
#: any project's top-level pipeline file on any branch of the instance
ANY_PROJECT = r"https://gitlab\.example\.com/.+//\.gitlab-ci\.yml@refs/heads/.+"
QA = "https://example.com/attestations/qa-approved/v1"


def sign_as(stack: SigstoreStack, artifact: str, project_path: str, **claims: Any) -> dict[str, Any]:
    """Sign ``artifact`` keyless as a pipeline of ``project_path``; returns the token's claims."""
    minted = ci_tokens.gitlab_ci(project_path, **claims)
    sign.sign_keyless(artifact, token=stack.gitlab_token(minted), trust_config=stack.trust_config)
    return minted


def policy(stack: SigstoreStack, **pins: str) -> KeylessPolicy:
    return KeylessPolicy(
        identity=Match(IDENTITY),
        issuer=Match(stack.gitlab.url),
        build=BuildClaims(**pins),
        trusted_root=stack.trusted_root,
    )


def test_the_certificate_names_the_pipeline_file_and_carries_the_project_ref_and_source(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str
) -> None:
    from cryptography import x509

    ref = push_artifact(registry, unique)
    claims = sign_as(sigstore_stack, ref, "group/app", ref="v2", ref_type="tag", pipeline_source="web")
    (found,) = store.read_bundles(client_for(registry, unique), unique, digest_of(ref))
    material = json.loads(found.bundle or b"")["verificationMaterial"]
    cert = x509.load_der_x509_certificate(base64.b64decode(material["certificate"]["rawBytes"]))
    facts = CertificateFacts.of(cert)
    assert facts.identities == [f"{PROJECT}//.gitlab-ci.yml@refs/tags/v2"]
    assert facts.issuer == sigstore_stack.gitlab.url
    assert facts.build == BuildClaims(
        source_repository_uri=PROJECT,
        source_repository_ref="refs/tags/v2",
        source_repository_digest=claims["sha"],
        build_trigger="web",
        build_config_uri=f"{PROJECT}//.gitlab-ci.yml@refs/tags/v2",
        runner_environment="gitlab-hosted",
    )
    assert facts.github == GitHubClaims()  # no GitHub claim is read from a GitLab certificate


def test_cosign_verifies_the_gitlab_signature_as_the_pipeline_identity(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ref = push_artifact(registry, unique)
    sign_as(sigstore_stack, ref, "group/app")

    def cosign(identity: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                str(binary("cosign")), "verify",
                "--trusted-root", str(sigstore_stack.trusted_root),
                "--certificate-identity", identity,
                "--certificate-oidc-issuer", sigstore_stack.gitlab.url,
                "--allow-http-registry", ref.removeprefix("oci://"),
            ],
            env=clean_env() | {"TUF_ROOT": str(tmp_path / "tuf"), "HOME": str(tmp_path)},
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
        )  # fmt: skip

    verified = cosign(IDENTITY)
    assert verified.returncode == 0, verified.stderr
    assert cosign(f"{GITLAB}/mallory/app//.gitlab-ci.yml@refs/heads/main").returncode != 0


def test_each_pin_is_matched_and_refused_and_github_pins_never_match(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str
) -> None:
    ref = push_artifact(registry, unique)
    claims = sign_as(sigstore_stack, ref, "group/app")
    right = {
        "source_repository_uri": PROJECT,
        "source_repository_ref": "refs/heads/main",
        "source_repository_digest": claims["sha"],
        "build_trigger": "push",
        "build_config_uri": IDENTITY,
        "runner_environment": "gitlab-hosted",
    }
    wrong = {
        "source_repository_uri": f"{GITLAB}/mallory/app",
        "source_repository_ref": "refs/heads/feature",
        "source_repository_digest": "0" * 40,
        "build_trigger": "merge_request_event",
        "build_config_uri": f"{GITLAB}/mallory/app//.gitlab-ci.yml@refs/heads/main",
        "runner_environment": "self-hosted",
    }
    assert verify.verify(ref, policy(sigstore_stack, **right)).signer == IDENTITY
    for name, field in (
        ("source_repository_uri", "sourceRepositoryURI"),
        ("source_repository_ref", "sourceRepositoryRef"),
        ("source_repository_digest", "sourceRepositoryDigest"),
        ("build_trigger", "buildTrigger"),
        ("build_config_uri", "buildConfigURI"),
        ("runner_environment", "runnerEnvironment"),
    ):
        with pytest.raises(VerificationError) as refused:
            verify.verify(ref, policy(sigstore_stack, **(right | {name: wrong[name]})))
        assert f"{field}: expected {wrong[name]!r}, found {right[name]!r}" in refused.value.message
    github = KeylessPolicy(
        identity=Match(IDENTITY),
        issuer=Match(sigstore_stack.gitlab.url),
        github=GitHubClaims(repository="group/app"),
        trusted_root=sigstore_stack.trusted_root,
    )
    with pytest.raises(VerificationError) as refused:
        verify.verify(ref, github)
    assert "githubRepository: expected 'group/app', found None" in refused.value.message


def test_lockgate_verify_refuses_another_project_and_another_branch(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str, tmp_path: Path
) -> None:
    theirs = push_artifact(registry, unique, tag="theirs")
    sign_as(sigstore_stack, theirs, "mallory/app")
    feature = push_artifact(registry, unique, b"kind: Feature\n", tag="feature")
    sign_as(sigstore_stack, feature, "group/app", ref="feature")
    ours = push_artifact(registry, unique, b"kind: Ours\n", tag="ours")
    sign_as(sigstore_stack, ours, "group/app")

    def verify_cli(ref: str, *flags: str) -> Any:
        return lockgate(
            "verify", ref,
            "--certificate-oidc-issuer", sigstore_stack.gitlab.url,
            "--trusted-root", str(sigstore_stack.trusted_root),
            "--insecure",
            *flags,
            cwd=tmp_path,
        )  # fmt: skip

    # the exact identity names the project and the branch
    exact = ("--certificate-identity", IDENTITY)
    other_project = verify_cli(theirs, *exact)
    assert other_project.returncode == ExitCode.VERIFICATION, other_project.stderr
    assert f"identity: expected '{IDENTITY}', found '{GITLAB}/mallory/app//" in other_project.stderr
    assert verify_cli(ours, *exact).returncode == 0

    # a regexp over any project, narrowed by the pins
    pins = (
        "--certificate-identity-regexp", ANY_PROJECT,
        "--certificate-source-repository-uri", PROJECT,
        "--certificate-source-repository-ref", "refs/heads/main",
    )  # fmt: skip
    refused = verify_cli(theirs, *pins)
    assert refused.returncode == ExitCode.VERIFICATION, refused.stderr
    assert f"sourceRepositoryURI: expected '{PROJECT}', found '{GITLAB}/mallory/app'" in refused.stderr
    branch = verify_cli(feature, *pins)
    assert branch.returncode == ExitCode.VERIFICATION, branch.stderr
    assert "sourceRepositoryRef: expected 'refs/heads/main', found 'refs/heads/feature'" in branch.stderr
    accepted = verify_cli(ours, *pins)
    assert accepted.returncode == 0, accepted.stderr
    assert f"signed by: {IDENTITY}" in accepted.stdout
    assert "warning:" not in accepted.stderr


def test_reconcile_flags_pin_the_project(
    sigstore_stack: SigstoreStack, cluster: Cluster, registry: Registry, unique: str
) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": unique}}
    url = push_tree(registry, unique, {"a.yaml": dump(namespace, configmap("a", unique, {"k": "v"}))})
    pinned = registry.oci(unique, "@" + url.rsplit("@", 1)[1])
    flags = [
        url, "--name", unique, "-n", f"{unique}-r",
        "--verify-identity-regexp", ANY_PROJECT,
        "--verify-issuer", sigstore_stack.gitlab.url,
        "--verify-trusted-root", str(sigstore_stack.trusted_root),
        "--verify-source-repository-uri", PROJECT,
        "--verify-build-trigger", "push",
    ]  # fmt: skip
    sign_as(sigstore_stack, pinned, "mallory/app")
    refused = cli(cluster, *flags)
    assert refused.code == ExitCode.VERIFICATION, refused.err
    assert f"sourceRepositoryURI: expected '{PROJECT}', found '{GITLAB}/mallory/app'" in refused.err
    assert get(cluster, "namespace", unique) is None
    sign_as(sigstore_stack, pinned, "group/app")
    applied = cli(cluster, *flags)
    assert applied.code == 0, applied.err
    assert get(cluster, "configmap", "a", unique) is not None


def test_a_sync_pinned_to_a_gitlab_project_reconciles_and_gates_on_its_attestations(
    sigstore_stack: SigstoreStack, cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    world = World(cluster, registry, unique, tmp_path)
    mine = {
        "identityRegexp": ANY_PROJECT,
        "issuer": sigstore_stack.gitlab.url,
        "sourceRepositoryURI": PROJECT,
    }
    verify_spec: dict[str, Any] = {
        **mine,
        "sourceRepositoryRef": "refs/heads/main",
        "trustedRoot": str(sigstore_stack.trusted_root),
    }
    v100 = world.push("1.0.0")
    sign_as(sigstore_stack, v100, "group/app", ref="feature")
    refused = world.run(world.config("production", verify=verify_spec))
    assert isinstance(refused.error, VerificationError)
    assert "sourceRepositoryRef: expected 'refs/heads/main', found 'refs/heads/feature'" in (
        refused.error.message
    )
    assert world.applied("production") is None
    sign_as(sigstore_stack, v100, "group/app")
    applied = world.run(world.config("production", verify=verify_spec))
    assert applied.error is None, applied.error
    assert world.applied("production") == "1.0.0"

    # 1.1.0 also needs a QA approval attested from group/app's pipeline, not mallory's
    v110 = world.push("1.1.0")
    sign_as(sigstore_stack, v110, "group/app")
    gated = world.config("production", verify=verify_spec | {"attestations": [{"predicateType": QA, **mine}]})
    for project_path in ("mallory/app", "group/app"):
        if project_path == "group/app":
            waiting = world.run(gated)
            assert waiting.error is None and world.applied("production") == "1.0.0"
            mallory = f"sourceRepositoryURI: expected '{PROJECT}', found '{GITLAB}/mallory/app'"
            assert mallory in waiting.waiting
        attest.attest_keyless(
            v110,
            predicate_type=QA,
            predicate={"approvedBy": project_path},
            token=sigstore_stack.gitlab_token(ci_tokens.gitlab_ci(project_path, pipeline_source="web")),
            trust_config=sigstore_stack.trust_config,
        )
    approved = world.run(gated)
    assert approved.error is None, approved.error
    assert world.applied("production") == "1.1.0"


def test_the_same_pins_apply_to_a_github_actions_signature(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str
) -> None:
    """Fulcio writes the source and build extensions for every CI: a GitHub run's too."""
    ref = push_artifact(registry, unique)
    claims = ci_tokens.github_actions("my-org/app", ref="refs/heads/main", event_name="push")
    token = sigstore_stack.github_token(claims)
    sign.sign_keyless(ref, token=token, trust_config=sigstore_stack.trust_config)
    github = KeylessPolicy(
        identity=Match("https://github.com/my-org/app/.github/workflows/release.yml@refs/heads/main"),
        issuer=Match(sigstore_stack.github.url),
        build=BuildClaims(
            source_repository_uri="https://github.com/my-org/app",
            source_repository_ref="refs/heads/main",
            source_repository_digest=claims["sha"],
            build_trigger="push",
        ),
        trusted_root=sigstore_stack.trusted_root,
    )
    assert verify.verify(ref, github).digest == digest_of(ref)
    with pytest.raises(VerificationError) as refused:
        verify.verify(ref, replace(github, build=replace(github.build, build_trigger="workflow_dispatch")))
    assert "buildTrigger: expected 'workflow_dispatch', found 'push'" in refused.value.message
