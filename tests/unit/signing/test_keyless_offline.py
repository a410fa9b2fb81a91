"""Keyless verification, offline, with a real Sigstore bundle and the trusted root that signed it.

The bundle (vendored from sigstore-python's test assets, see tests/data/sigstore/README.md)
is a DSSE in-toto statement signed on Sigstore's staging instance by a GitHub Actions
workflow. Its predicate is SLSA provenance, so the positive cases ask for that predicate
type; the default policy (cosign's signature predicate) must refuse it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from sigstore.models import TrustedRoot
from sigstore.verify import Verifier

from lockgate.errors import VerificationError
from lockgate.signing.github import GitHubClaims
from lockgate.signing.policy import KeylessPolicy, Match
from lockgate.signing.verify import trust_root_verifier, verify_keyless_bundle

DATA = Path(__file__).parents[2] / "data" / "sigstore"
BUNDLE = (DATA / "dsse-staging.sigstore.json").read_bytes()
SUBJECT = "sha256:a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf"
IDENTITY = (
    "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/"
    ".github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
)
ISSUER = "https://token.actions.githubusercontent.com"
SLSA = "https://slsa.dev/provenance/v1"
#: what the certificate's raw GitHub extensions (.1.2-.1.6) say about the run that signed
RUN = GitHubClaims(
    repository="sigstore-conformance/extremely-dangerous-public-oidc-beacon",
    ref="refs/heads/main",
    workflow_trigger="workflow_dispatch",
    workflow_sha="977e8d08554ca9bda279c96e91be2119fb67c730",
    workflow_name="Extremely dangerous OIDC beacon",
)
#: each claim pinned to another value: (pin, the field named, the value found)
OTHER = {
    "repository": ("acme/app", "githubRepository", RUN.repository),
    "ref": ("refs/heads/feature", "githubRef", RUN.ref),
    "workflow_trigger": ("push", "githubWorkflowTrigger", RUN.workflow_trigger),
    "workflow_sha": ("0" * 40, "githubWorkflowSha", RUN.workflow_sha),
    "workflow_name": ("Release", "githubWorkflowName", RUN.workflow_name),
}


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier(trusted_root=TrustedRoot.from_file(str(DATA / "staging-trusted-root.json")))


def policy(**changes: object) -> KeylessPolicy:
    values: dict[str, object] = {"identity": Match(IDENTITY), "issuer": Match(ISSUER), "predicate_type": SLSA}
    values.update(changes)
    return KeylessPolicy(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name, accepted",
    [
        ("exact identity and issuer", policy()),
        (
            "identity regexp",
            policy(identity=Match(r"https://github\.com/sigstore-conformance/.*", regexp=True)),
        ),
        (
            "issuer regexp",
            policy(issuer=Match(r"https://token\.actions\.githubusercontent\.com", regexp=True)),
        ),
        ("all five github claims", policy(github=RUN)),
        *[(f"github {name}", policy(github=GitHubClaims(**{name: getattr(RUN, name)}))) for name in OTHER],
    ],
)
def test_accepts(name: str, accepted: KeylessPolicy, verifier: Verifier) -> None:
    identity, issuer = verify_keyless_bundle(BUNDLE, accepted, digest=SUBJECT, verifier=verifier)
    assert identity == IDENTITY
    assert issuer == ISSUER


@pytest.mark.parametrize(
    "name, refused, digest, message",
    [
        (
            "other identity",
            policy(identity=Match("https://github.com/acme/app/.github/workflows/ci.yml@refs/heads/main")),
            SUBJECT,
            "identity: expected 'https://github.com/acme/app/.*', found 'https://github.com/sigstore-conf",
        ),
        (
            "other issuer",
            policy(issuer=Match("https://accounts.google.com")),
            SUBJECT,
            "issuer: expected 'https://accounts.google.com', found 'https://token.actions.githubusercontent.com'",
        ),
        (
            "unanchored regexp is anchored",
            policy(identity=Match("sigstore-conformance", regexp=True)),
            SUBJECT,
            "identity: expected matching /sigstore-conformance/",
        ),
        *[
            (
                f"other github {name}",
                policy(github=GitHubClaims(**{name: pin})),
                SUBJECT,
                re.escape(f"{field}: expected {pin!r}, found {found!r}"),
            )
            for name, (pin, field, found) in OTHER.items()
        ],
        (
            "one claim of five differs",
            policy(github=replace(RUN, ref="refs/heads/feature")),
            SUBJECT,
            "policy: githubRef: expected 'refs/heads/feature', found 'refs/heads/main'$",
        ),
        ("moved to another digest", policy(), "sha256:" + "00" * 32, "made for another artifact"),
        (
            "not a cosign signature",
            policy(predicate_type="https://sigstore.dev/cosign/sign/v1"),
            SUBJECT,
            "predicate type 'https://slsa.dev/provenance/v1'",
        ),
    ],
)
def test_refuses(name: str, refused: KeylessPolicy, digest: str, message: str, verifier: Verifier) -> None:
    with pytest.raises(VerificationError, match=message):
        verify_keyless_bundle(BUNDLE, refused, digest=digest, verifier=verifier)


def test_refuses_a_bundle_from_another_trust_root() -> None:
    production = trust_root_verifier(policy(offline=True))
    with pytest.raises(VerificationError):
        verify_keyless_bundle(BUNDLE, policy(), digest=SUBJECT, verifier=production)


@pytest.mark.parametrize(
    "name, bundle, message",
    [
        ("not json", b"{", "malformed"),
        ("tampered payload", BUNDLE.replace(b'"payload": "eyJ', b'"payload": "eyK', 1), "invalid signature"),
    ],
)
def test_refuses_corrupt_bundles(name: str, bundle: bytes, message: str, verifier: Verifier) -> None:
    assert bundle != BUNDLE
    with pytest.raises(VerificationError, match=message):
        verify_keyless_bundle(bundle, policy(), digest=SUBJECT, verifier=verifier)


def test_trusted_root_file_is_loaded(tmp_path: Path) -> None:
    verify_keyless_bundle(
        BUNDLE,
        policy(),
        digest=SUBJECT,
        verifier=trust_root_verifier(policy(trusted_root=DATA / "staging-trusted-root.json")),
    )
    broken = tmp_path / "root.json"
    broken.write_text("{}")
    with pytest.raises(VerificationError, match="cannot load"):
        trust_root_verifier(policy(trusted_root=broken))
