"""What a pass reports: ``--config`` with several Syncs, the JSON document, Events on the parent."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.reconcile_support import (
    cli,
    configmap,
    dump,
    events_of,
    get,
    namespace,
    push_tree,
    run_pass,
)
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

RESULT_KEYS = {
    "name",
    "namespace",
    "url",
    "digest",
    "revision",
    "verifiedBy",
    "dryRun",
    "skipped",
    "ok",
    "error",
    "counts",
    "objects",
    "health",
    "requests",
    "seconds",
    "rolledBackFrom",
    "rolledBackTo",
    "notes",
    "waiting",
    "attested",
    "admittedBy",
    "timings",
}
COUNT_KEYS = {"created", "configured", "unchanged", "skipped", "deleted"}


def _sync(name: str, url: str, runner: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": name},
        "spec": {"url": url, "namespace": runner, "interval": "5m", "verify": {"insecureSkip": True}, **spec},
    }


def test_a_config_file_runs_each_sync(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    one = push_tree(
        registry, f"{unique}/one", {"a.yaml": dump(namespace(unique), configmap("one", unique, {}))}
    )
    two = push_tree(
        registry,
        f"{unique}/two",
        {
            "base/a.yaml": dump(configmap("two", "elsewhere", {"k": "2"})),
            "other/b.yaml": dump(namespace("x")),
        },
    )
    syncs = tmp_path / "syncs.yaml"
    syncs.write_text(
        yaml.safe_dump_all(
            [
                _sync("one", one, runner, prune=True),
                _sync("two", two, runner, path="base", targetNamespace=unique, timeout="30s"),
            ]
        )
    )
    run = cli(cluster, "--config", str(syncs), "-o", "json")
    assert run.code == 0, run.err
    docs = run.json()
    assert [d["name"] for d in docs] == ["one", "two"]
    assert [d["counts"]["created"] for d in docs] == [2, 1]
    assert get(cluster, "configmap", "two", unique)["data"] == {"k": "2"}  # type: ignore[index]
    assert get(cluster, "namespace", "x") is None  # outside --path
    for name in ("one", "two"):
        assert get(cluster, "secret", f"lockgate-{name}", runner) is not None
    # one Sync failing does not stop the others; the exit code is the first failure's
    missing = one.split("@")[0] + "-missing"
    syncs.write_text(
        yaml.safe_dump_all(
            [_sync("one", missing, runner), _sync("two", two, runner, path="base", targetNamespace=unique)]
        )
    )
    failed = cli(cluster, "--config", str(syncs), "-o", "json")
    assert failed.code == 7, failed.err
    docs = failed.json()
    assert [d["ok"] for d in docs] == [False, True]
    assert docs[0]["error"]["exitCode"] == 7 and "latest-missing not found" in docs[0]["error"]["message"]
    assert get(cluster, "configmap", "one", unique) is not None  # a failed resolve prunes nothing


def test_a_config_file_is_validated_before_anything_runs(cluster: Cluster, tmp_path: Path) -> None:
    syncs = tmp_path / "syncs.yaml"
    syncs.write_text(yaml.safe_dump_all([_sync("same", "oci://x/y", "r"), _sync("same", "oci://x/z", "r")]))
    assert "duplicate name 'same'" in cli(cluster, "--config", str(syncs)).err
    syncs.write_text("apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: a}\nspec: {}\n")
    run = cli(cluster, "--config", str(syncs))
    assert run.code == 2, run.err
    assert f"{syncs}:4: Sync/a: spec.url: required field is missing" in run.err
    assert f"{syncs}:4: Sync/a: spec.interval: required field is missing" in run.err
    assert "Traceback" not in run.err


def test_the_json_document(cluster: Cluster, registry: Registry, unique: str) -> None:
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(unique), configmap("a", unique, {"k": "1"}))})
    args = ("--name", unique, "-n", f"{unique}-r", "--insecure-skip-verify", "-o", "json")
    run = cli(cluster, url, *args)
    assert run.code == 0, run.err
    doc = run.json()
    assert set(doc) == RESULT_KEYS
    digest = url.rsplit("@", 1)[1]
    assert doc["name"] == unique and doc["namespace"] == f"{unique}-r"
    assert doc["url"] == f"oci://{registry.host}/{unique}@{digest}"
    assert doc["digest"] == digest and doc["revision"] == digest  # pinned by digest: no tag in it
    assert doc["verifiedBy"] == "nobody (--insecure-skip-verify)"
    assert (doc["ok"], doc["error"], doc["dryRun"], doc["health"]) == (True, None, False, {})
    assert doc["counts"] == {"created": 2, "configured": 0, "unchanged": 0, "skipped": 0, "deleted": 0}
    assert doc["objects"][1] == {
        "object": f"ConfigMap/{unique}/a",
        "group": "",
        "kind": "ConfigMap",
        "namespace": unique,
        "name": "a",
        "action": "created",
    }
    assert set(doc["requests"]) <= {"get", "list", "patch", "create", "delete", "watch"}
    assert isinstance(doc["seconds"], float)
    # a change carries the field diff; a failure carries the message and the exit code
    changed = push_tree(
        registry, unique, {"a.yaml": dump(namespace(unique), configmap("a", unique, {"k": "2"}))}
    )
    doc = cli(cluster, changed, *args).json()
    entry = next(o for o in doc["objects"] if o["name"] == "a")
    assert entry["changes"] == [{"path": "data.k", "before": "1", "after": "2"}]
    bad = push_tree(registry, unique, {"a.yaml": dump(configmap("a", "", {"k": "1"}))}, "bad")
    failed = cli(cluster, bad, *args)
    assert failed.code == 8
    error = failed.json()["error"]
    assert error["exitCode"] == 8 and "names no namespace" in error["message"]


def test_events_on_the_parent(cluster: Cluster, registry: Registry, unique: str) -> None:
    runner = f"{unique}-r"
    v1 = {"a.yaml": dump(namespace(unique), *(configmap(f"c{i}", unique, {"k": "1"}) for i in range(3)))}
    pinned = push_tree(registry, unique, v1, "v1")
    url = pinned.rsplit("@", 1)[0]  # by tag: the revision is v1@sha256:...
    assert run_pass(cluster, url, unique, runner, prune=True).error is None
    assert run_pass(cluster, url, unique, runner, prune=True).error is None  # no-op: no Event
    (event,) = events_of(cluster, unique, runner)
    assert (event["type"], event["reason"]) == ("Normal", "ReconciliationSucceeded")
    assert event["message"] == f"v1@{pinned.rsplit('@', 1)[1]}: 4 created"
    assert event["involvedObject"]["kind"] == "Secret" and event["source"]["component"] == "lockgate"
    # refused mass prune: a Warning naming the refusal
    empty = push_tree(registry, unique, {"a.yaml": dump(namespace(unique))}, "v2")
    assert run_pass(cluster, empty, unique, runner, prune=True).error is not None
    # the API server refuses an object: a Warning with its message
    invalid = configmap("c0", unique, {"k": "1"})
    invalid["data"] = {"bad key!": "x"}
    broken = push_tree(registry, unique, {"a.yaml": dump(namespace(unique), invalid)}, "v3")
    assert run_pass(cluster, broken, unique, runner).error is not None
    warnings = {e["reason"]: e for e in events_of(cluster, unique, runner) if e["type"] == "Warning"}
    assert set(warnings) == {"PruneRefused", "ApplyFailed"}
    assert "refusing to prune 3 of 4 objects" in warnings["PruneRefused"]["message"]
    assert f"ConfigMap/{unique}/c0" in warnings["ApplyFailed"]["message"]
    assert "bad key!" in warnings["ApplyFailed"]["message"]


@pytest.mark.parametrize("output", ["table", "json"])
def test_an_unreachable_cluster_is_its_own_exit_code(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, output: str
) -> None:
    """Exit 11 (cluster), not 5 (apply refused): nothing was refused, the cluster never answered."""
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(unique))})
    dead = tmp_path / "dead.kubeconfig"
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    with socket.socket() as sock:  # a port nobody listens on: bound, never accepted
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
        dead.write_text(yaml.safe_dump(config))
        run = cli(cluster, url, "--name", unique, "--insecure-skip-verify", "-o", output, kubeconfig=dead)
    assert run.code == 11, run.err
    assert f"cannot reach the Kubernetes API at https://127.0.0.1:{port}: connection refused" in run.err
    if output == "json":
        assert run.json()["error"]["exitCode"] == 11
    assert get(cluster, "namespace", unique) is None
