"""Any CI's source and build extensions as pins (GitLab CI's project, ref, pipeline source...):
their names on each surface, how a mismatch reads, and that every surface carries them to the
policy (a Sync's verify and attestations, reconcile's and verify's flags, the Action's inputs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.errors import ExitCode, UsageError
from lockgate.signing import buildclaims
from lockgate.signing.buildclaims import BuildClaims
from lockgate.signing.options import VERIFY_FLAGS, VerifyOptions, build_policy
from lockgate.signing.policy import KeylessPolicy
from runner.pipeline import config, source
from tests.unit.runner.pipeline.test_config_github import sync_file

GITLAB = "https://gitlab.example.com"
SAN = f"{GITLAB}/group/project//.gitlab-ci.yml@refs/heads/main"
PINS = BuildClaims(
    source_repository_uri=f"{GITLAB}/group/project",
    source_repository_ref="refs/heads/main",
    source_repository_digest="a" * 40,
    build_trigger="push",
    build_config_uri=SAN,
    runner_environment="gitlab-hosted",
)
FIELDS = {
    "sourceRepositoryURI": PINS.source_repository_uri,
    "sourceRepositoryRef": PINS.source_repository_ref,
    "sourceRepositoryDigest": PINS.source_repository_digest,
    "buildTrigger": PINS.build_trigger,
    "buildConfigURI": PINS.build_config_uri,
    "runnerEnvironment": PINS.runner_environment,
}


def test_names_per_surface() -> None:
    assert list(buildclaims.names("field", "spec.verify.").values()) == [f"spec.verify.{f}" for f in FIELDS]
    assert list(VERIFY_FLAGS.build.values()) == [
        "--certificate-source-repository-uri",
        "--certificate-source-repository-ref",
        "--certificate-source-repository-digest",
        "--certificate-build-trigger",
        "--certificate-build-config-uri",
        "--certificate-runner-environment",
    ]
    assert list(source.FLAGS.build.values()) == [
        "--verify-source-repository-uri",
        "--verify-source-repository-ref",
        "--verify-source-repository-digest",
        "--verify-build-trigger",
        "--verify-build-config-uri",
        "--verify-runner-environment",
    ]
    assert [c.oid.rsplit(".", 1)[1] for c in buildclaims.CLAIMS] == ["12", "14", "13", "20", "18", "11"]


def test_a_mismatch_names_the_field_and_both_values() -> None:
    found = BuildClaims(
        source_repository_uri=f"{GITLAB}/mallory/project", source_repository_ref="refs/heads/main"
    )
    expected = BuildClaims(source_repository_uri=f"{GITLAB}/group/project", build_trigger="push")
    assert found.mismatches(expected) == [
        f"sourceRepositoryURI: expected '{GITLAB}/group/project', found '{GITLAB}/mallory/project'",
        "buildTrigger: expected 'push', found None",
    ]
    assert found.mismatches(BuildClaims()) == []


def test_a_pin_alone_is_keyless_and_cannot_be_combined_with_a_key(tmp_path: Path) -> None:
    pinned = VerifyOptions(build=BuildClaims(build_trigger="push"))
    assert pinned.keyless
    with pytest.raises(UsageError, match="--key cannot be combined with --certificate-build-trigger"):
        build_policy(VerifyOptions(key=tmp_path / "k.pub", build=pinned.build), VERIFY_FLAGS)


def test_a_syncs_verify_and_attestations_carry_the_pins(tmp_path: Path) -> None:
    pins = "".join(f"{name}: '{value}'\n" for name, value in FIELDS.items())
    attestation = "attestations:\n  - predicateType: https://example.com/qa/v1\n    identity: " + SAN
    attestation += f"\n    issuer: {GITLAB}\n    sourceRepositoryURI: {GITLAB}/group/qa\n"
    path = sync_file(tmp_path, f"identity: {SAN}\nissuer: {GITLAB}\n{pins}{attestation}")
    (sync,) = config.load(path).syncs
    assert isinstance(sync.source.policy, KeylessPolicy)
    assert sync.source.policy.build == PINS
    (gate,) = sync.source.attestations
    assert isinstance(gate.policy, KeylessPolicy)
    assert gate.policy.build == BuildClaims(source_repository_uri=f"{GITLAB}/group/qa")
    assert sync.source.warnings == ()


def test_reconcile_and_verify_flags_reach_the_policy(capsys: pytest.CaptureFixture[str]) -> None:
    from lockgate import cli

    flags = [
        ("source-repository-uri", PINS.source_repository_uri),
        ("source-repository-ref", PINS.source_repository_ref),
        ("source-repository-digest", PINS.source_repository_digest),
        ("build-trigger", PINS.build_trigger),
        ("build-config-uri", PINS.build_config_uri),
        ("runner-environment", PINS.runner_environment),
    ]
    # with a key as well, each command refuses and names every keyless flag it parsed
    surfaces = (("verify", "--certificate-", "--key"), ("reconcile", "--verify-", "--verify-key"))
    for command, prefix, key in surfaces:
        argv = [command, "oci://127.0.0.1:1/web:1", key, "k.pub"]
        argv += ["--name", "web"] if command == "reconcile" else []
        for stem, value in flags:
            argv += [f"{prefix}{stem}", str(value)]
        assert cli.main(argv) == ExitCode.USAGE
        err = capsys.readouterr().err
        named = ", ".join(f"{prefix}{stem}" for stem, _ in flags)
        assert f"{key} cannot be combined with {named}" in err, err
