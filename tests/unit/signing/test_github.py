"""GitHub identity pinning: which identities need githubRepository, and how a certificate's
GitHub claims are read (the raw extensions cosign matches, else the DER ones of a github.com
certificate). Certificates here are real X.509 certificates made with ``cryptography``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from lockgate import cli
from lockgate.errors import ExitCode, UsageError
from lockgate.signing import github
from lockgate.signing.github import GitHubClaims
from lockgate.signing.policy import CertificateFacts, Match

ROOT = Path(__file__).parents[3]
ACTIONS = Match(github.ACTIONS_ISSUER)
GOOGLE = Match("https://accounts.google.com")
OWN = "https://github.com/lockgate-dev/lockgate/.github/workflows/publish.yml@refs/tags/v1"

#: name: (identity, issuer, verdict): "refused", "warning" or "quiet" without githubRepository
AUDITS: dict[str, tuple[Match, Match, str]] = {
    "own_exact": (Match(OWN), ACTIONS, "refused"),
    "own_other_file": (Match(OWN.replace("publish.yml", "pr-diff.yml")), ACTIONS, "refused"),
    "own_fork": (Match(OWN.replace("lockgate-dev", "someone")), ACTIONS, "refused"),
    "own_owner_named_lockgate": (
        Match("https://github.com/lockgate/lockgate/.github/workflows/publish.yml@refs/heads/main"),
        ACTIONS,
        "refused",
    ),
    "own_regexp_escaped": (
        Match(r"https://github\.com/lockgate-dev/lockgate/\.github/workflows/publish\.yml@refs/.*", True),
        ACTIONS,
        "refused",
    ),
    "own_regexp_any_owner": (
        Match(r"https://github\.com/[^/]+/lockgate/\.github/workflows/publish\.yml@.+", True),
        ACTIONS,
        "refused",
    ),
    "own_regexp_wildcard_path": (
        Match(r"https://github\.com/lockgate-dev/lockgate/.+", True), ACTIONS, "refused"
    ),
    "own_whatever_the_issuer": (Match(OWN), GOOGLE, "refused"),
    "other_workflow": (
        Match("https://github.com/my-org/app/.github/workflows/release.yml@refs/heads/main"),
        ACTIONS,
        "warning",
    ),
    "other_workflow_regexp": (
        Match(r"https://github\.com/my-org/.+/\.github/workflows/.+", True), ACTIONS, "warning"
    ),
    "github_issuer_any_identity": (Match(".+", True), ACTIONS, "warning"),
    "github_issuer_regexp": (Match("x"), Match(r"https://token\.actions\..+", True), "warning"),
    "a_repository_called_lockgate_elsewhere": (
        Match("https://github.com/my-org/lockgate-app/.github/workflows/release.yml@refs/heads/main"),
        ACTIONS,
        "warning",
    ),
    "email": (Match("ci@example.com"), GOOGLE, "quiet"),
    "email_regexp": (Match(r".+@example\.com", True), GOOGLE, "quiet"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_audit(name: str) -> None:
    identity, issuer, verdict = AUDITS[name]

    def audit(pins: GitHubClaims) -> str | None:
        return github.audit(
            identity, issuer, pins, identity_name="identity", repository_name="githubRepository"
        )

    if verdict == "refused":
        with pytest.raises(UsageError, match="add githubRepository: OWNER/NAME"):
            audit(GitHubClaims())
    elif verdict == "warning":
        warning = audit(GitHubClaims())
        assert warning is not None and "githubRepository is not set" in warning
    else:
        assert audit(GitHubClaims()) is None
    # pinning the repository settles every case; other pins do not
    assert audit(GitHubClaims(repository="my-org/app")) is None
    others = GitHubClaims(ref="refs/heads/main", workflow_sha="0" * 40)
    if verdict == "refused":
        with pytest.raises(UsageError):
            audit(others)
    elif verdict == "warning":
        assert audit(others) is not None


def test_own_workflows_are_the_shipped_files() -> None:
    """The rule "any workflow of a repository named lockgate" holds because lockgate's
    .github/workflows/ holds only the reusable workflows of workflows/."""
    shipped = sorted(p.name for p in (ROOT / "workflows").glob("*.yml"))
    assert sorted(github.OWN_WORKFLOWS) == shipped
    assert sorted(p.name for p in (ROOT / ".github" / "workflows").iterdir()) == shipped


def test_names_per_surface() -> None:
    assert list(github.names("cosign").values()) == [
        "--certificate-github-workflow-repository",
        "--certificate-github-workflow-ref",
        "--certificate-github-workflow-trigger",
        "--certificate-github-workflow-sha",
        "--certificate-github-workflow-name",
    ]
    assert list(github.names("field", "spec.verify.").values()) == [
        "spec.verify.githubRepository",
        "spec.verify.githubRef",
        "spec.verify.githubWorkflowTrigger",
        "spec.verify.githubWorkflowSha",
        "spec.verify.githubWorkflowName",
    ]
    assert list(github.names("flag", "--verify-").values()) == [
        "--verify-github-repository",
        "--verify-github-ref",
        "--verify-github-workflow-trigger",
        "--verify-github-workflow-sha",
        "--verify-github-workflow-name",
    ]


def _der(text: str) -> bytes:
    data = text.encode()
    if len(data) < 0x80:
        return bytes([0x0C, len(data)]) + data
    size = len(data).to_bytes(2, "big")
    return bytes([0x0C, 0x82]) + size + data


def certificate(raw: dict[str, str], der: dict[str, str]) -> x509.Certificate:
    """A Fulcio-shaped certificate: ``raw`` extensions (``.1.2``-``.1.6``) hold the bytes,
    ``der`` ones (``.1.8`` on) a DER UTF8String; keys are the last OID arc."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "sigstore.dev")])
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([]))
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(minutes=10))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.UniformResourceIdentifier(
                        f"https://github.com/{OWN.removeprefix('https://github.com/')}"
                    )
                ]
            ),
            critical=True,
        )
    )
    for arc, value in raw.items():
        oid = x509.ObjectIdentifier(f"1.3.6.1.4.1.57264.1.{arc}")
        builder = builder.add_extension(x509.UnrecognizedExtension(oid, value.encode()), critical=False)
    for arc, value in der.items():
        oid = x509.ObjectIdentifier(f"1.3.6.1.4.1.57264.1.{arc}")
        builder = builder.add_extension(x509.UnrecognizedExtension(oid, _der(value)), critical=False)
    return builder.sign(key, hashes.SHA256())


GITHUB_DER = {
    "12": "https://github.com/my-org/app",
    "13": "a" * 40,
    "14": "refs/heads/main",
    "20": "push",
    "18": "https://github.com/my-org/app/.github/workflows/release.yml@refs/heads/main",
}
RAW = {"2": "workflow_dispatch", "3": "b" * 40, "4": "release", "5": "my-org/app", "6": "refs/tags/v1"}


def test_the_raw_extensions_are_read_as_cosign_reads_them() -> None:
    found = CertificateFacts.of(certificate(RAW, GITHUB_DER)).github
    assert found == GitHubClaims(
        repository="my-org/app",
        ref="refs/tags/v1",
        workflow_trigger="workflow_dispatch",
        workflow_sha="b" * 40,
        workflow_name="release",
    )


def test_without_them_a_github_com_certificate_falls_back_to_the_der_extensions() -> None:
    found = CertificateFacts.of(certificate({}, GITHUB_DER)).github
    assert found == GitHubClaims(
        repository="my-org/app", ref="refs/heads/main", workflow_trigger="push", workflow_sha="a" * 40
    )


def test_another_cis_certificate_never_satisfies_a_github_pin() -> None:
    gitlab = {
        "12": "https://gitlab.com/my-org/app",
        "13": "a" * 40,
        "14": "refs/heads/main",
        "20": "push",
    }
    facts = CertificateFacts.of(certificate({}, gitlab))
    assert facts.github == GitHubClaims()
    pinned = GitHubClaims(repository="my-org/app", ref="refs/heads/main", workflow_trigger="push")
    assert facts.github.mismatches(pinned) == [
        "githubRepository: expected 'my-org/app', found None",
        "githubRef: expected 'refs/heads/main', found None",
        "githubWorkflowTrigger: expected 'push', found None",
    ]


def test_a_long_der_value_is_read_whole() -> None:
    long_name = "my-org/" + "a" * 200
    found = CertificateFacts.of(certificate({}, GITHUB_DER | {"12": f"https://github.com/{long_name}"}))
    assert found.github.repository == long_name


def test_verify_refuses_lockgates_own_workflow_without_the_repository(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before any registry request: the policy is refused as it is read (exit 2)."""
    code = cli.main(
        [
            "verify",
            "oci://127.0.0.1:1/app:1.0.0",
            "--certificate-identity",
            OWN,
            "--certificate-oidc-issuer",
            github.ACTIONS_ISSUER,
        ]
    )
    assert code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"error: --certificate-identity '{OWN}' is one of lockgate's reusable workflows")
    assert "add --certificate-github-workflow-repository OWNER/NAME" in err
