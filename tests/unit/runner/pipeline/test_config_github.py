"""GitHub identity pinning in Sync documents and reconcile flags: the five fields reach the
policy; lockgate's own reusable workflow without githubRepository is refused at load, naming
the file, the field and what to add; another workflow identity loads with a warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate import cli
from lockgate.errors import ExitCode, UsageError
from lockgate.signing.github import GitHubClaims
from lockgate.signing.options import VerifyOptions
from lockgate.signing.policy import KeylessPolicy
from runner.pipeline import config

ACTIONS = "https://token.actions.githubusercontent.com"
OWN = "https://github.com/lockgate-dev/lockgate/.github/workflows/publish.yml@refs/tags/v1"
OTHER = "https://github.com/my-org/ci/.github/workflows/build.yml@refs/heads/main"


def sync_file(tmp_path: Path, verify: str) -> Path:
    """One Sync ``web`` whose ``spec.verify`` is the block ``verify`` (indented under it)."""
    path = tmp_path / "syncs.yaml"
    path.write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
        "spec:\n  url: oci://127.0.0.1:5000/web\n  interval: 5m\n  verify:\n"
        + "".join(f"    {line}\n" for line in verify.strip().splitlines())
    )
    return path


def test_the_five_fields_reach_the_policy(tmp_path: Path) -> None:
    path = sync_file(
        tmp_path,
        f"""
        identity: {OWN}
        issuer: {ACTIONS}
        githubRepository: my-org/app
        githubRef: refs/heads/main
        githubWorkflowTrigger: push
        githubWorkflowSha: {"a" * 40}
        githubWorkflowName: release
        """.replace("        ", ""),
    )
    (sync,) = config.load(path).syncs
    assert isinstance(sync.source.policy, KeylessPolicy)
    assert sync.source.policy.github == GitHubClaims(
        repository="my-org/app",
        ref="refs/heads/main",
        workflow_trigger="push",
        workflow_sha="a" * 40,
        workflow_name="release",
    )
    assert sync.source.warnings == ()


def test_lockgates_own_workflow_without_the_repository_is_refused_at_load(tmp_path: Path) -> None:
    path = sync_file(tmp_path, f"identity: {OWN}\nissuer: {ACTIONS}\ngithubRef: refs/tags/v1")
    with pytest.raises(UsageError) as refused:
        config.load(path)
    assert refused.value.message.startswith(
        f"{path}:7: Sync/web: spec.verify.identity '{OWN}' is one of lockgate's reusable workflows, "
        "which signs for every repository that calls it"
    )
    assert "add spec.verify.githubRepository: OWNER/NAME" in refused.value.message


def test_an_attestation_from_lockgates_own_workflow_without_the_repository_is_refused(tmp_path: Path) -> None:
    path = sync_file(
        tmp_path,
        f"""
        insecureSkip: true
        attestations:
          - predicateType: https://example.com/qa/v1
            identityRegexp: https://github\\.com/lockgate-dev/lockgate/\\.github/workflows/publish\\.yml@.+
            issuer: {ACTIONS}
        """.replace("        ", ""),
    )
    with pytest.raises(UsageError) as refused:
        config.load(path)
    message = refused.value.message
    assert message.startswith(
        f"{path}:10: Sync/web: spec.verify.attestations[0].identityRegexp "
        "'https://github\\.com/lockgate-dev/lockgate/\\.github/workflows/publish\\.yml@.+' is one of"
    ), message
    assert "add spec.verify.attestations[0].githubRepository: OWNER/NAME" in message


def test_another_workflow_identity_loads_with_a_warning_naming_the_field_and_the_risk(tmp_path: Path) -> None:
    path = sync_file(
        tmp_path,
        f"""
        identity: {OTHER}
        issuer: {ACTIONS}
        attestations:
          - predicateType: https://example.com/qa/v1
            identity: {OTHER}
            issuer: {ACTIONS}
            githubRepository: my-org/app
          - predicateType: https://example.com/security/v1
            identity: {OTHER}
            issuer: {ACTIONS}
        """.replace("        ", ""),
    )
    (sync,) = config.load(path).syncs
    verify, attestation = sync.source.warnings
    assert verify == (
        f"{path}:7: Sync/web: spec.verify.identity '{OTHER}' is a GitHub Actions workflow identity and "
        "spec.verify.githubRepository is not set: a reusable workflow signs for every repository that "
        "calls it, so a signature made from another repository would be accepted; set "
        "spec.verify.githubRepository: OWNER/NAME"
    )
    assert attestation.startswith(f"{path}:15: Sync/web: spec.verify.attestations[1].identity")


def test_reconcile_refuses_lockgates_own_workflow_in_flags_and_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 before any registry or cluster request."""
    flags = ["reconcile", "oci://127.0.0.1:1/web:1.0.0", "--name", "web"]
    code = cli.main([*flags, "--verify-identity", OWN, "--verify-issuer", ACTIONS])
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert err.startswith(f"error: --verify-identity '{OWN}' is one of lockgate's reusable workflows")
    assert "add --verify-github-repository OWNER/NAME" in err

    path = sync_file(tmp_path, f"identity: {OWN}\nissuer: {ACTIONS}")
    assert cli.main(["reconcile", "--config", str(path)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert f"{path}:7: Sync/web: spec.verify.identity '{OWN}'" in err
    assert "add spec.verify.githubRepository: OWNER/NAME" in err


def test_the_warning_for_reconcile_flags_names_the_flags() -> None:
    sync = config.sync_options(
        name="web", url="oci://127.0.0.1:1/web:1.0.0", verify=VerifyOptions(identity=OTHER, issuer=ACTIONS)
    )
    (warning,) = sync.source.warnings
    assert warning.startswith(f"--verify-identity '{OTHER}' is a GitHub Actions workflow identity")
    assert warning.endswith("set --verify-github-repository OWNER/NAME")
