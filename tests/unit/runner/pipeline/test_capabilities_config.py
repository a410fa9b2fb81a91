"""A Runner's spec.capabilities, checked when the file is loaded, every problem at once."""

from __future__ import annotations

import pytest

from lockgate.errors import UsageError
from runner.pipeline import config

SYNC = (
    "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata:\n  name: a\nspec:\n"
    "  url: oci://127.0.0.1:9/app:v1\n  interval: 5m\n  verify: {insecureSkip: true}\n"
)


def runner(spec: str) -> bytes:
    return (
        f"apiVersion: lockgate.dev/v1alpha1\nkind: Runner\nmetadata:\n  name: r\nspec:\n{spec}---\n{SYNC}"
    ).encode()


def test_capabilities_load_with_a_repository_and_a_key() -> None:
    loaded = config.parse(
        runner(
            "  clusterName: prod-eu\n  capabilities:\n    url: oci://r.example/caps\n"
            "    signingSecretRef: {name: key}\n    interval: 1m\n"
        ),
        "c.yaml",
    )
    assert loaded.runner.capabilities.url == "oci://r.example/caps"
    assert loaded.runner.capabilities.signing_secret_ref == "key"
    assert loaded.runner.capabilities.interval == 60.0


def test_a_tag_a_missing_key_and_a_cluster_name_that_is_no_tag_are_named_together() -> None:
    with pytest.raises(UsageError) as caught:
        config.parse(
            runner("  clusterName: 'prod:eu'\n  capabilities:\n    url: oci://r.example/caps:v1\n"), "c.yaml"
        )
    message = caught.value.message
    assert "c.yaml:7: spec.capabilities.signingSecretRef: required with url" in message, message
    assert "c.yaml:8: spec.capabilities.url: name the repository only" in message, message
    assert "c.yaml:6: spec.clusterName: clusterName 'prod:eu' is not a valid OCI tag" in message, message
