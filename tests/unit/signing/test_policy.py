"""Keyless expectations: a regular expression is Go's (as cosign's) and must match the whole value."""

from __future__ import annotations

import pytest

from lockgate import cli
from lockgate.errors import ExitCode, UsageError
from lockgate.signing.policy import Match

WORKFLOW = "https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1.2.0"

#: name: (expected, found, matches); built in the test, so a refused pattern fails only its case
MATCHES: dict[str, tuple[tuple[str, bool], str | None, bool]] = {
    "exact_equal": ((WORKFLOW, False), WORKFLOW, True),
    "exact_is_not_a_pattern": (("https://github.com/acme/.*", False), WORKFLOW, False),
    "regexp_whole_value": ((r"https://github\.com/acme/app/.*@refs/tags/v.*", True), WORKFLOW, True),
    "regexp_prefix_only_does_not_match": ((r"https://github\.com/acme/app", True), WORKFLOW, False),
    "regexp_suffix_only_does_not_match": ((r"@refs/tags/v1\.2\.0", True), WORKFLOW, False),
    "regexp_alternation_is_anchored_as_a_whole": (("a|ab", True), "ab", True),
    "regexp_posix_class": ((r"[[:alpha:]]+@example\.com", True), "ci@example.com", True),
    "regexp_unicode_class": ((r"\pL+@example\.com", True), "été@example.com", True),
    "regexp_digits_are_ascii": ((r"build-\d+", True), "build-١٢", False),
    "regexp_dollar_is_end_of_text": ((r"ci@example\.com$", True), "ci@example.com\n", False),
    "nothing_found": ((".*", True), None, False),
}


@pytest.mark.parametrize("name", sorted(MATCHES))
def test_match(name: str) -> None:
    (value, regexp), found, matches = MATCHES[name]
    assert Match(value, regexp=regexp).matches(found) is matches


@pytest.mark.parametrize(
    ("pattern", "go_error"),
    [
        (r"https://github\.com/(?=acme)", "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"),
        (r"(ci)@\1", "error parsing regexp: invalid escape sequence: `\\1`"),
        (r"ci++", "error parsing regexp: invalid nested repetition operator: `++`"),
    ],
)
def test_regexp_go_refuses_is_a_usage_error_in_gos_words(pattern: str, go_error: str) -> None:
    with pytest.raises(UsageError) as caught:
        Match(pattern, regexp=True)
    assert f"invalid regular expression '{pattern}': {go_error}" in caught.value.message


def test_verify_names_the_flag_of_a_refused_regexp(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["verify", "oci://127.0.0.1:1/app:1.0.0", "--certificate-oidc-issuer", "https://issuer.test"]
    code = cli.main([*args, "--certificate-identity-regexp", "ci@(?!evil)"])
    assert code == ExitCode.USAGE
    assert capsys.readouterr().err.startswith(
        "error: --certificate-identity-regexp: invalid regular expression 'ci@(?!evil)': "
        "error parsing regexp: invalid or unsupported Perl syntax: `(?!`"
    )


def _pem() -> bytes:
    from cryptography.hazmat.primitives.asymmetric import ec

    from lockgate.signing import keys

    return keys.public_key_pem(ec.generate_private_key(ec.SECP256R1()).public_key())


def test_a_key_set_names_each_key_by_its_entry() -> None:
    from lockgate.signing.policy import KeySetPolicy

    policy = KeySetPolicy.from_pems({"b.pub": _pem(), "a.pub": _pem()}, source="Secret/ns/keys")
    assert [k.source for k in policy.keys] == ["Secret/ns/keys[a.pub]", "Secret/ns/keys[b.pub]"]
    with pytest.raises(UsageError, match=r"^Secret/ns/keys\[c.pub\] is not a PEM public key$"):
        KeySetPolicy.from_pems({"a.pub": _pem(), "c.pub": b"garbage"}, source="Secret/ns/keys")
    with pytest.raises(UsageError, match="no public keys"):
        KeySetPolicy((), source="Secret/ns/keys")
