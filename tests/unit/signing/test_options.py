"""One constructor of verification policies, spelled as each place that asks for one."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.errors import UsageError
from lockgate.signing import keys
from lockgate.signing.options import VERIFY_FLAGS, Spelling, VerifyOptions, build_policy
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
            identity_regexp="https://github.com/org/.+", issuer="https://issuer", github_ref="refs/heads/main"
        ),
        VERIFY_FLAGS,
    )
    assert isinstance(keyless, KeylessPolicy)
    assert keyless.identity.regexp and not keyless.issuer.regexp and keyless.github_ref == "refs/heads/main"
