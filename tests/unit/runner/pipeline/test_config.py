"""Flags and Sync documents become the same options; verification is mandatory unless skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.errors import UsageError
from lockgate.signing.policy import KeylessPolicy
from runner.pipeline import config


@pytest.mark.parametrize(
    ("text", "seconds"), [("5m", 300), ("30s", 30), ("1h30m", 5400), ("90", 90), ("1m30s", 90)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert config.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5x", "m", "-1s"])
def test_bad_duration(text: str) -> None:
    with pytest.raises(UsageError):
        config.parse_duration(text)


def test_sync_documents(tmp_path: Path) -> None:
    path = tmp_path / "syncs.yaml"
    path.write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
        "spec:\n  url: oci://127.0.0.1:5000/web\n  prune: true\n  timeout: 2m\n  targetNamespace: app\n"
        "  verify: {insecureSkip: true}\n"
        "---\napiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: db}\n"
        "spec:\n  url: oci://127.0.0.1:5000/db\n  semver: '>=1.0.0'\n  verify: {insecureSkip: true}\n"
    )
    web, db = config.load(path, dry_run=True)
    assert (web.name, web.prune, web.timeout, web.target_namespace, web.dry_run) == (
        "web",
        True,
        120,
        "app",
        True,
    )
    assert (db.name, db.source.semver, db.prune) == ("db", ">=1.0.0", False)


def _one_sync(tmp_path: Path, verify: str) -> Path:
    """A file holding one Sync ``web`` whose ``spec.verify`` is ``verify`` (flow YAML)."""
    path = tmp_path / "syncs.yaml"
    path.write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
        f"spec:\n  url: oci://127.0.0.1:5000/web\n  verify: {verify}\n"
    )
    return path


def test_sync_document_errors_name_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "syncs.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    with pytest.raises(UsageError, match=r"syncs.yaml:1: expected apiVersion lockgate.dev/v1alpha1"):
        config.load(path)


def test_sync_policy_errors_name_the_file_line_and_field(tmp_path: Path) -> None:
    path = _one_sync(tmp_path, "{identity: me, insecureSkip: true}")
    with pytest.raises(UsageError, match=r"syncs.yaml:1: spec.verify.insecureSkip cannot be combined"):
        config.load(path)


def test_sync_verify_regexp_is_go_syntax_and_errors_name_the_field(tmp_path: Path) -> None:
    path = _one_sync(
        tmp_path, "{identityRegexp: '^https://github\\.com/(?=acme)', issuer: https://issuer.test}"
    )
    with pytest.raises(UsageError) as caught:
        config.load(path)
    assert caught.value.message.startswith(
        f"{path}:1: spec.verify.identityRegexp: invalid regular expression '^https://github\\.com/(?=acme)': "
        "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"
    )


def test_sync_verify_identity_regexp_matches_the_whole_value_with_go_classes(tmp_path: Path) -> None:
    path = _one_sync(tmp_path, "{identityRegexp: '[[:alpha:]]+@example\\.com', issuer: https://issuer.test}")
    (sync,) = config.load(path)
    policy = sync.source.policy
    assert isinstance(policy, KeylessPolicy)
    assert policy.identity.matches("ci@example.com")
    assert not policy.identity.matches("ci@example.com.evil.test")
