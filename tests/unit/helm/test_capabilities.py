"""Cluster capabilities: built from discovery, checked when read, intersected across clusters."""

from __future__ import annotations

import pytest

from lockgate.errors import VerificationError
from lockgate.helm import capabilities
from lockgate.helm.capabilities import Capabilities


def test_discovery_gives_each_group_version_and_each_of_its_kinds() -> None:
    caps = capabilities.observed(
        "prod",
        {"gitVersion": "v1.36.3", "major": "1", "minor": "36"},
        {"v1": ("ConfigMap", "Secret"), "apps/v1": ("Deployment",), "metrics.k8s.io/v1beta1": ()},
    )
    assert caps.kube_version == "v1.36.3"
    assert caps.api_versions == (
        "apps/v1",
        "apps/v1/Deployment",
        "metrics.k8s.io/v1beta1",
        "v1",
        "v1/ConfigMap",
        "v1/Secret",
    )
    odd = capabilities.observed("x", {"gitVersion": "", "major": "1", "minor": "35+"}, {})
    assert odd.kube_version == "v1.35.0"


def test_the_intersection_is_what_all_serve_at_the_lowest_version_and_says_the_rest() -> None:
    a = Capabilities("a", "v1.36.3", ("apps/v1", "mon.io/v1", "mon.io/v1/Monitor", "x.io/v1"))
    b = Capabilities("b", "v1.34.0-eks.1", ("apps/v1", "x.io/v1"))
    c = Capabilities("c", "v1.36.0", ("apps/v1", "mon.io/v1", "mon.io/v1/Monitor"))
    one = capabilities.intersection([a])
    assert (one.kube_version, one.api_versions, one.differences) == (a.kube_version, a.api_versions, ())
    all_three = capabilities.intersection([a, b, c])
    assert all_three.kube_version == "v1.34.0-eks.1"
    assert all_three.api_versions == ("apps/v1",)
    assert all_three.differences == (
        "Kubernetes versions differ (a v1.36.3, b v1.34.0-eks.1, c v1.36.0): rendered for v1.34.0-eks.1",
        "served by a, c, not by b: mon.io/v1, mon.io/v1/Monitor",
        "served by a, b, not by c: x.io/v1",
    )


def test_a_predicate_round_trips_and_a_malformed_one_is_refused_naming_where() -> None:
    caps = Capabilities("prod", "v1.36.3", ("apps/v1", "v1"))
    assert Capabilities.from_predicate(caps.predicate("2026-01-01T00:00:00Z"), "here") == caps
    for bad in (
        {"cluster": "prod", "kubeVersion": "latest", "apiVersions": []},
        {"cluster": "prod", "kubeVersion": "v1.36.3", "apiVersions": "apps/v1"},
        {"cluster": "prod", "kubeVersion": "v1.36.3", "apiVersions": ["apps/v1", "-x"]},
    ):
        with pytest.raises(VerificationError, match=r"^oci://r/caps:prod: the capabilities"):
            Capabilities.from_predicate(bad, "oci://r/caps:prod")
