"""Stopping ``serve`` while a pass waits for health: the wait ends at once, the pass is abandoned.

Against the world: the artifact's Deployment asks for a node no cluster has, so the pass
applies and then waits (its timeout is ten minutes). SIGTERM must end that wait at once
(nothing is left to write), record the pass as abandoned (not ``Succeeded``) and exit 0
well within the grace period, with "stopped" as the last log line.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.integration.history_support import lockgate
from tests.integration.reconcile_support import configmap, deployment, dump, get, namespace, push_tree
from tests.integration.serve_support import start_serve, sync_doc
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

#: serve_support starts serve with --grace-period=20s; "well within" it
QUICK = 5.0


def test_sigterm_during_a_health_wait_stops_at_once_and_records_the_pass_abandoned(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    stuck = deployment("web", ns, node_selector={"no-such-node": "true"})
    url = push_tree(
        registry, unique, {"a.yaml": dump(namespace(ns), configmap("cfg", ns, {"v": "1"}), stuck)}
    )
    served = start_serve(
        cluster,
        tmp_path,
        [sync_doc("app", url.split("@")[0], runner_ns, wait=True, timeout="10m")],
        runner={"namespace": runner_ns},
    )
    try:
        served.wait_event(lambda e: e.get("msg") == "pass started", what="the pass")
        deadline = time.monotonic() + 60
        while get(cluster, "deployment", "web", ns) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert get(cluster, "deployment", "web", ns) is not None, served.tail()
        time.sleep(2)  # applied and recorded: the pass is in its health wait now
        assert not [e for e in served.events() if e.get("msg") == "pass finished"], served.tail()
    finally:
        started = time.monotonic()
        code = served.stop(signal.SIGTERM)
        took = time.monotonic() - started
    assert code == 0, served.tail()
    assert took < QUICK, f"serve took {took:.1f}s to stop during a health wait:\n{served.tail()}"
    events = served.events()
    assert events[-1]["msg"] == "stopped" and events[-1]["clean"] is True, served.tail()
    (finished,) = [e for e in events if e.get("msg") == "pass finished"]
    assert finished["outcome"] == "abandoned" and "shutting down" in finished["error"], finished

    doc = lockgate(cluster, "status", "app", "-n", runner_ns, "-o", "json").json()
    assert doc["lastAttempt"]["result"] == "Abandoned", doc["lastAttempt"]
    assert "shutting down" in doc["lastAttempt"]["message"]
    assert doc["lastResult"]["status"] == "Abandoned"  # never "Succeeded"
    assert doc["history"][0]["result"] == "Abandoned" and doc["history"][0]["health"] == "Unknown"
    assert doc["ready"]["status"] == "Unknown" and doc["ready"]["reason"] == "Abandoned"
    assert doc["members"] == 3  # whole: what was applied is in the inventory
    table = lockgate(cluster, "status", "-n", runner_ns).out
    assert "Abandoned" in table and "Succeeded" not in table, table
