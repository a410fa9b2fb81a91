"""Leases against the API server: one holder per sync, takeover after a SIGKILL only once the Lease
ran out, a pass that stops before its next write when its Lease is taken, replicas sharing the
syncs, and the CronJob mode skipping a sync another runner holds.

Each test has its own runner namespace; the clients are real (``Kube`` over the world's API
server, ``lockgate reconcile`` as a child process), as is the SIGKILL.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.errors import Abandoned
from lockgate.signing.options import VerifyOptions
from runner.kube.client import Kube
from runner.kube.discovery import LEASE, Resource
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from runner.plan import shard
from runner.serve import leases
from tests.integration.reconcile_support import LOCKGATE, cli, configmap, dump, get, namespace, push_tree
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps", True)
#: the Role rules the runner needs for its Leases (deploy/ carries the same)
LEASE_RULES = [
    {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["get", "list", "create", "update", "delete"],
    }
]


def kube(cluster: Cluster, kubeconfig: Path | None = None) -> Kube:
    return Kube.from_kubeconfig(kubeconfig or cluster.kubeconfig)


def lease(client: Kube, ns: str, name: str) -> dict[str, Any]:
    found = client.get(LEASE, ns, name)
    assert found is not None, f"no Lease {ns}/{name}"
    return found


def spec_of(client: Kube, ns: str, sync: str) -> dict[str, Any]:
    return dict(lease(client, ns, leases.lease_name(sync))["spec"])


def must_hold(keeper: leases.LeaseKeeper, ns: str, sync: str) -> leases.Held:
    held = keeper.hold(ns, sync)
    assert held is not None, f"{keeper.identity} could not take the Lease of {sync}"
    return held


def eventually(check: Callable[[], bool], *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


# ---- one holder ---------------------------------------------------------------------


def test_two_runners_racing_for_a_lease_get_exactly_one_holder(cluster: Cluster, unique: str) -> None:
    # the namespace does not exist yet: the first Lease creates it
    keepers = [leases.LeaseKeeper(kube(cluster), identity=f"runner-{i}", duration=10) for i in range(2)]
    for round_ in range(6):
        sync = f"race-{round_}"
        start = threading.Barrier(len(keepers))
        won: list[leases.Held | None] = [None] * len(keepers)

        def race(i: int, sync: str = sync, start: threading.Barrier = start, won: Any = won) -> None:
            start.wait()
            won[i] = keepers[i].hold(unique, sync)

        threads = [threading.Thread(target=race, args=(i,)) for i in range(len(keepers))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        holders = [h for h in won if h is not None]
        assert len(holders) == 1, f"round {round_}: {len(holders)} holders"
        winner = holders[0]
        spec = spec_of(winner.keeper.kube, unique, sync)
        assert spec["holderIdentity"] == winner.keeper.identity
        assert spec["leaseDurationSeconds"] == 10
        assert MICRO_TIME.match(spec["acquireTime"]) and MICRO_TIME.match(spec["renewTime"])
        loser = keepers[1 - keepers.index(winner.keeper)]
        assert loser.hold(unique, sync) is None  # still live: refused without a race too
        assert loser.take(unique, sync) == winner.keeper.identity
        assert winner.keeper.hold(unique, sync) is None  # one keeper never holds a sync twice
        winner.release()
        released = spec_of(winner.keeper.kube, unique, sync)
        assert "holderIdentity" not in released and released["leaseDurationSeconds"] == 1
        with must_hold(loser, unique, sync) as again:
            again.guard()
            assert spec_of(loser.kube, unique, sync)["leaseTransitions"] == 1
        with pytest.raises(Abandoned, match="was released"):
            winner.guard()


def test_a_held_lease_is_renewed_every_third_of_its_duration(cluster: Cluster, unique: str) -> None:
    client = kube(cluster)
    with must_hold(leases.LeaseKeeper(client, identity="renewer", duration=3), unique, "renewed") as held:
        first = spec_of(client, unique, "renewed")["renewTime"]
        eventually(
            lambda: spec_of(client, unique, "renewed")["renewTime"] != first, timeout=2.5, what="a renewal"
        )
        time.sleep(4)  # past the first term: renewals kept it
        held.guard()
        spec = spec_of(client, unique, "renewed")
        assert (
            spec["holderIdentity"] == "renewer" and spec["acquireTime"] == held.lease["spec"]["acquireTime"]
        )
        assert spec["leaseTransitions"] == 0


# ---- SIGKILL of the holder ----------------------------------------------------------

_VICTIM = """
import sys, time
from pathlib import Path
from runner.kube.client import Kube
from runner.serve import leases
keeper = leases.LeaseKeeper(Kube.from_kubeconfig(Path(sys.argv[1])), identity="victim", duration=4)
held = keeper.hold(sys.argv[2], "killed")
print("held" if held else "refused", flush=True)
time.sleep(600)
"""


def test_a_killed_holder_is_taken_over_only_after_its_lease_ran_out(cluster: Cluster, unique: str) -> None:
    client = kube(cluster)
    victim = subprocess.Popen(
        [sys.executable, "-c", _VICTIM, str(cluster.kubeconfig), unique],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert victim.stdout is not None and victim.stdout.readline().strip() == "held"
        first = spec_of(client, unique, "killed")["renewTime"]
        eventually(  # it renews while alive (every 4/3 s)
            lambda: spec_of(client, unique, "killed")["renewTime"] != first, timeout=3, what="a renewal"
        )
    finally:
        victim.kill()  # SIGKILL: no release
        victim.wait()
    last = spec_of(client, unique, "killed")
    ran_out = shard.LeaseState.from_spec(last).expires()
    assert ran_out is not None and last["holderIdentity"] == "victim"
    heir = leases.LeaseKeeper(client, identity="heir", duration=4)
    refused = 0
    while (held := heir.hold(unique, "killed")) is None:
        refused += 1
        time.sleep(0.1)
    taken_at = time.time()
    with held:
        assert refused > 0  # it was refused while the dead holder's term ran
        assert taken_at >= ran_out + shard.CLOCK_SKEW
        assert taken_at < ran_out + shard.CLOCK_SKEW + 3
        spec = spec_of(client, unique, "killed")
        assert spec["holderIdentity"] == "heir"
        assert spec["leaseTransitions"] == last["leaseTransitions"] + 1
        assert spec["acquireTime"] != last["acquireTime"]


# ---- a Lease taken from a running pass ----------------------------------------------


def _skewed(client: Kube, identity: str) -> leases.LeaseKeeper:
    """A runner whose clock is an hour ahead: it sees every Lease as run out and takes it."""
    return leases.LeaseKeeper(client, identity=identity, duration=30, clock=lambda: time.time() + 3600)


def test_a_lease_taken_by_another_holder_fails_the_guard(cluster: Cluster, unique: str) -> None:
    client = kube(cluster)
    with must_hold(leases.LeaseKeeper(client, identity="owner", duration=3), unique, "taken") as held:
        held.guard()
        intruder = _skewed(kube(cluster), "intruder").hold(unique, "taken")
        assert intruder is not None
        eventually(
            lambda: _raises(held.guard), timeout=2.5, what="the guard to notice"
        )  # at the next renewal
        with pytest.raises(Abandoned, match=f"Lease {unique}/lockgate-taken was taken by intruder"):
            held.guard()
    assert spec_of(client, unique, "taken")["holderIdentity"] == "intruder"  # a lost Lease is not released
    intruder.release()


def _raises(guard: Callable[[], None]) -> bool:
    try:
        guard()
    except Abandoned:
        return True
    return False


def test_a_pass_whose_lease_is_taken_stops_before_its_next_write(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-r"
    count = 200
    url = push_tree(
        registry,
        f"{unique}/many",
        {
            "a.yaml": dump(
                namespace(unique), *(configmap(f"c{i:03}", unique, {"k": "1"}) for i in range(count))
            )
        },
    )
    client = kube(cluster)
    held = leases.LeaseKeeper(client, identity="owner", duration=3).hold(runner, "many")
    assert held is not None
    lock = threading.Lock()
    allowed: list[float] = []
    refused: list[float] = []
    intruder: list[leases.Held | None] = []

    def guard() -> None:
        time.sleep(0.1)  # a slow pass, so the renewal that notices comes mid-apply
        with lock:  # one check at a time, so the order of the records is the order of the checks
            try:
                held.guard()
            except Abandoned:
                refused.append(time.monotonic())
                raise
            allowed.append(time.monotonic())
            take = len(allowed) == 20
        if take:
            intruder.append(_skewed(kube(cluster), "intruder").hold(runner, "many"))

    options = config.sync_options(
        name="many",
        url=url,
        verify=VerifyOptions(insecure_skip=True),
        namespace=runner,
        concurrency=4,
    )
    with held:
        result = pipeline.reconcile(options, kube=kube(cluster), guard=guard)
    assert intruder and intruder[0] is not None
    assert isinstance(result.error, Abandoned), repr(result.error)
    assert "Lease" in result.error.message and "was taken by intruder" in result.error.message
    assert refused and max(allowed) < min(refused)  # once refused, never allowed again
    written = sum(1 for _ in client.list_all(CONFIGMAPS, unique)) - 1  # kube-root-ca.crt
    assert 0 < written < count  # stopped mid-apply...
    assert written <= len(allowed)  # ...and every write had the guard's permission
    time.sleep(1.5)
    assert sum(1 for _ in client.list_all(CONFIGMAPS, unique)) - 1 == written  # nothing after the pass
    parent = get(cluster, "secret", "lockgate-many", runner)
    assert parent is not None  # the union was recorded before the first object, as always
    annotations = parent["metadata"]["annotations"]
    assert annotations["lockgate.dev/members"] == str(count + 1)
    assert annotations["lockgate.dev/digest"] == ""  # the end of the pass never wrote
    assert spec_of(client, runner, "many")["holderIdentity"] == "intruder"
    intruder[0].release()


# ---- replicas -----------------------------------------------------------------------


def test_three_replicas_share_every_sync_and_two_take_over_when_one_leaves(
    cluster: Cluster, unique: str
) -> None:
    # with only the Role the runner gets in deploy/: the rules are enough
    sa = cluster.service_account_kubeconfig("runner", unique, rules=LEASE_RULES)
    names = ["replica-a", "replica-b", "replica-c"]
    replicas = [
        leases.Membership(kube(cluster, sa), namespace=unique, identity=n, duration=30) for n in names
    ]
    for replica in replicas:
        replica.heartbeat()
    for replica in replicas:
        assert replica.members() == names
    syncs = [f"sync-{i}" for i in range(60)]

    def owners(live: list[leases.Membership]) -> dict[str, list[str]]:
        return {s: [r.identity for r in live if r.owns(s)] for s in syncs}

    before = owners(replicas)
    assert all(len(o) == 1 for o in before.values()), before  # each sync exactly once
    assert {o[0] for o in before.values()} == set(names)  # and each replica has some
    member = lease(replicas[0].kube, unique, "lockgate-runner-replica-a")
    assert member["metadata"]["labels"][leases.MEMBER_LABEL] == "true"
    assert member["spec"]["holderIdentity"] == "replica-a"
    assert MICRO_TIME.match(member["spec"]["renewTime"])

    replicas[2].leave()
    stay = replicas[:2]
    for replica in stay:
        replica.heartbeat()
        assert replica.members() == names[:2]
    after = owners(stay)
    assert all(len(o) == 1 for o in after.values()), after
    moved = {s for s in syncs if before[s] != after[s]}
    assert moved == {s for s in syncs if before[s] == ["replica-c"]}  # only the leaver's syncs moved

    # a replica that stops renewing (killed) drops out once its member Lease ran out
    short = leases.Membership(kube(cluster, sa), namespace=unique, identity="replica-d", duration=1, skew=0)
    short.heartbeat()
    assert "replica-d" in replicas[0].members()
    time.sleep(1.1 + shard.CLOCK_SKEW)
    assert replicas[0].members() == names[:2]
    # and that listing deleted it, with the Role deploy/ gives the runner
    assert replicas[0].kube.get(LEASE, unique, "lockgate-runner-replica-d") is None
    assert not any("replica-d" in o for o in owners(stay).values())

    # the sync Leases with the same Role: take, renew, release
    keeper = leases.LeaseKeeper(kube(cluster, sa), identity="replica-a", duration=3)
    with must_hold(keeper, unique, "sync-0") as held:
        time.sleep(1.5)
        held.guard()
    assert "holderIdentity" not in spec_of(keeper.kube, unique, "sync-0")
    for replica in stay:
        replica.leave()
    assert replicas[0].members() == []


# ---- the CronJob mode ---------------------------------------------------------------


def test_the_cronjob_mode_skips_a_sync_another_runner_holds(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    url = push_tree(
        registry, f"{unique}/app", {"a.yaml": dump(namespace(unique), configmap("app", unique, {}))}
    )
    syncs = tmp_path / "syncs.yaml"
    syncs.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "lockgate.dev/v1alpha1",
                "kind": "Sync",
                "metadata": {"name": "app"},
                "spec": {"url": url, "interval": "5m", "namespace": runner, "verify": {"insecureSkip": True}},
            }
        )
    )
    client = kube(cluster)
    with must_hold(leases.LeaseKeeper(client, identity="deployment-replica"), runner, "app") as held:
        run = cli(cluster, "--config", str(syncs), "-o", "json")
        assert run.code == 0, run.err
        [doc] = run.json()
        assert doc["skipped"] == "held by deployment-replica" and doc["ok"] is True
        assert doc["counts"]["created"] == 0
        table = cli(cluster, "--config", str(syncs))
        assert table.code == 0 and "skipped: held by deployment-replica" in table.out, table.err
        assert get(cluster, "configmap", "app", unique) is None  # not run
        # a dry run takes no Lease, so it runs while another runner holds it
        dry = cli(cluster, "--config", str(syncs), "--dry-run", "-o", "json")
        assert dry.code == 0 and dry.json()[0]["skipped"] is None, dry.err
        held.guard()
        transitions = spec_of(client, runner, "app")["leaseTransitions"]
    run = cli(cluster, "--config", str(syncs), "-o", "json")
    assert run.code == 0, run.err
    assert run.json()[0]["skipped"] is None and run.json()[0]["counts"]["created"] == 2
    assert get(cluster, "configmap", "app", unique) is not None
    after = spec_of(client, runner, "app")
    assert "holderIdentity" not in after  # released at the end of the pass
    assert after["leaseTransitions"] == transitions + 1  # released by the replica, taken by the CronJob


def test_a_rollback_by_hand_refuses_while_another_runner_holds_the_lease(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    url = push_tree(registry, f"{unique}/app", {"a.yaml": dump(namespace(unique))})
    syncs = tmp_path / "syncs.yaml"
    spec = {"url": url, "interval": "5m", "namespace": runner, "verify": {"insecureSkip": True}}
    syncs.write_text(
        yaml.safe_dump(
            {"apiVersion": "lockgate.dev/v1alpha1", "kind": "Sync", "metadata": {"name": "app"}, "spec": spec}
        )
    )
    assert cli(cluster, "--config", str(syncs)).code == 0
    client = kube(cluster)
    with must_hold(leases.LeaseKeeper(client, identity="busy-replica"), runner, "app"):
        done = subprocess.run(
            [*LOCKGATE, "rollback", "app", f"--config={syncs}", f"--kubeconfig={cluster.kubeconfig}"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 12, done.stderr
    assert "is being reconciled by busy-replica" in done.stderr
