"""``lockgate attest`` and ``lockgate verify --attestation`` as a user runs them (registry of the world).

A person attests a manual approval with their own predicate type; CI checks it with
``verify --attestation``; cosign accepts it; refusals have the verification exit code.
"""

from __future__ import annotations

import json
from pathlib import Path

from lockgate.errors import ExitCode
from tests.integration.signing_support import push_artifact
from tests.integration.test_attest import cosign_verify_attestation
from tests.integration.test_signing_cli import lockgate
from tests.world.registry import Registry

QA = "https://example.com/attestations/qa-approved/v1"


def test_attest_by_hand_then_verify_from_ci(registry: Registry, unique: str, tmp_path: Path) -> None:
    assert lockgate("keygen", "--output-key-prefix", "qa", cwd=tmp_path).returncode == 0
    ref = push_artifact(registry, unique)
    (tmp_path / "approval.json").write_text(json.dumps({"approvedBy": "alice", "ticket": "QA-12"}))
    args = ("attest", ref, "--key", "qa.key", "--predicate-type", QA, "--predicate", "approval.json")
    first = lockgate(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"Attested {QA} of {ref}")
    again = lockgate(*args, "-o", "json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "unchanged"

    verified = lockgate("verify", ref, "--key", "qa.pub", "--attestation", QA, "-o", "json", cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr
    (found,) = json.loads(verified.stdout)["attestations"]
    assert found["predicate"] == {"approvedBy": "alice", "ticket": "QA-12"} and found["predicateType"] == QA
    text = lockgate("verify", ref, "--key", "qa.pub", "--attestation", QA, cwd=tmp_path)
    assert text.returncode == 0 and '"approvedBy": "alice"' in text.stdout
    accepted = cosign_verify_attestation(ref, tmp_path / "qa.pub", tmp_path, QA)
    assert accepted.returncode == 0, accepted.stderr

    other = lockgate("verify", ref, "--key", "qa.pub", "--attestation", QA + "x", cwd=tmp_path)
    assert other.returncode == ExitCode.VERIFICATION
    assert f"no attestation of type {QA}x" in other.stderr and QA in other.stderr
    assert lockgate("keygen", "--output-key-prefix", "other", cwd=tmp_path).returncode == 0
    wrong = lockgate("verify", ref, "--key", "other.pub", "--attestation", QA, cwd=tmp_path)
    assert wrong.returncode == ExitCode.VERIFICATION and "not signed by other.pub" in wrong.stderr


def test_attest_refuses_bad_input(registry: Registry, unique: str, tmp_path: Path) -> None:
    assert lockgate("keygen", cwd=tmp_path).returncode == 0
    ref = push_artifact(registry, unique)
    (tmp_path / "list.json").write_text("[1]")
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "ok.json").write_text("{}")
    cases = [
        ((registry.oci(unique, ":latest"), "--predicate", "ok.json"), "by digest"),
        ((ref, "--predicate", "list.json"), "must hold a JSON object"),
        ((ref, "--predicate", "broken.json"), "broken.json is not valid JSON"),
        (
            (ref, "--predicate", "missing.json"),
            "cannot read --predicate missing.json: no such file or directory",
        ),
    ]
    for extra, message in cases:
        failed = lockgate("attest", "--key", "cosign.key", "--predicate-type", QA, *extra, cwd=tmp_path)
        assert failed.returncode == ExitCode.USAGE, failed.stderr
        assert message in failed.stderr and "Traceback" not in failed.stderr
    half = lockgate("verify", ref, "--certificate-identity", "a@b", "--attestation", QA, cwd=tmp_path)
    assert half.returncode == ExitCode.USAGE and "--certificate-oidc-issuer" in half.stderr
    neither = lockgate("attest", ref, "--predicate-type", QA, "--predicate", "ok.json", cwd=tmp_path)
    assert neither.returncode == ExitCode.USAGE and "exactly one of --key FILE or --keyless" in neither.stderr
