"""Several ``lockgate serve`` replicas on one configuration: shared work, never one sync twice at once.

Also what must not mislead them: a replica that cannot start never becomes a member, a
killed replica's member Lease is deleted once it ran out, and a replica on another
configuration stands by instead of being handed syncs it does not run.

The proof that no sync ever has two passes at once comes from the replicas' own logs: a
``pass finished`` event carries the pass's length, so each pass is an interval of wall-clock
time on this one machine, and the intervals of one sync, gathered from every replica,
must not overlap. Drift intervals of a second make every due sync a full pass, so there
are many passes to compare, and replicas join and leave while they run.
"""

from __future__ import annotations

import itertools
import json
import signal
import socket
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from runner.plan import shard
from tests.integration.reconcile_support import configmap, dump, push_tree
from tests.integration.serve_support import Served, runner_doc, start_serve, sync_doc, write_config
from tests.world.kube import Cluster
from tests.world.process import free_port
from tests.world.registry import Registry

FAST = {"interval": "1s", "retryInterval": "1s", "driftInterval": "1s"}
LEASES = {"leaseDuration": "3s", "membershipDuration": "6s"}


def _seconds(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def passes(replicas: list[Served]) -> dict[str, list[tuple[float, float, str]]]:
    """sync -> [(start, end, replica)] of every pass that ran (its Lease was held)."""
    found: dict[str, list[tuple[float, float, str]]] = {}
    for replica in replicas:
        for event in replica.events():
            if event.get("msg") != "pass finished" or event.get("outcome") not in ("applied", "unchanged"):
                continue
            end = _seconds(event["ts"])
            found.setdefault(event["sync"], []).append((end - float(event["seconds"]), end, replica.identity))
    return found


def assert_never_overlapping(found: dict[str, list[tuple[float, float, str]]]) -> None:
    for sync, spans in found.items():
        spans.sort()
        for (_, e1, r1), (s2, _, r2) in itertools.pairwise(spans):
            assert s2 >= e1 - 0.002, f"{sync}: a pass by {r2} started at {s2} before {r1}'s ended at {e1}"


def setup(cluster: Cluster, registry: Registry, unique: str, count: int) -> tuple[str, list[dict[str, Any]]]:
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    docs = []
    for i in range(count):
        files = {"cm.yaml": dump(*(configmap(f"s{i}-{j}", ns, {"v": "1"}) for j in range(20)))}
        url = push_tree(registry, f"{unique}/s{i}", files).split("@")[0]
        docs.append(sync_doc(f"s{i}", url, runner_ns, **FAST))
    return runner_ns, docs


def test_three_replicas_share_the_syncs_and_never_run_one_twice_at_once(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns, docs = setup(cluster, registry, unique, 9)
    shared = tmp_path / "shared.yaml"
    write_config(shared, docs)
    runner = {"namespace": runner_ns, **LEASES}
    replicas: list[Served] = []
    try:
        # replicas join one after the other while passes run, so ownership moves under load
        for n in range(3):
            replicas.append(
                start_serve(cluster, tmp_path / f"r{n}", [], identity=f"r{n}", runner=runner, config=shared)
            )
            time.sleep(4)
        time.sleep(8)
        # one leaves (SIGTERM), the others take its syncs over
        assert replicas[1].stop() == 0, replicas[1].tail()
        time.sleep(8)
    finally:
        for replica in replicas:
            replica.stop()
    found = passes(replicas)
    assert set(found) == {f"s{i}" for i in range(9)}, "every sync ran"
    assert_never_overlapping(found)
    # the work was shared: with all three up, each replica ran some syncs
    ran_by = {r for spans in found.values() for _, _, r in spans}
    assert ran_by == {"r0", "r1", "r2"}
    # and the Leases saw the hand-overs
    leases = json.loads(cluster.kubectl("get", "leases", "-n", runner_ns, "-o", "json").stdout)["items"]
    per_sync = {item["metadata"]["name"]: item["spec"] for item in leases}
    assert {f"lockgate-s{i}" for i in range(9)} <= set(per_sync)
    assert any(spec.get("leaseTransitions", 0) >= 1 for spec in per_sync.values())
    assert all(
        not spec.get("holderIdentity") for name, spec in per_sync.items() if name.startswith("lockgate-s")
    )


def test_a_killed_replicas_syncs_move_to_another_after_expiry(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns, docs = setup(cluster, registry, unique, 6)
    shared = tmp_path / "shared.yaml"
    write_config(shared, docs)
    runner = {"namespace": runner_ns, **LEASES}
    a = start_serve(cluster, tmp_path / "a", [], identity="a", runner=runner, config=shared)
    b = start_serve(cluster, tmp_path / "b", [], identity="b", runner=runner, config=shared)
    try:
        time.sleep(10)  # both have seen each other and settled their shares
        before = passes([a, b])
        owned_by_a = {sync for sync, spans in before.items() if spans[-1][2] == "a"}
        assert owned_by_a, f"a ran nothing: {before}"
        a.stop(signal.SIGKILL)
        killed_at = time.time()
        time.sleep(14)  # membership expiry (6 s) plus heartbeats and a pass
        after = passes([b])
        taken = {sync for sync, spans in after.items() if any(start > killed_at for start, _, _ in spans)}
        assert owned_by_a <= taken, f"b did not take over {owned_by_a - taken}:\n{b.tail()}"
        assert_never_overlapping(passes([a, b]))
        # the killed replica's member Lease ran out, and b deleted it
        assert "lockgate-runner-a" not in member_leases(cluster, runner_ns)
        assert "lockgate-runner-b" in member_leases(cluster, runner_ns)
        deleted = b.wait_event(lambda e: "member Lease" in e.get("msg", ""), what="the deletion")
        assert deleted["lease"] == f"{runner_ns}/lockgate-runner-a"
    finally:
        a.stop()
        b.stop()


def member_leases(cluster: Cluster, runner_ns: str) -> set[str]:
    out = cluster.kubectl(
        "get", "leases", "-n", runner_ns, "-l", "lockgate.dev/runner-member=true", "-o", "name"
    ).stdout
    return {line.removeprefix("lease.coordination.k8s.io/") for line in out.split()}


def test_a_serve_that_cannot_listen_never_becomes_a_member(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns, docs = setup(cluster, registry, unique, 2)
    live = start_serve(
        cluster, tmp_path / "live", docs, identity="live", runner={"namespace": runner_ns, **LEASES}
    )
    try:
        live.wait_sync_ready("s0")
        with socket.socket() as taken:  # the port the second replica wants is in use
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            config = tmp_path / "broken.yaml"
            write_config(config, [runner_doc(port, free_port(), namespace=runner_ns, **LEASES), *docs])
            broken = start_serve(
                cluster,
                tmp_path / "broken",
                [],
                identity="broken",
                config=config,
                ports=(port, 0),
                wait_ready=False,
            )
            code = broken.proc.wait(60)
        assert code != 0 and f"cannot listen on 127.0.0.1:{port}" in broken.log.read_text(), broken.tail()
        assert member_leases(cluster, runner_ns) == {"lockgate-runner-live"}
        # and the live replica keeps every sync: none was handed to the one that never started
        exited = time.time()
        time.sleep(4)
        after = {sync for sync, spans in passes([live]).items() if any(b > exited for b, _, _ in spans)}
        assert after == {"s0", "s1"}, live.tail()
    finally:
        live.stop()


def test_a_replica_on_another_configuration_stands_by_and_every_sync_still_runs(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns, docs = setup(cluster, registry, unique, 6)
    runner = {"namespace": runner_ns, **LEASES}
    # the newcomer's file knows only s0 and s1; sharing with it would strand some of s2..s5
    assert any(shard.owner(f"s{i}", ["full", "stale"]) == "stale" for i in range(2, 6))
    full = start_serve(cluster, tmp_path / "full", docs, identity="full", runner=runner)
    stale: Served | None = None
    try:
        for i in range(6):
            full.wait_sync_ready(f"s{i}")
        stale = start_serve(cluster, tmp_path / "stale", docs[:2], identity="stale", runner=runner)
        refused = stale.wait_event(lambda e: e.get("msg", "").startswith("standing by"), what="standing by")
        assert refused["level"] == "error" and refused["replicas"] == "full"
        assert refused["config"] != refused["theirs"]
        assert "standing by" in stale.readyz().text
        time.sleep(4)  # the full replica's next heartbeat has seen the newcomer
        joined = time.time()
        time.sleep(6)
        after = {
            sync for sync, spans in passes([full]).items() if any(start > joined for start, _, _ in spans)
        }
        assert after == {f"s{i}" for i in range(6)}, f"the full replica gave syncs away:\n{full.tail()}"
        assert not any(e.get("msg") == "pass started" for e in stale.events()), stale.tail()
        assert member_leases(cluster, runner_ns) == {"lockgate-runner-full", "lockgate-runner-stale"}
    finally:
        if stale is not None:
            stale.stop()
        full.stop()
