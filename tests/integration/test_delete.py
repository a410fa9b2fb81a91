"""``lockgate delete NAME``: a sync's objects go (or stay) by its ``deletionPolicy``, then its inventory.

Each sync first runs as the CronJob mode runs it (``reconcile --config``), so the policy is
the one its pass recorded on the inventory; the file then no longer has it, as when a
person removes a Sync document, and ``lockgate delete NAME --config FILE`` deletes it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from runner.inventory import store
from runner.kube.client import Kube
from runner.plan import applyset, shard
from tests.integration.delete_support import (
    configmaps,
    delete_argv,
    doc,
    held_configmap,
    inventory,
    lease,
    lockgate,
    part_of,
    release_hold,
    run_syncs,
    wait_for,
)
from tests.integration.reconcile_support import configmap, dump, push_tree
from tests.integration.serve_support import write_config
from tests.integration.tenants_support import tenant
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def _setup(cluster: Cluster, unique: str) -> tuple[Kube, str, str]:
    app, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", app)
    return Kube.from_kubeconfig(cluster.kubeconfig), app, runner_ns


def _maps(app: str, *names: str, **annotations: str) -> list[dict[str, object]]:
    extra = {"annotations": annotations} if annotations else {}
    return [configmap(n, app, {"v": "1"}, **extra) for n in names]


def test_mirror_prune_with_prune_needs_a_confirmation_then_deletes_everything(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube, app, runner_ns = _setup(cluster, unique)
    url = push_tree(registry, unique, {"all.yaml": dump(*_maps(app, "a", "b", "c"))})
    other = push_tree(registry, f"{unique}-o", {"all.yaml": dump(*_maps(f"{app}", "o"))})
    config = tmp_path / "lockgate.yaml"
    run_syncs(cluster, config, doc("web", url, runner_ns, prune=True), doc("other", other, runner_ns))
    write_config(config, [doc("other", other, runner_ns)])  # web removed from the file

    dry = lockgate(cluster, "delete", "web", "--config", str(config), "--dry-run", "-o", "json")
    assert dry.code == 5, dry.err
    listed = json.loads(dry.out)
    assert listed["counts"]["deleted"] == 3 and listed["dryRun"] is True
    assert "refusing to delete every object (3) of sync web" in listed["error"]["message"]

    refused = lockgate(cluster, "delete", "web", "--config", str(config))
    assert refused.code == 5, refused.err
    assert "lockgate delete web --allow-mass-prune" in refused.err
    assert set(configmaps(kube, app)) == {"a", "b", "c", "o"}  # nothing was deleted
    kept = inventory(kube, "web", runner_ns)
    assert kept is not None and kept.last_attempt is not None
    assert kept.last_attempt.reason == "DeletionRefused" and len(kept.members) == 3
    status = lockgate(cluster, "status", "web", "-n", runner_ns, "-o", "json")
    assert "DeletionRefused" in status.out, status.out

    done = lockgate(cluster, "delete", "web", "--config", str(config), "--allow-mass-prune", "-o", "json")
    assert done.code == 0, done.err + done.out
    assert json.loads(done.out)["counts"]["deleted"] == 3
    assert set(configmaps(kube, app)) == {"o"}
    assert inventory(kube, "web", runner_ns) is None and lease(kube, "web", runner_ns) is None
    assert inventory(kube, "other", runner_ns) is not None  # the other sync is untouched


def test_mirror_prune_without_prune_orphans_the_objects(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube, app, runner_ns = _setup(cluster, unique)
    url = push_tree(registry, unique, {"all.yaml": dump(*_maps(app, "a", "b"))})
    config = tmp_path / "lockgate.yaml"
    run_syncs(cluster, config, doc("web", url, runner_ns, prune=False))
    done = lockgate(cluster, "delete", "web", "-n", runner_ns)
    assert done.code == 0, done.err + done.out
    assert "MirrorPrune (prune: false)" in done.out
    left = configmaps(kube, app)
    assert set(left) == {"a", "b"}
    assert all(part_of(body) is None for body in left.values())  # no label names the gone parent
    assert inventory(kube, "web", runner_ns) is None


def test_orphan_leaves_the_objects_for_another_sync_to_take(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube, app, runner_ns = _setup(cluster, unique)
    url = push_tree(registry, unique, {"all.yaml": dump(*_maps(app, "a", "b"))})
    config = tmp_path / "lockgate.yaml"
    run_syncs(cluster, config, doc("old", url, runner_ns, deletionPolicy="Orphan"))
    before = configmaps(kube, app)
    done = lockgate(cluster, "delete", "old", "-n", runner_ns, "-o", "json")
    assert done.code == 0, done.err + done.out
    after = configmaps(kube, app)
    assert set(after) == {"a", "b"} and all(part_of(b) is None for b in after.values())
    assert {n: b["data"] for n, b in after.items()} == {n: b["data"] for n, b in before.items()}
    assert inventory(kube, "old", runner_ns) is None
    # a new sync takes them over without lockgate.dev/adopt: no set claims them any more
    run_syncs(cluster, config, doc("new", url, runner_ns, prune=True))
    new_id = applyset.applyset_id("lockgate-new", runner_ns)
    assert {part_of(b) for b in configmaps(kube, app).values()} == {new_id}


def test_delete_keeps_what_is_protected_and_what_another_sync_holds(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube, app, runner_ns = _setup(cluster, unique)
    protected = _maps(app, "keep", **{"kustomize.toolkit.fluxcd.io/prune": "disabled"})
    first = push_tree(registry, f"{unique}-a", {"all.yaml": dump(*_maps(app, "a", "shared"), *protected)})
    config = tmp_path / "lockgate.yaml"
    run_syncs(cluster, config, doc("a", first, runner_ns, deletionPolicy="Delete"))
    # sync b takes "shared" over explicitly; a's inventory still lists it
    adopting = configmap("shared", app, {"v": "b"}, annotations={"lockgate.dev/adopt": "enabled"})
    second = push_tree(registry, f"{unique}-b", {"all.yaml": dump(adopting)})
    run_syncs(cluster, config, doc("b", second, runner_ns))
    a = inventory(kube, "a", runner_ns)
    assert a is not None and len(a.members) == 3

    done = lockgate(cluster, "delete", "a", "--config", str(config), "-o", "json")
    assert done.code == 0, done.err + done.out
    entries = {o["object"]: o for o in json.loads(done.out)["objects"]}
    assert entries[f"ConfigMap/{app}/a"]["action"] == "deleted"
    shared = entries[f"ConfigMap/{app}/shared"]
    assert (
        shared["action"] == "skipped"
        and f"Sync b (inventory Secret {runner_ns}/lockgate-b)" in shared["reason"]
    )
    assert entries[f"ConfigMap/{app}/keep"]["action"] == "skipped"
    left = configmaps(kube, app)
    assert set(left) == {"keep", "shared"}
    assert part_of(left["keep"]) is None  # orphaned: the gone parent no longer claims it
    assert part_of(left["shared"]) == applyset.applyset_id("lockgate-b", runner_ns)
    assert left["shared"]["data"] == {"v": "b"}
    assert inventory(kube, "a", runner_ns) is None and inventory(kube, "b", runner_ns) is not None


def test_a_file_that_still_has_the_sync_is_refused(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube, app, runner_ns = _setup(cluster, unique)
    url = push_tree(registry, unique, {"all.yaml": dump(*_maps(app, "a"))})
    config = tmp_path / "lockgate.yaml"
    run_syncs(cluster, config, doc("web", url, runner_ns, deletionPolicy="Delete"))
    refused = lockgate(cluster, "delete", "web", "--config", str(config))
    assert refused.code == 2
    assert f"--config {config} still has Sync web" in refused.err
    assert set(configmaps(kube, app)) == {"a"} and inventory(kube, "web", runner_ns) is not None
    unknown = lockgate(cluster, "delete", "nope", "-n", runner_ns)
    assert unknown.code == 2 and "sync nope has no inventory" in unknown.err


def test_wait_for_termination_waits_until_the_objects_are_gone(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube, app, runner_ns = _setup(cluster, unique)
    url = push_tree(registry, unique, {"all.yaml": dump(held_configmap("held", app), *_maps(app, "a"))})
    config = tmp_path / "lockgate.yaml"
    run_syncs(cluster, config, doc("web", url, runner_ns, deletionPolicy="WaitForTermination", timeout="2m"))
    proc = subprocess.Popen(
        delete_argv(cluster, "web", "-n", runner_ns),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        wait_for(
            "held is terminating", lambda: "deletionTimestamp" in configmaps(kube, app)["held"]["metadata"]
        )
        time.sleep(3)
        assert proc.poll() is None, "the deletion did not wait for the finalizer"
        assert inventory(kube, "web", runner_ns) is not None  # the parent goes last
        assert "a" not in configmaps(kube, app)
        release_hold(cluster, "held", app)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err + out
    assert configmaps(kube, app) == {} and inventory(kube, "web", runner_ns) is None


def test_wait_for_termination_gives_up_after_the_timeout(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube, app, runner_ns = _setup(cluster, unique)
    url = push_tree(registry, unique, {"all.yaml": dump(held_configmap("held", app))})
    config = tmp_path / "lockgate.yaml"
    run_syncs(cluster, config, doc("web", url, runner_ns, deletionPolicy="WaitForTermination", timeout="2s"))
    started = time.monotonic()
    gave_up = lockgate(cluster, "delete", "web", "-n", runner_ns)
    assert gave_up.code == 6, gave_up.err + gave_up.out
    assert 2 <= time.monotonic() - started < 30
    assert "gave up waiting for 1 deleted objects to terminate after 2s" in gave_up.err
    assert f"ConfigMap/{app}/held" in gave_up.err
    # as Flux lets the Kustomization go: the parent is deleted, the object goes with its finalizer
    assert inventory(kube, "web", runner_ns) is None
    assert "deletionTimestamp" in configmaps(kube, app)["held"]["metadata"]
    release_hold(cluster, "held", app)


def test_a_deletion_killed_midway_resumes_from_the_inventory(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube, app, runner_ns = _setup(cluster, unique)
    names = [f"c{i:03}" for i in range(300)]
    url = push_tree(registry, unique, {"all.yaml": dump(*_maps(app, *names))})
    config = tmp_path / "lockgate.yaml"
    run_syncs(cluster, config, doc("web", url, runner_ns, deletionPolicy="Delete"))
    proc = subprocess.Popen(
        delete_argv(cluster, "web", "-n", runner_ns, "--concurrency", "1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while len(configmaps(kube, app)) == len(names):
            assert proc.poll() is None, "the deletion ended before the kill point"
            assert time.monotonic() < deadline, "no object was deleted"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    left = configmaps(kube, app)
    assert 0 < len(left) < len(names), "the kill landed outside the deletions"
    record = inventory(kube, "web", runner_ns)
    assert record is not None and len(record.members) == len(names)  # still names every object

    # the killed process still holds the sync's Lease until it runs out: said, not forced
    held = lockgate(cluster, "delete", "web", "-n", runner_ns)
    assert held.code == 12 and "run lockgate delete again when that pass ends" in held.err, held.err
    wait_for("the killed process's Lease ran out", lambda: _lease_free(kube, runner_ns), timeout=60)
    done = lockgate(cluster, "delete", "web", "-n", runner_ns, "-o", "json")
    assert done.code == 0, done.err + done.out
    counts = json.loads(done.out)["counts"]
    assert counts["deleted"] == len(left)  # only what was left; the rest is known gone
    assert configmaps(kube, app) == {} and inventory(kube, "web", runner_ns) is None


def _lease_free(kube: Kube, runner_ns: str) -> bool:
    found = lease(kube, "web", runner_ns)
    return found is None or not shard.LeaseState.from_spec(found.get("spec")).live(time.time())


def _role(
    name: str, namespace: str, rules: list[dict[str, object]], subject: dict[str, str]
) -> list[dict[str, object]]:
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": namespace},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [subject],
        },
    ]


def test_a_tenants_deletion_is_made_as_its_service_account(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube, app, runner_ns = _setup(cluster, unique)
    cluster.kubectl("create", "namespace", runner_ns)
    cluster.kubectl("create", "serviceaccount", "team", "-n", runner_ns)
    inventory_rules: list[dict[str, object]] = [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]
    subject = {"kind": "ServiceAccount", "name": "team", "namespace": runner_ns}
    cluster.kubectl("apply", "-f", "-", input=dump(*_role("team", runner_ns, inventory_rules, subject)))
    no_delete: list[dict[str, object]] = [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create", "patch"]}
    ]
    cluster.kubectl("apply", "-f", "-", input=dump(*_role("team", app, no_delete, subject)))
    url = push_tree(registry, unique, {"all.yaml": dump(*_maps(app, "a", "b"))})
    config = tmp_path / "lockgate.yaml"
    run_syncs(cluster, config, doc("web", url, runner_ns, deletionPolicy="Delete", serviceAccountName="team"))
    # the runner (the admin here) could delete them; the tenant's account may not
    refused = lockgate(cluster, "delete", "web", "-n", runner_ns, "--service-account", "team")
    assert refused.code == 5, refused.err + refused.out
    assert f"ServiceAccount {runner_ns}/team cannot delete configmaps" in refused.err
    assert set(configmaps(kube, app)) == {"a", "b"}
    record = inventory(kube, "web", runner_ns)
    assert record is not None and record.last_attempt is not None
    assert record.last_attempt.reason == "DeletionFailed"

    verbs = ["get", "list", "watch", "create", "patch", "delete"]
    cluster.kubectl(
        "patch", "role", "team", "-n", app, "--type=json",
        "-p", json.dumps([{"op": "replace", "path": "/rules/0/verbs", "value": verbs}]),
    )  # fmt: skip
    who = f"--as=system:serviceaccount:{runner_ns}:team"
    wait_for(
        "the tenant may delete ConfigMaps",
        lambda: (
            "yes"
            in cluster.kubectl("auth", "can-i", "delete", "configmaps", "-n", app, who, check=False).stdout
        ),
    )
    done = lockgate(cluster, "delete", "web", "-n", runner_ns, "--service-account", "team")
    assert done.code == 0, done.err + done.out
    assert configmaps(kube, app) == {} and inventory(kube, "web", runner_ns) is None


def test_the_deleting_identity_comes_from_the_configuration_or_the_flag_never_from_the_inventory(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    kube, app, runner_ns = _setup(cluster, unique)
    cluster.kubectl("create", "namespace", runner_ns)
    # the tenant's account writes its inventory and ConfigMaps, and may not delete them; the
    # runner namespace holds a more powerful account, which may
    inventory_rules: list[dict[str, object]] = [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]
    no_delete: list[dict[str, object]] = [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create", "patch"]}
    ]
    user = tenant(cluster, runner_ns, app, "team", app_rules=no_delete, runner_rules=inventory_rules)
    tenant(cluster, runner_ns, app, "powerful")
    url = push_tree(registry, unique, {"all.yaml": dump(*_maps(app, "a", "b"))})
    other = push_tree(registry, f"{unique}-o", {"all.yaml": dump(*_maps(app, "o"))})
    runner = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Runner",
        "metadata": {"name": "runner"},
        "spec": {"defaultServiceAccount": "team"},
    }
    config = tmp_path / "lockgate.yaml"
    run_syncs(
        cluster,
        config,
        runner,
        doc("web", url, runner_ns, deletionPolicy="Delete"),
        doc("other", other, runner_ns),
    )

    # the tenant rewrites its own inventory, as its account may: "delete me as powerful"
    as_tenant = kube.impersonating(user)
    forged = store.read(as_tenant, "web", runner_ns)
    assert forged.deletion is not None and forged.deletion.service_account_name == "team"
    forged.deletion = dataclasses.replace(forged.deletion, service_account_name="powerful")
    store.write(as_tenant, forged, manager="lockgate")
    write_config(config, [runner, doc("other", other, runner_ns)])  # web removed from the file

    refused = lockgate(cluster, "delete", "web", "--config", str(config))
    assert refused.code == 2, refused.err + refused.out
    assert f"ServiceAccount {runner_ns}/powerful" in refused.err and "--service-account" in refused.err
    assert set(configmaps(kube, app)) == {"a", "b", "o"}
    # without a configuration either: the inventory alone names no one to delete as
    alone = lockgate(cluster, "delete", "web", "-n", runner_ns)
    assert alone.code == 2 and "--service-account" in alone.err, alone.err
    # the flag decides: the tenant's own account, which may not delete them
    as_team = lockgate(cluster, "delete", "web", "-n", runner_ns, "--service-account", "team")
    assert as_team.code == 5, as_team.err + as_team.out
    assert f"ServiceAccount {runner_ns}/team cannot delete configmaps" in as_team.err
    assert set(configmaps(kube, app)) == {"a", "b", "o"}
    assert inventory(kube, "web", runner_ns) is not None
