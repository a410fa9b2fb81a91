"""One constructor of verification policies, spelled as each place that asks for one."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.errors import UsageError
from lockgate.signing import keys
from lockgate.signing.github import GitHubClaims
from lockgate.signing.options import (
    VERIFY_FLAGS,
    Spelling,
    VerifyOptions,
    build_policy,
    field_spelling,
    policy_warnings,
)
from lockgate.signing.policy import KeylessPolicy, KeyPolicy

#: a made-up document's field names: errors must use whatever spelling they are given
FIELDS = Spelling(
    key="verify.publicKey",
    identity="verify.who",
    identity_regexp="verify.whoPattern",
    issuer="verify.issuedBy",
    issuer_regexp="verify.issuedByPattern",
    insecure_skip="verify.unsigned",
)


@pytest.mark.parametrize(
    ("options", "spelling", "says"),
    [
        (
            VerifyOptions(identity="me", issuer="x", insecure_skip=True),
            FIELDS,
            "verify.unsigned cannot",
        ),
        (VerifyOptions(key=Path("k.pub"), issuer="x"), VERIFY_FLAGS, "--key cannot be combined"),
        (
            VerifyOptions(identity="me", identity_regexp="m.*", issuer="x"),
            FIELDS,
            "exactly one of verify.who and verify.whoPattern",
        ),
        (VerifyOptions(identity="me"), VERIFY_FLAGS, "exactly one of --certificate-oidc-issuer and"),
    ],
    ids=["insecure-with-policy", "key-with-keyless", "exact-and-regexp", "no-issuer"],
)
def test_bad_combinations_name_what_to_fix(options: VerifyOptions, spelling: Spelling, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        build_policy(options, spelling)


def test_no_policy_is_none_unless_required() -> None:
    assert build_policy(VerifyOptions(), FIELDS) is None
    assert build_policy(VerifyOptions(insecure_skip=True), FIELDS) is None
    with pytest.raises(UsageError, match="no verification policy: pass --key, or --certificate-identity"):
        build_policy(VerifyOptions(), VERIFY_FLAGS, required=True)


def test_key_and_keyless_policies(tmp_path: Path) -> None:
    pub = tmp_path / "cosign.pub"
    pub.write_bytes(keys.generate_key_pair(b"pw").public_pem)
    key_policy = build_policy(VerifyOptions(key=pub), VERIFY_FLAGS)
    assert isinstance(key_policy, KeyPolicy) and key_policy.source == str(pub)
    keyless = build_policy(
        VerifyOptions(
            identity_regexp="https://github.com/org/.+",
            issuer="https://issuer",
            github=GitHubClaims(ref="refs/heads/main"),
        ),
        VERIFY_FLAGS,
    )
    assert isinstance(keyless, KeylessPolicy)
    assert keyless.identity.regexp and not keyless.issuer.regexp
    assert keyless.github == GitHubClaims(ref="refs/heads/main")


OWN = "https://github.com/lockgate-dev/lockgate/.github/workflows/publish.yml@refs/tags/v1"
ACTIONS = "https://token.actions.githubusercontent.com"


@pytest.mark.parametrize(
    ("spelling", "identity", "add"),
    [
        (VERIFY_FLAGS, "--certificate-identity", "add --certificate-github-workflow-repository OWNER/NAME"),
        (
            field_spelling("spec.verify."),
            "spec.verify.identity",
            "add spec.verify.githubRepository: OWNER/NAME",
        ),
        (
            field_spelling("spec.verify.attestations[0]."),
            "spec.verify.attestations[0].identity",
            "add spec.verify.attestations[0].githubRepository: OWNER/NAME",
        ),
    ],
    ids=["verify", "sync", "attestation"],
)
def test_lockgates_own_workflow_without_the_repository_is_refused_spelled_as_written(
    spelling: Spelling, identity: str, add: str
) -> None:
    with pytest.raises(UsageError) as refused:
        build_policy(VerifyOptions(identity=OWN, issuer=ACTIONS), spelling)
    message = refused.value.message
    assert message.startswith(f"{identity} '{OWN}' is one of lockgate's reusable workflows")
    assert "signs for every repository that calls it" in message and add in message
    pinned = build_policy(
        VerifyOptions(identity=OWN, issuer=ACTIONS, github=GitHubClaims(repository="my-org/app")), spelling
    )
    assert isinstance(pinned, KeylessPolicy) and pinned.github.repository == "my-org/app"
    assert policy_warnings(pinned, spelling) == ()


def test_another_workflow_identity_without_the_repository_loads_with_a_warning() -> None:
    options = VerifyOptions(
        identity_regexp=r"https://github\.com/my-org/ci/\.github/workflows/build\.yml@.+", issuer=ACTIONS
    )
    policy = build_policy(options, field_spelling("spec.verify."))
    (warning,) = policy_warnings(policy, field_spelling("spec.verify."))
    assert warning.startswith("spec.verify.identityRegexp 'https://github")
    assert "is a GitHub Actions workflow identity and spec.verify.githubRepository is not set" in warning
    assert "a reusable workflow signs for every repository that calls it" in warning
    assert warning.endswith("set spec.verify.githubRepository: OWNER/NAME")
    # an e-mail identity, a key, no policy: nothing to say
    email = build_policy(
        VerifyOptions(identity="me@example.com", issuer="https://accounts.google.com"), FIELDS
    )
    assert policy_warnings(email, FIELDS) == ()
    assert policy_warnings(None, FIELDS) == ()


def test_a_key_with_github_pins_names_them() -> None:
    options = VerifyOptions(key=Path("k.pub"), github=GitHubClaims(ref="refs/heads/main"))
    with pytest.raises(UsageError) as refused:
        build_policy(options, VERIFY_FLAGS)
    assert refused.value.message == "--key cannot be combined with --certificate-github-workflow-ref"
