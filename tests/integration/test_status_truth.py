"""``lockgate status`` tells the truth: readiness and the last attempt, not only the last success.

Against the world. A sync whose every pass fails on a verification key that did not sign
the artifact is not ready, with the failure as its last attempt and a Warning Event, while
the revision it applied before stays its revision; a sync that has never applied anything
is listed all the same. Under ``serve``, a sync held by a ``dependsOn`` sync that is not
ready and one whose source cannot be reached are recorded as such on their parents (and so
shown without ``serve``), and a source that comes back clears it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.signing import keys
from runner.kube.client import Kube
from runner.pipeline import status
from runner.plan.inventory import Inventory
from tests.integration.history_support import lockgate
from tests.integration.reconcile_support import cli, configmap, dump, events_of, namespace, push_tree
from tests.integration.serve_support import start_serve, sync_doc
from tests.world.kube import Cluster
from tests.world.registry import Registry, start_registry

pytestmark = pytest.mark.world


def _config(path: Path, *syncs: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(list(syncs), sort_keys=False))
    return path


def _wrong_key(tmp_path: Path) -> str:
    """A cosign public key that signed nothing."""
    path = tmp_path / "wrong.pub"
    path.write_bytes(keys.generate_key_pair(b"unused").public_pem)
    return str(path)


def _row(table: str, name: str) -> dict[str, str]:
    """A row of ``lockgate status``'s table as {column: value}."""
    header, *rows = table.splitlines()
    columns = ["NAME", "READY", "SUSPENDED", "REVISION", "VERIFIED BY", "HEALTH", "LAST ATTEMPT", "SINCE"]
    columns += ["MEMBERS", "MESSAGE"]
    starts = [header.index(c) for c in columns]
    line = next(r for r in rows if r.split()[0] == name)
    ends = [*starts[1:], len(line)]
    return {c: line[s:e].strip() for c, s, e in zip(columns, starts, ends, strict=True)}


def test_a_wrong_verification_key_makes_the_sync_not_ready_with_its_last_attempt_and_an_event(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(unique), configmap("a", unique, {}))}).split(
        "@"
    )[0]
    ok = sync_doc("app", url, runner, wait=True)
    assert cli(cluster, "--config", str(_config(tmp_path / "ok.yaml", ok))).code == 0
    before = lockgate(cluster, "status", "app", "-n", runner, "-o", "json").json()
    assert before["ready"]["status"] == "True" and before["lastAttempt"]["result"] == "Succeeded"

    wrong = sync_doc("app", url, runner, wait=True, verify={"key": _wrong_key(tmp_path)})
    fresh = sync_doc("fresh", url, runner, verify={"key": _wrong_key(tmp_path)})
    broken = _config(tmp_path / "wrong.yaml", wrong, fresh)
    for _ in range(2):  # every pass fails
        run = cli(cluster, "--config", str(broken))
        assert run.code == 4, run.err

    table = lockgate(cluster, "status", "-n", runner)
    assert table.code == 0, table.err
    app = _row(table.out, "app")
    assert (app["READY"], app["LAST ATTEMPT"], app["HEALTH"]) == ("False", "Failed", "Healthy"), table.out
    assert app["REVISION"] == status.short(before["revision"]) and app["MEMBERS"] == "2"
    assert "signature" in app["MESSAGE"] or "signed" in app["MESSAGE"], table.out
    doc = lockgate(cluster, "status", "app", "-n", runner, "-o", "json").json()
    attempt = doc["lastAttempt"]
    assert (attempt["result"], attempt["reason"], attempt["exitCode"]) == ("Failed", "VerificationFailed", 4)
    assert doc["ready"]["status"] == "False" and doc["ready"]["reason"] == "VerificationFailed"
    assert doc["ready"]["message"] == attempt["message"] and doc["revision"] == before["revision"]
    warnings = [e for e in events_of(cluster, "app", runner) if e["type"] == "Warning"]
    assert warnings and {e["reason"] for e in warnings} == {"VerificationFailed"}
    assert warnings[-1]["message"] == attempt["message"]

    # a sync that never applied anything is listed, not "never ran"
    new = _row(table.out, "fresh")
    assert (new["READY"], new["LAST ATTEMPT"], new["MEMBERS"], new["REVISION"]) == (
        "False",
        "Failed",
        "0",
        "-",
    )
    assert lockgate(cluster, "status", "fresh", "-n", runner).code == 0

    # the key fixed: the next pass makes it ready again
    assert cli(cluster, "--config", str(_config(tmp_path / "ok.yaml", ok))).code == 0
    again = _row(lockgate(cluster, "status", "-n", runner).out, "app")
    assert (again["READY"], again["LAST ATTEMPT"]) == ("True", "Succeeded")


def _wait_for(what: str, check: Callable[[], bool], tail: Callable[[], str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}:\n{tail()}")


def test_serve_records_a_dependency_wait_and_an_unreachable_source(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner = f"{unique}-app", f"{unique}-r"
    away = start_registry(tmp_path, name="away-registry")
    try:
        base = push_tree(registry, f"{unique}/base", {"a.yaml": dump(namespace(ns))}).split("@")[0]
        child = push_tree(registry, f"{unique}/child", {"a.yaml": dump(configmap("child", ns, {}))}).split(
            "@"
        )[0]
        gone = push_tree(away, f"{unique}/gone", {"a.yaml": dump(namespace(f"{ns}-gone"))}).split("@")[0]
        away.process.stop()
        syncs = [
            sync_doc("base", base, runner, verify={"key": _wrong_key(tmp_path)}, retryInterval="1s"),
            sync_doc("child", child, runner, dependsOn=["base"]),
            sync_doc("gone", gone, runner, interval="2s", retryInterval="1s"),
        ]
        served = start_serve(cluster, tmp_path / "serve", syncs, runner={"namespace": runner})
        kube = Kube.from_kubeconfig(cluster.kubeconfig)

        def parents() -> dict[str, Inventory]:
            return {i.name: i for i in status.read(namespace=runner, kube=kube).inventories}

        def held(name: str, reason: str) -> bool:
            found = parents().get(name)
            return found is not None and found.held is not None and found.held.reason == reason

        try:
            _wait_for("child held by base", lambda: held("child", "DependencyNotReady"), served.tail)
            _wait_for("gone held by its source", lambda: held("gone", "ArtifactFailed"), served.tail)
            table = lockgate(cluster, "status", "-n", runner)
            assert table.code == 0, table.err
            waiting, unreachable = _row(table.out, "child"), _row(table.out, "gone")
            assert (waiting["READY"], waiting["MEMBERS"]) == ("False", "0"), table.out
            assert waiting["MESSAGE"] == "waiting for 'base' to be ready", table.out
            assert unreachable["READY"] == "False" and away.host in unreachable["MESSAGE"], table.out
            doc = lockgate(cluster, "status", "gone", "-n", runner, "-o", "json").json()
            assert doc["ready"]["reason"] == "ArtifactFailed" and away.host in doc["ready"]["message"]
            assert doc["lastAttempt"] is None and doc["members"] == 0  # no pass has run
            assert "ArtifactFailed" in {e["reason"] for e in events_of(cluster, "gone", runner)}
            assert _row(table.out, "base")["READY"] == "False"

            # the source comes back: the next check goes through, a pass runs, the hold is gone
            away.process.restart()
            _wait_for("gone ready", lambda: status.readiness(parents()["gone"]).ready, served.tail)
            back = _row(lockgate(cluster, "status", "-n", runner).out, "gone")
            assert (back["READY"], back["LAST ATTEMPT"], back["MEMBERS"]) == ("True", "Succeeded", "1")
            assert parents()["gone"].held is None
        finally:
            assert served.stop() == 0, served.tail()
    finally:
        away.stop()
