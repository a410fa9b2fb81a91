"""``serve`` deletes a sync that left its configuration, by the ``deletionPolicy`` its passes recorded.

Only when it may: never on a configuration that failed to load, never from a replica that
stands by on another configuration, never an inventory it did not run (``lockgate
reconcile`` by hand), and a deletion the mass-prune guard refuses waits for a person. A
deletion stopped midway (the process killed in a ``WaitForTermination`` wait) is resumed
by the next ``serve`` that starts without the sync.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from runner.inventory import store
from runner.kube.client import Kube
from runner.plan import applyset
from tests.integration.delete_support import (
    configmaps,
    held_configmap,
    inventory,
    lease,
    lockgate,
    part_of,
    release_hold,
    wait_for,
)
from tests.integration.reconcile_support import configmap, dump, push_tree
from tests.integration.serve_support import Served, runner_doc, start_serve, sync_doc, write_config
from tests.integration.tenants_support import tenant
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

LEASES = {"leaseDuration": "3s", "membershipDuration": "6s"}


def _runner(served: Served, runner_ns: str) -> dict[str, Any]:
    return runner_doc(served.metrics_port, served.webhook_port, namespace=runner_ns, **LEASES)


def _deleted(served: Served, sync: str, timeout: float = 60) -> dict[str, Any]:
    return served.wait_event(
        lambda e: e.get("msg") == "sync deleted" and e.get("sync") == sync,
        what=f"{sync} deleted",
        timeout=timeout,
    )


def _url(registry: Registry, repo: str, *objects: dict[str, Any]) -> str:
    return push_tree(registry, repo, {"all.yaml": dump(*objects)}).split("@")[0]


def test_syncs_that_left_the_configuration_go_by_their_policy(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    runner_ns = f"{unique}-run"
    apps = {}
    docs = {}
    policies: dict[str, dict[str, Any]] = {
        "delete": {"deletionPolicy": "Delete", "prune": False},
        "mirror-no": {"prune": False},
        "mirror-refused": {"prune": True},
        "mirror-yes": {"prune": True, "allowMassPrune": True},
        "orphan": {"deletionPolicy": "Orphan", "prune": True},
        "stays": {},
        "wait": {"deletionPolicy": "WaitForTermination", "timeout": "2m"},
    }
    for name, spec in policies.items():
        app = apps[name] = f"{unique[:40]}-{name}"
        cluster.kubectl("create", "namespace", app)
        objects = [configmap("a", app, {"v": "1"}), configmap("b", app, {"v": "1"})]
        if name == "delete":  # a protected member is kept, and orphaned
            objects.append(
                configmap(
                    "keep", app, {"v": "1"}, annotations={"kustomize.toolkit.fluxcd.io/prune": "disabled"}
                )
            )
        if name == "wait":
            objects.append(held_configmap("held", app))
        docs[name] = sync_doc(name, _url(registry, f"{unique}/{name}", *objects), runner_ns, **spec)
    # a sync run by hand in the same runner namespace: serve never ran it, never deletes it
    hand_app = f"{unique[:40]}-hand"
    cluster.kubectl("create", "namespace", hand_app)
    hand = _url(registry, f"{unique}/hand", configmap("a", hand_app, {"v": "1"}))
    ran = lockgate(cluster, "reconcile", hand, "--name", "by-hand", "-n", runner_ns, "--insecure-skip-verify")
    assert ran.code == 0, ran.err

    served = start_serve(
        cluster, tmp_path, list(docs.values()), identity="r0", runner={"namespace": runner_ns, **LEASES}
    )
    try:
        for name in docs:
            served.wait_sync_ready(name)
        write_config(served.config, [_runner(served, runner_ns), docs["stays"]])
        served.wait_event(lambda e: e.get("msg") == "configuration reloaded", what="reload", timeout=30)
        for name in ("delete", "mirror-no", "mirror-yes", "orphan"):
            _deleted(served, name)
        # Delete and MirrorPrune with prune (allowMassPrune): the objects are gone, bar the protected
        assert set(configmaps(kube, apps["delete"])) == {"keep"}
        assert part_of(configmaps(kube, apps["delete"])["keep"]) is None
        assert configmaps(kube, apps["mirror-yes"]) == {}
        # MirrorPrune without prune, and Orphan: the objects stay, no longer claimed by a set
        for name in ("mirror-no", "orphan"):
            left = configmaps(kube, apps[name])
            assert set(left) == {"a", "b"} and all(part_of(b) is None for b in left.values()), name
        for name in ("delete", "mirror-no", "mirror-yes", "orphan"):
            assert inventory(kube, name, runner_ns) is None, name
            assert lease(kube, name, runner_ns) is None, name

        # MirrorPrune with prune but no allowMassPrune: every object would go, so it waits for a person
        refused = served.wait_event(
            lambda e: e.get("msg") == "deletion failed" and e.get("sync") == "mirror-refused", what="refusal"
        )
        assert "refusing to delete every object (2) of sync mirror-refused" in refused["error"]
        assert set(configmaps(kube, apps["mirror-refused"])) == {"a", "b"}
        record = inventory(kube, "mirror-refused", runner_ns)
        assert record is not None and record.last_attempt is not None
        assert record.last_attempt.reason == "DeletionRefused"

        # WaitForTermination: the deletion waits for the finalizer, and the parent goes last
        wait_for(
            "held terminating",
            lambda: "deletionTimestamp" in configmaps(kube, apps["wait"])["held"]["metadata"],
        )
        time.sleep(2)
        assert inventory(kube, "wait", runner_ns) is not None
        assert not any(e.get("msg") == "sync deleted" and e.get("sync") == "wait" for e in served.events())
        release_hold(cluster, "held", apps["wait"])
        _deleted(served, "wait")
        assert configmaps(kube, apps["wait"]) == {} and inventory(kube, "wait", runner_ns) is None

        # another reload: the refusal is not repeated, the sync run by hand is untouched
        served.config.write_text(served.config.read_text() + "# touched\n")
        wait_for(
            "a second reload",
            lambda: sum(e.get("msg") == "configuration reloaded" for e in served.events()) == 2,
            timeout=30,
        )
        time.sleep(4)
        refusals = [
            e
            for e in served.events()
            if e.get("msg") == "deletion failed" and e.get("sync") == "mirror-refused"
        ]
        assert len(refusals) == 1, served.tail()
        assert inventory(kube, "by-hand", runner_ns) is not None
        assert set(configmaps(kube, hand_app)) == {"a"}
        assert inventory(kube, "stays", runner_ns) is not None
    finally:
        assert served.stop() == 0, served.tail()


def test_a_configuration_that_fails_to_load_deletes_nothing(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    app, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", app)
    gone = sync_doc("gone", _url(registry, f"{unique}/g", configmap("g", app, {"v": "1"})), runner_ns)
    gone["spec"]["deletionPolicy"] = "Delete"
    stays = sync_doc("stays", _url(registry, f"{unique}/s", configmap("s", app, {"v": "1"})), runner_ns)
    served = start_serve(
        cluster, tmp_path, [gone, stays], identity="r0", runner={"namespace": runner_ns, **LEASES}
    )
    try:
        served.wait_sync_ready("gone")
        served.wait_sync_ready("stays")
        broken = json.loads(json.dumps(stays))
        broken["spec"]["prnue"] = True  # and "gone" left the file too
        write_config(served.config, [_runner(served, runner_ns), broken])
        served.wait_event(lambda e: e.get("msg", "").startswith("configuration refused"), what="refusal")
        time.sleep(6)  # several housekeeping rounds
        assert set(configmaps(kube, app)) == {"g", "s"}
        assert inventory(kube, "gone", runner_ns) is not None
        assert not any(e.get("msg", "").startswith("sync left") for e in served.events()), served.tail()
        # the same file, fixed: now it loads, and "gone" goes
        write_config(served.config, [_runner(served, runner_ns), stays])
        _deleted(served, "gone")
        assert set(configmaps(kube, app)) == {"s"} and inventory(kube, "gone", runner_ns) is None
    finally:
        assert served.stop() == 0, served.tail()


def test_a_replica_on_another_configuration_deletes_nothing(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    app, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", app)
    gone = sync_doc("gone", _url(registry, f"{unique}/g", configmap("g", app, {"v": "1"})), runner_ns)
    gone["spec"]["deletionPolicy"] = "Delete"
    stays = sync_doc("stays", _url(registry, f"{unique}/s", configmap("s", app, {"v": "1"})), runner_ns)
    runner = {"namespace": runner_ns, **LEASES}
    old = start_serve(cluster, tmp_path / "old", [gone, stays], identity="old", runner=runner)
    new: Served | None = None
    try:
        old.wait_sync_ready("gone")
        # a newcomer on a file without "gone" (a rollout under way): it stands by, deletes nothing
        new = start_serve(cluster, tmp_path / "new", [stays], identity="new", runner=runner)
        new.wait_event(lambda e: e.get("msg", "").startswith("standing by"), what="standing by")
        time.sleep(8)
        assert set(configmaps(kube, app)) == {"g", "s"} and inventory(kube, "gone", runner_ns) is not None
        assert not any(e.get("msg", "").startswith("sync left") for e in new.events()), new.tail()
        # the old replica leaves: the newcomer's file is the one the replicas share now
        assert old.stop() == 0, old.tail()
        _deleted(new, "gone")
        assert set(configmaps(kube, app)) == {"s"} and inventory(kube, "gone", runner_ns) is None
    finally:
        old.stop()
        if new is not None:
            assert new.stop() == 0, new.tail()


def test_a_deletion_killed_midway_resumes_when_serve_starts_again(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    app, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", app)
    objects = [held_configmap("held", app), *(configmap(f"c{i}", app, {"v": "1"}) for i in range(20))]
    gone = sync_doc("gone", _url(registry, f"{unique}/g", *objects), runner_ns)
    gone["spec"].update({"deletionPolicy": "WaitForTermination", "timeout": "5m"})
    stays = sync_doc("stays", _url(registry, f"{unique}/s", configmap("s", app, {"v": "1"})), runner_ns)
    runner = {"namespace": runner_ns, **LEASES}
    first = start_serve(cluster, tmp_path / "first", [gone, stays], identity="r0", runner=runner)
    try:
        first.wait_sync_ready("gone")
        write_config(first.config, [_runner(first, runner_ns), stays])
        first.wait_event(lambda e: e.get("msg", "").startswith("sync left"), what="the deletion starting")
        wait_for("every other object deleted", lambda: set(configmaps(kube, app)) == {"held", "s"})
        first.stop(signal.SIGKILL)
    finally:
        first.stop()
    # killed in its wait: the parent still names every member, nothing is unrecorded
    record = inventory(kube, "gone", runner_ns)
    assert record is not None and len(record.members) == 21
    assert "deletionTimestamp" in configmaps(kube, app)["held"]["metadata"]

    # a serve started on a file without "gone" (a restart) finds it by its inventory and resumes
    second = start_serve(cluster, tmp_path / "second", [stays], identity="r0", runner=runner)
    try:
        second.wait_event(lambda e: e.get("msg", "").startswith("sync left"), what="the deletion resuming")
        time.sleep(2)
        assert inventory(kube, "gone", runner_ns) is not None  # waiting again for the finalizer
        release_hold(cluster, "held", app)
        done = _deleted(second, "gone")
        assert done["summary"].endswith("1 deleted"), done  # the rest was known gone
        assert set(configmaps(kube, app)) == {"s"} and inventory(kube, "gone", runner_ns) is None
        assert applyset.applyset_id("lockgate-stays", runner_ns) == part_of(configmaps(kube, app)["s"])
    finally:
        assert second.stop() == 0, second.tail()


def test_serve_deletes_as_the_configuration_says_and_a_forged_inventory_waits_for_a_person(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    runner_ns, app = f"{unique}-run", f"{unique}-app"
    for ns in (runner_ns, app):
        cluster.kubectl("create", "namespace", ns)
    # the tenant's account writes its inventory and ConfigMaps but may not delete them; another may
    inventory_rules: list[dict[str, Any]] = [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]
    no_delete: list[dict[str, Any]] = [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create", "patch"]}
    ]
    user = tenant(cluster, runner_ns, app, "team", app_rules=no_delete, runner_rules=inventory_rules)
    tenant(cluster, runner_ns, app, "powerful")
    web = sync_doc("web", _url(registry, f"{unique}/web", configmap("a", app, {"v": "1"})), runner_ns,
                   deletionPolicy="Delete")  # fmt: skip
    stays = sync_doc("stays", _url(registry, f"{unique}/stays", configmap("s", app, {"v": "1"})), runner_ns)
    runner = {"namespace": runner_ns, "defaultServiceAccount": "team", **LEASES}
    served = start_serve(cluster, tmp_path, [web, stays], identity="r0", runner=runner)
    try:
        for name in ("web", "stays"):
            served.wait_sync_ready(name)
        # the tenant rewrites its own inventory: "delete me as powerful"
        as_tenant = kube.impersonating(user)
        forged = store.read(as_tenant, "web", runner_ns)
        assert forged.deletion is not None and forged.deletion.service_account_name == "team"
        forged.deletion = dataclasses.replace(forged.deletion, service_account_name="powerful")
        store.write(as_tenant, forged, manager="lockgate")
        write_config(served.config, [runner_doc(served.metrics_port, served.webhook_port, **runner), stays])
        refused = served.wait_event(
            lambda e: e.get("msg") == "deletion failed" and e.get("sync") == "web", what="refusal"
        )
        assert f"ServiceAccount {runner_ns}/powerful" in refused["error"], refused["error"]
        assert "--service-account" in refused["error"]
        assert set(configmaps(kube, app)) == {"a", "s"}
        record = inventory(kube, "web", runner_ns)
        assert record is not None and record.last_attempt is not None
        assert record.last_attempt.reason == "DeletionRefused"  # waits for a person, not retried
    finally:
        assert served.stop() == 0, served.tail()
    # the person says: as the tenant's own account, which may not delete them
    as_team = lockgate(cluster, "delete", "web", "-n", runner_ns, "--service-account", "team")
    assert as_team.code == 5 and f"ServiceAccount {runner_ns}/team cannot delete" in as_team.err, as_team.err
    assert set(configmaps(kube, app)) == {"a", "s"}
