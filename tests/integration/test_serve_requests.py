"""``lockgate sync`` and the webhook against a running ``serve``: what a person asks is answered,
exactly once, and a suspended sync says it is suspended.

serve runs as a child process on the world's cluster and registry (``serve_support``);
``lockgate sync`` and ``lockgate status`` run as the CLI, and two requests within one
second are made through ``status.request`` with an explicit clock, so they are in one
second whatever the machine's speed.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest

from runner.kube.client import Kube
from runner.pipeline import status
from runner.plan.inventory import REQUESTED_AT
from tests.integration.history_support import inventory, lockgate
from tests.integration.reconcile_support import configmap, dump, get, push_tree
from tests.integration.serve_support import Served, runner_doc, start_serve, sync_doc, write_config
from tests.integration.test_serve import TOKEN, webhook_secret
from tests.world.kube import Cluster
from tests.world.process import free_port
from tests.world.registry import Registry, start_registry

pytestmark = pytest.mark.world

SUSPENDED = "lockgate.dev/suspended"


def annotations_of(cluster: Cluster, name: str, runner_ns: str) -> dict[str, str]:
    secret = get(cluster, "secret", f"lockgate-{name}", runner_ns)
    assert secret is not None, f"no inventory of {name}"
    return dict(secret["metadata"].get("annotations") or {})


def requested_passes(served: Served, msg: str = "pass started") -> list[dict[str, object]]:
    return [e for e in served.events() if e.get("msg") == msg and e.get("reason") == "requested"]


def eventually(check: object, *, timeout: float = 30, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


def one_sync(cluster: Cluster, registry: Registry, unique: str) -> tuple[str, str, str]:
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    url = push_tree(registry, f"{unique}/a", {"cm.yaml": dump(configmap("a", ns, {"v": "1"}))})
    return ns, runner_ns, url.split("@")[0]


def test_a_suspended_sync_says_so_to_lockgate_sync_and_to_the_webhook(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    _, runner_ns, url = one_sync(cluster, registry, unique)
    webhook_secret(cluster, runner_ns)
    ports = (free_port(), free_port())
    runner = runner_doc(*ports, namespace=runner_ns, webhook={"secretRef": {"name": "webhook"}})
    config = tmp_path / "lockgate.yaml"
    write_config(config, [runner, sync_doc("a", url, runner_ns)])
    served = start_serve(cluster, tmp_path, [], config=config, ports=ports)
    try:
        served.wait_sync_ready("a")
        write_config(config, [runner, sync_doc("a", url, runner_ns, suspend=True)])
        served.wait_event(lambda e: e.get("msg") == "configuration reloaded", what="the reload")
        answer = served.hook("a", headers={"Authorization": f"Bearer {TOKEN}"})
        assert answer.status_code == 409, answer.text
        assert answer.json()["triggered"] is False and "suspended" in answer.json()["error"]
        eventually(lambda: annotations_of(cluster, "a", runner_ns).get(SUSPENDED) == "true", what="the mark")

        asked = lockgate(cluster, "sync", "a", "-n", runner_ns)
        assert asked.code == 2, asked.out
        assert "sync a is suspended" in asked.err and SUSPENDED in asked.err
        assert REQUESTED_AT not in annotations_of(cluster, "a", runner_ns)

        write_config(config, [runner, sync_doc("a", url, runner_ns)])
        eventually(lambda: SUSPENDED not in annotations_of(cluster, "a", runner_ns), what="the mark removed")
        assert lockgate(cluster, "sync", "a", "-n", runner_ns).code == 0
        eventually(lambda: len(requested_passes(served)) == 1, what="the requested pass")
    finally:
        assert served.stop() == 0, served.tail()


def test_two_requests_in_one_second_are_two_requests(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    _, runner_ns, url = one_sync(cluster, registry, unique)
    served = start_serve(cluster, tmp_path, [sync_doc("a", url, runner_ns)], runner={"namespace": runner_ns})
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    try:
        served.wait_sync_ready("a")
        second = dt.datetime.now(dt.UTC).replace(microsecond=100_000)
        first = status.request("a", namespace=runner_ns, kube=kube, now=second)
        # serve ran the sync: lockgate sync says it answers
        assert first.served_by == runner_ns and "answers within seconds" in first.describe("a")
        first_at = first.at
        eventually(lambda: inventory(cluster, "a", runner_ns).handled_request == first_at, what="the first")
        again_at = status.request(
            "a", namespace=runner_ns, kube=kube, now=second.replace(microsecond=600_000)
        ).at
        assert again_at != first_at and again_at[:19] == first_at[:19]  # one second, two values
        eventually(lambda: inventory(cluster, "a", runner_ns).handled_request == again_at, what="the second")
        assert len(requested_passes(served)) == 2
    finally:
        assert served.stop() == 0, served.tail()


def test_a_handled_request_clears_and_is_not_replayed_after_a_restart(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    _, runner_ns, url = one_sync(cluster, registry, unique)
    docs = [sync_doc("a", url, runner_ns)]
    served = start_serve(cluster, tmp_path / "one", docs, runner={"namespace": runner_ns})
    try:
        served.wait_sync_ready("a")
        # each request is a pass that changes nothing: the second finds a document just like its own
        for n in (1, 2):
            assert lockgate(cluster, "sync", "a", "-n", runner_ns).code == 0
            eventually(
                lambda n=n: len(requested_passes(served, "pass finished")) == n,
                what=f"requested pass {n}",
            )
            eventually(lambda: not inventory(cluster, "a", runner_ns).request_pending, what="requestPending")
        shown = lockgate(cluster, "status", "a", "-n", runner_ns)
        assert shown.code == 0 and "requested:" not in shown.out, shown.out
    finally:
        assert served.stop() == 0, served.tail()
    again = start_serve(cluster, tmp_path / "two", docs, runner={"namespace": runner_ns})
    try:
        again.wait_sync_ready("a")
        time.sleep(3)
        assert requested_passes(again) == [], again.tail()
    finally:
        assert again.stop() == 0, again.tail()


def failed_checks(served: Served) -> list[dict[str, object]]:
    return [e for e in served.events() if e.get("msg") == "checked" and e.get("outcome") == "failed"]


def test_a_request_made_while_the_registry_is_away_is_answered_when_it_is_back(
    cluster: Cluster, unique: str, tmp_path: Path
) -> None:
    own = start_registry(tmp_path, name="away-registry")
    try:
        _, runner_ns, url = one_sync(cluster, own, unique)
        docs = [sync_doc("a", url, runner_ns, interval="1s", retryInterval="1s")]
        served = start_serve(cluster, tmp_path / "serve", docs, runner={"namespace": runner_ns})
        try:
            served.wait_sync_ready("a")
            own.process.stop()
            eventually(lambda: bool(failed_checks(served)), what="a failed check")
            assert lockgate(cluster, "sync", "a", "-n", runner_ns).code == 0
            seen = served.wait_event(
                lambda e: e.get("msg") == "sync triggered" and str(e.get("reason")).startswith("requestedAt"),
                what="the request seen",
            )
            # checks that began after the request fail (the first to end may have begun before it):
            # no pass ran, so the request is still to be answered
            eventually(
                lambda: sum(1 for e in failed_checks(served) if str(e["ts"]) > str(seen["ts"])) >= 2,
                what="two failed checks after the request",
            )
            assert requested_passes(served) == [] and inventory(cluster, "a", runner_ns).request_pending
            own.process.restart()
            eventually(lambda: len(requested_passes(served, "pass finished")) == 1, what="the requested pass")
            eventually(lambda: not inventory(cluster, "a", runner_ns).request_pending, what="requestPending")
        finally:
            assert served.stop() == 0, served.tail()
    finally:
        own.stop()
