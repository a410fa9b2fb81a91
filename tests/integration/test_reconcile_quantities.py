"""Quantities against the real API server (issue 36, Low): it stores ``cpu: 1000`` as ``"1k"``.

A change to a quantity reads in the manifest's spelling (``"10m" -> 1000``), the next pass of
the same manifest finds nothing changed (no drift): quantities are compared by value
(``lockgate.diff.quantity``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.reconcile_support import deployment, dump, get, namespace, push_tree, run_pass
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def _app(ns: str, cpu: Any) -> dict[str, str]:
    web = deployment("web", ns)
    web["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": cpu, "memory": "1024Mi"}
    }
    return {"a.yaml": dump(namespace(ns), web)}


def test_a_quantity_change_reads_as_written_and_the_servers_spelling_is_no_drift(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-r"
    first = run_pass(cluster, push_tree(registry, unique, _app(unique, "10m"), "v1"), unique, runner)
    assert first.error is None, first.error
    second = run_pass(cluster, push_tree(registry, unique, _app(unique, 1000), "v2"), unique, runner)
    assert second.error is None, second.error
    (entry,) = [e for e in second.changeset.entries if e.key.kind == "Deployment"]
    assert [str(c) for c in entry.changes] == [
        'spec.template.spec.containers[name=app].resources.limits.cpu: "10m" -> 1000'
    ]
    live = get(cluster, "deployment", "web", unique)
    assert live is not None
    limits = live["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"cpu": "1k", "memory": "1Gi"}  # the server's spelling
    again = run_pass(cluster, push_tree(registry, unique, _app(unique, 1000), "v2"), unique, runner)
    assert again.error is None, again.error
    # the manifest's 1000 and the live "1k" are one value: nothing changed, nothing drifted
    assert {e.action.value for e in again.changeset.entries} == {"unchanged"}
