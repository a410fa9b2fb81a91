"""``--provider`` and ``spec.provider``: where they land, and what is refused before any token is made."""

from __future__ import annotations

import pytest
import yaml

from lockgate.errors import UsageError
from lockgate.signing.options import VerifyOptions
from runner.pipeline import config

ECR = "oci://123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/app:v1"


def _sync(**spec: object) -> bytes:
    doc = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": "app"},
        "spec": {"url": ECR, "interval": "5m", "verify": {"insecureSkip": True}, **spec},
    }
    return yaml.safe_dump(doc).encode()


def test_the_flag_lands_in_the_source() -> None:
    options = config.sync_options(
        name="app", url=ECR, verify=VerifyOptions(insecure_skip=True), provider="aws"
    )
    assert options.source.provider == "aws" and options.source.identity_account is None


def test_the_flag_refuses_a_registry_the_provider_does_not_serve() -> None:
    with pytest.raises(UsageError, match=r"--provider: provider gcp serves .*123456789012\.dkr\.ecr"):
        config.sync_options(name="app", url=ECR, verify=VerifyOptions(insecure_skip=True), provider="gcp")


def test_a_sync_with_a_provider_and_a_service_account_uses_that_account_for_the_identity() -> None:
    (sync,) = config.parse(_sync(provider="aws", serviceAccountName="puller"), "s.yaml").syncs
    assert sync.source.provider == "aws" and sync.source.identity_account == "puller"
    assert sync.source.needs_secrets  # the cluster is read first: the ServiceAccount and its token


def test_without_a_provider_the_service_account_is_only_impersonated() -> None:
    (sync,) = config.parse(_sync(serviceAccountName="puller"), "s.yaml").syncs
    assert sync.source.provider == "generic" and sync.source.identity_account is None


def test_an_unknown_provider_is_refused_naming_the_field() -> None:
    with pytest.raises(UsageError, match=r"s\.yaml:\d+: Sync/app: spec\.provider"):
        config.parse(_sync(provider="oracle"), "s.yaml")
