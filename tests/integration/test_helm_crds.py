"""A chart's crds/ arrive whole: rendered into the artifact, applied before the custom resources
that need them, and never pruned (as Helm never deletes them) unless the Sync says pruneCRDs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.integration.artifacts_support import lockgate
from tests.integration.helm_support import helm_env, operator_chart, pulled_docs, push_render
from tests.integration.reconcile_support import get, run_pass
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = [pytest.mark.world]

KEEP = {"helm.sh/resource-policy": "keep"}


def _gone(cluster: Cluster, kind: str, name: str, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if get(cluster, kind, name) is None:
            return True
        time.sleep(0.5)
    return False


def test_a_chart_s_crds_arrive_first_and_its_custom_resources_become_healthy(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    group = f"{unique}.example.com"
    chart = operator_chart(tmp_path / "operator", group)
    cluster.kubectl("create", "namespace", unique)
    ref = registry.oci(unique, ":v1")
    pushed = push_render(chart, ref, "--namespace", unique)
    assert pushed.code == 0, pushed.err
    assert "2 CRD(s) from crds/ are applied first and kept as Helm keeps them" in pushed.err
    docs = pulled_docs(ref, tmp_path / "out")
    kinds = [(d["kind"], d["metadata"]["name"]) for d in docs]
    # both documents of crds/crds.yaml, first, each marked as Helm keeps it
    assert kinds[:2] == [
        ("CustomResourceDefinition", f"widgets.{group}"),
        ("CustomResourceDefinition", f"gadgets.{group}"),
    ]
    assert [d["metadata"]["annotations"] for d in docs[:2]] == [KEEP, KEEP]
    assert ("Widget", "first") in kinds
    same = lockgate("diff", str(chart), ref, "--render", "--namespace", unique, env=helm_env())
    assert same.code == 0 and "no differences" in same.out, same.out + same.err

    # one artifact on a cluster that has never seen the CRD: the pass creates it, waits until it is
    # served, then applies the Widget, and everything is healthy
    assert get(cluster, "crd", f"widgets.{group}") is None
    result = run_pass(cluster, ref, unique, f"{unique}-r", prune=True, wait=True, timeout="120s")
    assert result.error is None, result.error
    widget = get(cluster, f"widgets.{group}", "first", unique)
    assert widget is not None and widget["spec"] == {"size": 3}
    assert all(h.status.value == "Current" for h in result.health.values()), result.health

    # the next release leaves the CRDs out and the Widget: the Widget is pruned, the CRDs stay
    # (orphaned: no longer members), as Helm never deletes a chart's CRDs
    skipped = push_render(
        chart, registry.oci(unique, ":v2"), "--namespace", unique, "--skip-crds", "--set", "widget=false"
    )
    assert skipped.code == 0, skipped.err
    assert "CRD(s) from crds/" not in skipped.err
    second = run_pass(cluster, registry.oci(unique, ":v2"), unique, f"{unique}-r", prune=True, wait=True)
    assert second.error is None, second.error
    assert get(cluster, f"widgets.{group}", "first", unique) is None
    for plural in ("widgets", "gadgets"):
        kept = get(cluster, "crd", f"{plural}.{group}")
        assert kept is not None and "deletionTimestamp" not in kept["metadata"]
        assert "applyset.kubernetes.io/part-of" not in (kept["metadata"].get("labels") or {})
    reasons = {str(e.key): e.reason for e in second.changeset.entries}
    assert any(
        "kept by Helm's helm.sh/resource-policy: keep" in reason and f"widgets.{group}" in key
        for key, reason in reasons.items()
    ), reasons


def test_prune_crds_deletes_the_chart_s_crds_that_left(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    group = f"{unique}.example.com"
    chart = operator_chart(tmp_path / "operator", group)
    cluster.kubectl("create", "namespace", unique)
    assert push_render(chart, registry.oci(unique, ":v1"), "--namespace", unique).code == 0
    first = run_pass(cluster, registry.oci(unique, ":v1"), unique, f"{unique}-r", prune=True, prune_crds=True)
    assert first.error is None, first.error
    assert get(cluster, "crd", f"widgets.{group}") is not None
    v2 = registry.oci(unique, ":v2")
    assert push_render(chart, v2, "--namespace", unique, "--skip-crds", "--set", "widget=false").code == 0
    second = run_pass(cluster, v2, unique, f"{unique}-r", prune=True, prune_crds=True)
    assert second.error is None, second.error
    assert _gone(cluster, "crd", f"widgets.{group}") and _gone(cluster, "crd", f"gadgets.{group}")
