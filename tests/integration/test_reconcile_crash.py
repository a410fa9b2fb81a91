"""A pass killed with SIGKILL at a chosen point is followed by one that converges: no orphans, nothing lost.

The kill points are states of the cluster, not times: the pass runs as a child process
and the test polls the API server until it sees the state (the union inventory written,
the first object changed, the first object pruned), kills the child, and then proves the
kill landed mid-pass from what is left (the parent still holds the union, which only the
end of a pass shrinks; some objects not yet applied or not yet pruned).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from runner.kube.client import Kube
from runner.kube.discovery import Resource
from runner.plan import applyset
from tests.integration.reconcile_support import LOCKGATE, cli, configmap, dump, get, namespace, push_tree
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps", True)
SECRETS = Resource("", "v1", "Secret", "secrets", True)
V1 = [f"c{i:03}" for i in range(0, 300)]
V2 = [f"c{i:03}" for i in range(100, 400)]  # 100 removed, 100 added, 100 of those kept changed
REMOVED, ADDED = V1[:100], V2[-100:]


def _value(name: str) -> str:
    return "2" if int(name[1:]) % 2 else "1"


@dataclass
class Sync:
    cluster: Cluster
    name: str
    runner: str
    kube: Kube

    @property
    def args(self) -> list[str]:
        return ["--name", self.name, "-n", self.runner, "--insecure-skip-verify", "--prune"]

    def members_recorded(self) -> int:
        parent = self.kube.get(SECRETS, self.runner, f"lockgate-{self.name}")
        annotations = (parent or {}).get("metadata", {}).get("annotations") or {}
        return int(annotations.get("lockgate.dev/members", "0"))

    def data(self, name: str) -> str | None:
        live = self.kube.get(CONFIGMAPS, self.name, name)
        return None if live is None else str((live.get("data") or {}).get("v"))

    def labelled(self) -> set[str]:
        set_id = applyset.applyset_id(f"lockgate-{self.name}", self.runner)
        selector = f"{applyset.PART_OF_LABEL}={set_id}"
        return {
            o["metadata"]["name"] for o in self.kube.list_all(CONFIGMAPS, self.name, label_selector=selector)
        }

    def values(self) -> dict[str, str]:
        """Every ConfigMap of the namespace (but the cluster's own) and its ``v``, in one list."""
        return {
            o["metadata"]["name"]: str((o.get("data") or {}).get("v"))
            for o in self.kube.list_all(CONFIGMAPS, self.name)
            if o["metadata"]["name"] != "kube-root-ca.crt"
        }


@contextmanager
def _pass(sync: Sync, url: str) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize"))}
    argv = [*LOCKGATE, "reconcile", url, *sync.args, "--concurrency", "1"]
    proc = subprocess.Popen(
        [*argv, f"--kubeconfig={sync.cluster.kubeconfig}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _kill_when(
    proc: subprocess.Popen[bytes], what: str, reached: Callable[[], bool], timeout: float = 120
) -> None:
    deadline = time.monotonic() + timeout
    while not reached():
        if proc.poll() is not None:
            pytest.fail(f"the pass ended (exit {proc.returncode}) before the kill point: {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"the kill point was not reached in {timeout:g}s: {what}")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _setup(cluster: Cluster, registry: Registry, unique: str) -> tuple[Sync, str]:
    sync = Sync(cluster, unique, f"{unique}-r", Kube.from_kubeconfig(cluster.kubeconfig))
    v1 = push_tree(
        registry,
        unique,
        {"a.yaml": dump(namespace(unique), *(configmap(n, unique, {"v": "1"}) for n in V1))},
        "v1",
    )
    v2 = push_tree(
        registry,
        unique,
        {"a.yaml": dump(namespace(unique), *(configmap(n, unique, {"v": _value(n)}) for n in V2))},
        "v2",
    )
    first = cli(cluster, v1, *sync.args)
    assert first.code == 0, first.err
    assert sync.members_recorded() == len(V1) + 1
    return sync, v2


def _recovers(sync: Sync, v2: str) -> None:
    recovered = cli(sync.cluster, v2, *sync.args, "-o", "json")
    assert recovered.code == 0, recovered.err
    # nothing orphaned (every ConfigMap left is a member), nothing lost, every value right
    assert sync.labelled() == set(V2)
    assert sync.values() == {n: _value(n) for n in V2}
    assert sync.members_recorded() == len(V2) + 1
    again = cli(sync.cluster, v2, *sync.args, "-o", "json")
    assert again.code == 0, again.err
    assert again.json()["counts"] == {
        "created": 0,
        "configured": 0,
        "unchanged": len(V2) + 1,
        "skipped": 0,
        "deleted": 0,
    }


def test_killed_after_the_union_inventory_is_written(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    sync, v2 = _setup(cluster, registry, unique)
    union = len(V1) + len(ADDED) + 1
    with _pass(sync, v2) as proc:
        _kill_when(proc, "the parent records the union", lambda: sync.members_recorded() == union)
    assert sync.members_recorded() == union  # the pass did not get to shrink it
    live = sync.values()
    assert ADDED[-1] not in live and live[REMOVED[0]] == "1"
    _recovers(sync, v2)


def test_killed_while_applying(cluster: Cluster, registry: Registry, unique: str) -> None:
    sync, v2 = _setup(cluster, registry, unique)
    first_change = next(n for n in V2 if _value(n) == "2")
    with _pass(sync, v2) as proc:
        _kill_when(proc, f"{first_change} is changed", lambda: sync.data(first_change) == "2")
    assert sync.members_recorded() == len(V1) + len(ADDED) + 1
    writes = [n for n in V2 if n in ADDED or _value(n) == "2"]
    live = sync.values()
    done = [n for n in writes if live.get(n) == _value(n)]
    assert 0 < len(done) < len(writes), "the kill landed outside the apply phase"
    assert ADDED[-1] not in live and live[REMOVED[0]] == "1"
    _recovers(sync, v2)


def test_killed_while_pruning(cluster: Cluster, registry: Registry, unique: str) -> None:
    sync, v2 = _setup(cluster, registry, unique)
    first_pruned = REMOVED[-1]  # deletion goes in reverse apply order
    with _pass(sync, v2) as proc:
        _kill_when(proc, f"{first_pruned} is pruned", lambda: sync.data(first_pruned) is None)
    assert sync.members_recorded() == len(V1) + len(ADDED) + 1
    live = sync.values()
    left = [n for n in REMOVED if n in live]
    assert 0 < len(left) < len(REMOVED), "the kill landed outside the prune phase"
    assert all(live[n] == _value(n) for n in V2)  # pruning starts after every apply
    _recovers(sync, v2)


def test_killed_during_the_first_pass(cluster: Cluster, registry: Registry, unique: str) -> None:
    sync = Sync(cluster, unique, f"{unique}-r", Kube.from_kubeconfig(cluster.kubeconfig))
    v2 = push_tree(
        registry,
        unique,
        {"a.yaml": dump(namespace(unique), *(configmap(n, unique, {"v": _value(n)}) for n in V2))},
    )
    with _pass(sync, v2) as proc:
        _kill_when(proc, f"{V2[0]} exists", lambda: sync.data(V2[0]) is not None)
    assert sync.members_recorded() == len(V2) + 1  # recorded before the first object was sent
    assert V2[-1] not in sync.values()
    assert get(cluster, "namespace", unique) is not None
    _recovers(sync, v2)
