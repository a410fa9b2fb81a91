"""Who signed: GitHub identity pinning against the local Sigstore stack (tests/world/sigstore.py).

The stack's second OIDC issuer mints tokens shaped as GitHub Actions' (tests/world/ci_tokens.py)
and Fulcio is configured for it as a ``github-workflow`` issuer, so its certificates carry the
SAN ``https://github.com/<job_workflow_ref>`` and the GitHub extensions (OIDs
1.3.6.1.4.1.57264.1.*) exactly as the public Fulcio writes them. Two repositories, ``my-org/app``
and ``mallory/app``, both call lockgate's reusable ``publish.yml``: their signatures carry the
same identity, and only the pinned repository (or ref, trigger, sha, workflow name) tells them
apart, on every verify surface: ``lockgate verify``, ``verify --attestation``, ``reconcile``
flags, a Sync's ``verify`` and ``verify.attestations[]``; cosign agrees.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.errors import ExitCode, VerificationError
from lockgate.signing import attest, sign, store, verify
from lockgate.signing.github import GitHubClaims
from lockgate.signing.policy import CertificateFacts, KeylessPolicy, Match
from tests.integration.reconcile_support import cli, configmap, dump, get, push_tree
from tests.integration.serve_support import mounted_configmap, runner_doc, start_serve, sync_doc
from tests.integration.signing_support import client_for, digest_of, push_artifact
from tests.integration.test_promotion import World
from tests.integration.test_signing_keyless_e2e import clean_env, lockgate
from tests.world import ci_tokens
from tests.world.binaries import binary
from tests.world.kube import Cluster
from tests.world.process import free_port
from tests.world.registry import Registry
from tests.world.sigstore import SigstoreStack

pytestmark = [
    pytest.mark.world,
    # Fulcio's ephemeral CA names its country "USA"; cryptography warns that it is not 2 letters
    pytest.mark.filterwarnings("ignore:Attribute's length must be:UserWarning"),
]

#: lockgate's reusable workflow, as a caller's job names it, and the identity it signs with
PUBLISH = "lockgate-dev/lockgate/.github/workflows/publish.yml@refs/tags/v1"
IDENTITY = f"https://github.com/{PUBLISH}"
QA = "https://example.com/attestations/qa-approved/v1"


def run_of(repository: str, **claims: Any) -> dict[str, Any]:
    """A job of ``repository`` calling lockgate's publish.yml."""
    return ci_tokens.github_actions(repository, uses=PUBLISH, **claims)


def sign_as(stack: SigstoreStack, artifact: str, repository: str, **claims: Any) -> None:
    """Sign ``artifact`` keyless as a run of ``repository`` calling publish.yml (``claims``: its ref...)."""
    token = stack.github_token(run_of(repository, **claims))
    sign.sign_keyless(artifact, token=token, trust_config=stack.trust_config)


def policy(stack: SigstoreStack, **pins: str) -> KeylessPolicy:
    return KeylessPolicy(
        identity=Match(IDENTITY),
        issuer=Match(stack.github.url),
        github=GitHubClaims(**pins),
        trusted_root=stack.trusted_root,
    )


def verify_cli(stack: SigstoreStack, ref: str, cwd: Path, *pins: str) -> subprocess.CompletedProcess[str]:
    return lockgate(
        "verify", ref,
        "--certificate-identity", IDENTITY,
        "--certificate-oidc-issuer", stack.github.url,
        "--trusted-root", str(stack.trusted_root),
        "--insecure",
        *pins,
        cwd=cwd,
    )  # fmt: skip


def test_the_certificate_carries_the_callers_claims_under_the_called_workflows_identity(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str
) -> None:
    from cryptography import x509

    ref = push_artifact(registry, unique)
    sign_as(sigstore_stack, ref, "my-org/app", ref="refs/tags/v2", event_name="release", workflow="Ship")
    (found,) = store.read_bundles(client_for(registry, unique), unique, digest_of(ref))
    material = json.loads(found.bundle or b"")["verificationMaterial"]
    cert = x509.load_der_x509_certificate(base64.b64decode(material["certificate"]["rawBytes"]))
    facts = CertificateFacts.of(cert)
    assert facts.identities == [IDENTITY] and facts.issuer == sigstore_stack.github.url
    claims = run_of("my-org/app", ref="refs/tags/v2")
    assert facts.github == GitHubClaims(
        repository="my-org/app",
        ref="refs/tags/v2",
        workflow_trigger="release",
        workflow_sha=claims["sha"],
        workflow_name="Ship",
    )


@pytest.mark.parametrize("pinned", ["repository", "ref", "workflow_trigger", "workflow_sha", "workflow_name"])
def test_each_field_is_matched_and_refused(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str, pinned: str
) -> None:
    ref = push_artifact(registry, unique)
    claims = run_of("my-org/app", ref="refs/heads/main", event_name="push", workflow="release")
    token = sigstore_stack.github_token(claims)
    sign.sign_keyless(ref, token=token, trust_config=sigstore_stack.trust_config)
    right = {
        "repository": "my-org/app",
        "ref": "refs/heads/main",
        "workflow_trigger": "push",
        "workflow_sha": claims["sha"],
        "workflow_name": "release",
    }
    wrong = {
        "repository": "mallory/app",
        "ref": "refs/heads/feature",
        "workflow_trigger": "pull_request_target",
        "workflow_sha": "0" * 40,
        "workflow_name": "Release",
    }
    field = {
        "repository": "githubRepository",
        "ref": "githubRef",
        "workflow_trigger": "githubWorkflowTrigger",
        "workflow_sha": "githubWorkflowSha",
        "workflow_name": "githubWorkflowName",
    }[pinned]
    pins = {"repository": "my-org/app"} | {pinned: right[pinned]}
    assert verify.verify(ref, policy(sigstore_stack, **pins)).signer == IDENTITY
    with pytest.raises(VerificationError) as refused:
        verify.verify(ref, policy(sigstore_stack, **(pins | {pinned: wrong[pinned]})))
    assert f"{field}: expected {wrong[pinned]!r}, found {right[pinned]!r}" in refused.value.message


def test_lockgate_verify_refuses_the_same_workflow_from_another_repository(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str, tmp_path: Path
) -> None:
    theirs = push_artifact(registry, unique, tag="theirs")
    sign_as(sigstore_stack, theirs, "mallory/app")
    ours = push_artifact(registry, unique, b"kind: Ours\n", tag="ours")
    sign_as(sigstore_stack, ours, "my-org/app")
    pin = ("--certificate-github-workflow-repository", "my-org/app")

    refused = verify_cli(sigstore_stack, theirs, tmp_path, *pin)
    assert refused.returncode == ExitCode.VERIFICATION, refused.stderr
    assert "githubRepository: expected 'my-org/app', found 'mallory/app'" in refused.stderr
    branch = ("--certificate-github-workflow-ref", "refs/heads/main")
    accepted = verify_cli(sigstore_stack, ours, tmp_path, *pin, *branch)
    assert accepted.returncode == 0, accepted.stderr
    assert f"signed by: {IDENTITY}" in accepted.stdout
    assert "warning:" not in accepted.stderr  # pinned: nothing to warn about

    # unpinned, lockgate's own workflow is refused before anything is fetched
    unpinned = verify_cli(sigstore_stack, theirs, tmp_path)
    assert unpinned.returncode == ExitCode.USAGE
    assert "add --certificate-github-workflow-repository OWNER/NAME" in unpinned.stderr


def test_another_unpinned_workflow_identity_is_accepted_with_a_warning_naming_the_risk(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """The warning's point: a caller from any repository passes such a policy."""
    ref = push_artifact(registry, unique)
    shared = "acme/ci/.github/workflows/build.yml@refs/heads/main"
    token = sigstore_stack.github_token(ci_tokens.github_actions("mallory/app", uses=shared))
    sign.sign_keyless(ref, token=token, trust_config=sigstore_stack.trust_config)
    result = lockgate(
        "verify", ref,
        "--certificate-identity", f"https://github.com/{shared}",
        "--certificate-oidc-issuer", sigstore_stack.github.url,
        "--trusted-root", str(sigstore_stack.trusted_root),
        "--insecure",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0].startswith(
        f"warning: --certificate-identity 'https://github.com/{shared}' is a GitHub Actions workflow "
        "identity and --certificate-github-workflow-repository is not set: a reusable workflow signs "
        "for every repository that calls it"
    )


def test_attestations_from_another_repository_are_refused(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ref = push_artifact(registry, unique)
    attest.attest_keyless(
        ref,
        predicate_type=QA,
        predicate={"approvedBy": "mallory"},
        token=sigstore_stack.github_token(run_of("mallory/app")),
        trust_config=sigstore_stack.trust_config,
    )
    with pytest.raises(VerificationError) as refused:
        attest.verify_attestation(ref, policy(sigstore_stack, repository="my-org/app"), QA)
    assert "githubRepository: expected 'my-org/app', found 'mallory/app'" in refused.value.message
    pin = ("--certificate-github-workflow-repository", "my-org/app")
    cli_refused = verify_cli(sigstore_stack, ref, tmp_path, "--attestation", QA, *pin)
    assert cli_refused.returncode == ExitCode.VERIFICATION, cli_refused.stderr
    assert "githubRepository: expected 'my-org/app', found 'mallory/app'" in cli_refused.stderr
    assert len(attest.verify_attestation(ref, policy(sigstore_stack, repository="mallory/app"), QA)) == 1


def test_cosign_agrees(
    sigstore_stack: SigstoreStack, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """Same flags, same verdicts: cosign's --certificate-github-workflow-repository/-ref."""
    theirs = push_artifact(registry, unique, tag="theirs")
    sign_as(sigstore_stack, theirs, "mallory/app")
    ours = push_artifact(registry, unique, b"kind: Ours\n", tag="ours")
    sign_as(sigstore_stack, ours, "my-org/app")

    def cosign(ref: str, *pins: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                str(binary("cosign")), "verify",
                "--trusted-root", str(sigstore_stack.trusted_root),
                "--certificate-identity", IDENTITY,
                "--certificate-oidc-issuer", sigstore_stack.github.url,
                *pins,
                "--allow-http-registry", ref.removeprefix("oci://"),
            ],
            env=clean_env() | {"TUF_ROOT": str(tmp_path / "tuf"), "HOME": str(tmp_path)},
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
        )  # fmt: skip

    repository = ("--certificate-github-workflow-repository", "my-org/app")
    assert cosign(ours, *repository).returncode == 0
    assert cosign(theirs, *repository).returncode != 0
    other_branch = ("--certificate-github-workflow-ref", "refs/heads/feature")
    assert cosign(ours, *repository, *other_branch).returncode != 0


def test_reconcile_flags_refuse_another_repository_and_the_wrong_branch(
    sigstore_stack: SigstoreStack, cluster: Cluster, registry: Registry, unique: str
) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": unique}}
    tree = dump(namespace, configmap("a", unique, {"k": "v"}))
    url = push_tree(registry, unique, {"a.yaml": tree})
    pinned = registry.oci(unique, "@" + url.rsplit("@", 1)[1])
    flags = [
        url, "--name", unique, "-n", f"{unique}-r",
        "--verify-identity", IDENTITY,
        "--verify-issuer", sigstore_stack.github.url,
        "--verify-trusted-root", str(sigstore_stack.trusted_root),
        "--verify-github-repository", "my-org/app",
        "--verify-github-ref", "refs/heads/main",
    ]  # fmt: skip

    sign_as(sigstore_stack, pinned, "mallory/app")
    other_repository = cli(cluster, *flags)
    assert other_repository.code == ExitCode.VERIFICATION, other_repository.err
    assert "githubRepository: expected 'my-org/app', found 'mallory/app'" in other_repository.err

    sign_as(sigstore_stack, pinned, "my-org/app", ref="refs/heads/feature")
    wrong_branch = cli(cluster, *flags)
    assert wrong_branch.code == ExitCode.VERIFICATION, wrong_branch.err
    assert "githubRef: expected 'refs/heads/main', found 'refs/heads/feature'" in wrong_branch.err
    assert get(cluster, "namespace", unique) is None

    sign_as(sigstore_stack, pinned, "my-org/app", ref="refs/heads/main")
    signed = cli(cluster, *flags)
    assert signed.code == 0, signed.err
    assert get(cluster, "configmap", "a", unique) is not None
    assert "warning:" not in signed.err  # pinned: nothing to warn about


def test_a_sync_and_its_attestations_pin_the_repository(
    sigstore_stack: SigstoreStack, cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    world = World(cluster, registry, unique, tmp_path)
    mine = {"identity": IDENTITY, "issuer": sigstore_stack.github.url, "githubRepository": "my-org/app"}
    verify_spec: dict[str, Any] = {
        **mine,
        "githubRef": "refs/heads/main",
        "trustedRoot": str(sigstore_stack.trusted_root),
    }
    v100 = world.push("1.0.0")
    sign_as(sigstore_stack, v100, "mallory/app")
    refused = world.run(world.config("production", verify=verify_spec))
    assert isinstance(refused.error, VerificationError)
    assert "githubRepository: expected 'my-org/app', found 'mallory/app'" in refused.error.message
    assert world.applied("production") is None
    sign_as(sigstore_stack, v100, "my-org/app")
    applied = world.run(world.config("production", verify=verify_spec))
    assert applied.error is None, applied.error
    assert world.applied("production") == "1.0.0"

    # 1.1.0, signed from my-org/app, also needs a QA approval from my-org/app's run
    v110 = world.push("1.1.0")
    sign_as(sigstore_stack, v110, "my-org/app")
    gated = world.config("production", verify=verify_spec | {"attestations": [{"predicateType": QA, **mine}]})
    attest.attest_keyless(
        v110,
        predicate_type=QA,
        predicate={"approvedBy": "mallory"},
        token=sigstore_stack.github_token(run_of("mallory/app")),
        trust_config=sigstore_stack.trust_config,
    )
    waiting = world.run(gated)
    assert waiting.error is None and world.applied("production") == "1.0.0"
    assert "1 refused" in waiting.waiting
    assert "githubRepository: expected 'my-org/app', found 'mallory/app'" in waiting.waiting
    attest.attest_keyless(
        v110,
        predicate_type=QA,
        predicate={"approvedBy": "my-org"},
        token=sigstore_stack.github_token(run_of("my-org/app")),
        trust_config=sigstore_stack.trust_config,
    )
    approved = world.run(gated)
    assert approved.error is None, approved.error
    assert world.applied("production") == "1.1.0"


def test_reconcile_config_prints_the_warning_and_refuses_lockgates_own_workflow(
    sigstore_stack: SigstoreStack, cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """The load-time checks as the CronJob mode sees them: stderr, exit 2 before any request."""
    url = push_tree(registry, unique, {"a.yaml": dump(configmap("a", "default", {"k": "v"}))})
    other = "https://github.com/acme/ci/.github/workflows/build.yml@refs/heads/main"
    sync = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": unique},
        "spec": {
            "url": url,
            "interval": "5m",
            "namespace": f"{unique}-r",
            "verify": {
                "identity": other,
                "issuer": sigstore_stack.github.url,
                "trustedRoot": str(sigstore_stack.trusted_root),
            },
        },
    }
    path = tmp_path / "syncs.yaml"
    path.write_text(yaml.safe_dump(sync))
    warned = cli(cluster, "--config", str(path))
    assert warned.code == ExitCode.VERIFICATION  # unsigned: the warning does not stop the pass
    first = warned.err.splitlines()[0]
    assert first.startswith(f"warning: {path}:")
    assert f": Sync/{unique}: spec.verify.identity '{other}'" in first
    assert first.endswith(
        "is a GitHub Actions workflow identity and spec.verify.githubRepository is not set: a reusable "
        "workflow signs for every repository that calls it, so a signature made from another repository "
        "would be accepted; set spec.verify.githubRepository: OWNER/NAME"
    )

    sync["spec"]["verify"]["identity"] = IDENTITY  # type: ignore[index]
    path.write_text(yaml.safe_dump(sync))
    refused = cli(cluster, "--config", str(path))
    assert refused.code == ExitCode.USAGE, refused.err
    assert f"spec.verify.identity '{IDENTITY}' is one of lockgate's reusable workflows" in refused.err
    assert "add spec.verify.githubRepository: OWNER/NAME" in refused.err


def test_serve_logs_the_warning_and_refuses_lockgates_own_workflow_on_reload(
    sigstore_stack: SigstoreStack, cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns = f"{unique}-run"
    url = push_tree(registry, unique, {"a.yaml": dump(configmap("a", "default", {"k": "v"}))})
    other = "https://github.com/acme/ci/.github/workflows/build.yml@refs/heads/main"
    verify_spec = {
        "identity": other,
        "issuer": sigstore_stack.github.url,
        "trustedRoot": str(sigstore_stack.trusted_root),
    }
    ports = (free_port(), free_port())
    mount = tmp_path / "mount"
    runner = runner_doc(*ports, namespace=runner_ns)
    config = mounted_configmap(mount, [runner, sync_doc("app", url, runner_ns, verify=verify_spec)])
    served = start_serve(cluster, tmp_path, [], config=config, ports=ports, wait_ready=False)
    try:
        warned = served.wait_event(
            lambda e: e.get("level") == "warning" and e.get("sync") == "app", what="the warning"
        )
        assert f"spec.verify.identity '{other}' is a GitHub Actions workflow identity" in warned["msg"]
        assert "spec.verify.githubRepository is not set" in warned["msg"]

        own = {**verify_spec, "identity": IDENTITY}
        mounted_configmap(mount, [runner, sync_doc("app", url, runner_ns, verify=own)])
        refused = served.wait_event(
            lambda e: e.get("msg", "").startswith("configuration refused"), what="refusal", timeout=30
        )
        reason = refused["reason"]
        assert f"spec.verify.identity '{IDENTITY}' is one of lockgate's reusable workflows" in reason
        assert "add spec.verify.githubRepository: OWNER/NAME" in reason
    finally:
        served.stop()
