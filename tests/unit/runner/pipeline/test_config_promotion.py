"""``spec.attest`` and ``spec.verify.attestations`` become options; bad ones name the document and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.errors import UsageError
from lockgate.signing import attest, keys
from lockgate.signing.policy import KeylessPolicy, KeyPolicy
from runner.pipeline import config

RUNNER = "apiVersion: lockgate.dev/v1alpha1\nkind: Runner\nspec: {clusterName: production}\n---\n"


def _file(tmp_path: Path, spec: str) -> Path:
    path = tmp_path / "syncs.yaml"
    path.write_text(
        RUNNER + "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
        "spec:\n  url: oci://127.0.0.1:5000/web\n  semver: '>=1.0.0'\n  interval: 5m\n" + spec
    )
    return path


def test_attest_and_requirements_become_options(tmp_path: Path) -> None:
    (tmp_path / "staging.pub").write_bytes(keys.generate_key_pair(b"pw").public_pem)
    path = _file(
        tmp_path,
        "  attest: {secretRef: {name: runner-key}, onFailure: true}\n"
        "  verify:\n    insecureSkip: true\n    attestations:\n"
        f"      - {{cluster: staging, key: {tmp_path / 'staging.pub'}, minAge: 1h}}\n"
        "      - {predicateType: 'https://example.com/qa/v1', secretRef: {name: qa-keys}}\n",
    )
    (sync,) = config.load(path).syncs
    assert sync.attest is not None
    assert (sync.attest.secret_ref, sync.attest.cluster, sync.attest.on_failure) == (
        "runner-key",
        "production",
        True,
    )
    health, approval = sync.source.attestations
    assert (health.cluster, health.min_age, health.predicate_type) == ("staging", 3600, attest.HEALTHY)
    assert isinstance(health.policy, KeyPolicy) and health.secret_ref is None
    assert (approval.cluster, approval.policy, approval.secret_ref) == (None, None, "qa-keys")
    assert approval.predicate_type == "https://example.com/qa/v1"
    assert sync.source.needs_secrets


def test_a_keyless_requirement_uses_the_syncs_trusted_root(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        "  verify:\n    insecureSkip: true\n    trustedRoot: root.json\n    attestations:\n"
        "      - {predicateType: 'https://example.com/qa/v1', identityRegexp: '.*@example[.]com', "
        "issuer: 'https://issuer.example'}\n",
    )
    (sync,) = config.load(path).syncs
    (need,) = sync.source.attestations
    assert isinstance(need.policy, KeylessPolicy)
    assert need.policy.identity.regexp and need.policy.issuer.value == "https://issuer.example"
    # a relative path is relative to the configuration file, as kustomize reads paths
    assert need.policy.trusted_root == path.parent / "root.json"


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        ("{cluster: staging}", "attestations[0] needs exactly one of key, secretRef"),
        ("{cluster: staging, key: a.pub, secretRef: {name: k}}", "needs exactly one of key, secretRef"),
        ("{cluster: staging, key: a.pub, identity: a@b, issuer: x}", "and identity/issuer (keyless)"),
        (
            "{cluster: staging, identity: ci@example.com}",
            "exactly one of spec.verify.attestations[0].issuer and spec.verify.attestations[0].issuerRegexp",
        ),
        ("{secretRef: {name: k}}", "attestations[0].cluster is required for health attestations"),
        (
            "{predicateType: 'https://example.com/qa/v1', secretRef: {name: k}, minAge: 1h}",
            "minAge applies to health attestations only",
        ),
        # relative to the configuration file, whose directory the message names
        ("{cluster: staging, key: missing.pub}", "attestations[0].key: cannot read public key /"),
        ("{cluster: staging, secretRef: {name: k}, predicateType: qa}", "predicateType"),
        ("{cluster: staging, secretRef: {name: k}, minAge: soon}", "minAge"),
    ],
)
def test_bad_requirements_name_the_field(tmp_path: Path, requirement: str, message: str) -> None:
    path = _file(tmp_path, f"  verify:\n    insecureSkip: true\n    attestations: [{requirement}]\n")
    with pytest.raises(UsageError, match=r"syncs\.yaml") as caught:
        config.load(path)
    assert message in caught.value.message


def test_attest_needs_its_secret(tmp_path: Path) -> None:
    path = _file(tmp_path, "  attest: {onFailure: true}\n  verify: {insecureSkip: true}\n")
    with pytest.raises(UsageError, match="secretRef"):
        config.load(path)
