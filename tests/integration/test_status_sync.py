"""``lockgate status`` and ``lockgate sync``: read from the inventory Secrets, no serve running."""

from __future__ import annotations

import pytest

from runner.plan.inventory import REQUESTED_AT
from tests.integration.history_support import inventory, lockgate, options, run
from tests.integration.reconcile_support import configmap, dump, get, namespace, push_tree
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

STATUS_KEYS = {
    "name",
    "namespace",
    "source",
    "revision",
    "digest",
    "verifiedBy",
    "waiting",
    "ready",
    "suspended",
    "lastAttempt",
    "lastResult",
    "health",
    "members",
    "history",
    "rejected",
    "requestedAt",
    "lastHandledRequestedAt",
    "drifted",
}


def _two_syncs(cluster: Cluster, registry: Registry, unique: str) -> tuple[str, str]:
    runner = f"{unique}-r"
    one = push_tree(
        registry, f"{unique}/one", {"a.yaml": dump(namespace(unique), configmap("one", unique, {}))}
    )
    two = push_tree(registry, f"{unique}/two", {"a.yaml": dump(configmap("two", unique, {"k": "1"}))})
    assert run(cluster, options(one.rsplit("@", 1)[0], "one", runner, wait=True)).error is None
    assert run(cluster, options(two, "two", runner)).error is None
    return one, two


def test_status_lists_each_sync_and_shows_one_with_its_history(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-r"
    one, two = _two_syncs(cluster, registry, unique)
    table = lockgate(cluster, "status", "-n", runner)
    assert table.code == 0, table.err
    header, first, second = table.out.splitlines()
    assert header.split() == [
        "NAME",
        "READY",
        "SUSPENDED",
        "REVISION",
        "VERIFIED",
        "BY",
        "HEALTH",
        "LAST",
        "ATTEMPT",
        "SINCE",
        "MEMBERS",
        "MESSAGE",
    ]
    digest = one.rsplit("@", 1)[1]
    assert first.split()[:4] == ["one", "True", "False", f"latest@{digest[:19]}"]
    assert "Succeeded" in first and "Healthy" in first and f"Applied revision: latest@{digest[:19]}" in first
    assert second.split()[:2] == ["two", "True"] and "Unknown" in second  # no wait: health not checked

    docs = lockgate(cluster, "status", "-n", runner, "-o", "json").json()
    assert [d["name"] for d in docs] == ["one", "two"] and set(docs[0]) == STATUS_KEYS
    assert (docs[0]["digest"], docs[0]["revision"], docs[0]["members"]) == (digest, f"latest@{digest}", 2)
    assert docs[0]["verifiedBy"] == "nobody (--insecure-skip-verify)"
    assert docs[0]["lastResult"]["status"] == "Succeeded" and docs[0]["lastResult"]["time"].endswith("Z")
    assert docs[0]["history"][0]["result"] == "Succeeded" and docs[0]["history"][0]["health"] == "Healthy"
    assert docs[0]["ready"] == {
        "status": "True",
        "reason": "ReconciliationSucceeded",
        "message": f"Applied revision: latest@{digest}",
        "summary": f"Applied revision: latest@{digest}",
    }
    assert docs[0]["suspended"] is False
    attempt = docs[0]["lastAttempt"]
    assert (attempt["result"], attempt["revision"], attempt["exitCode"]) == (
        "Succeeded",
        f"latest@{digest}",
        0,
    )
    assert attempt["message"] == "2 created; 2 objects healthy" and attempt["time"].endswith("Z")

    detail = lockgate(cluster, "status", "one", "-n", runner)
    assert detail.code == 0, detail.err
    assert f"  digest:    {digest}" in detail.out
    assert "  health:    Healthy" in detail.out
    assert "  ready:     True (ReconciliationSucceeded)" in detail.out
    assert "  attempt:   Succeeded since " in detail.out
    lines = detail.out.splitlines()
    row = lines[lines.index("  history:") + 2].split()
    assert row[1:4] == [f"latest@{digest[:19]}", "Succeeded", "Healthy"]
    doc = lockgate(cluster, "status", "two", "-n", runner, "-o", "json").json()
    assert doc["name"] == "two" and doc["revision"] == two.rsplit("@", 1)[1]

    missing = lockgate(cluster, "status", "nope", "-n", runner)
    assert missing.code == 2 and f"sync nope has never run in namespace {runner}" in missing.err
    empty = lockgate(cluster, "status", "-n", f"{unique}-empty")
    assert empty.code == 0 and empty.out.strip() == "no syncs have run in this namespace"


def test_sync_sets_only_the_requested_at_annotation(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-r"
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(unique), configmap("c", unique, {}))})
    sync = options(url, unique, runner)
    assert run(cluster, sync).error is None
    before = get(cluster, "secret", f"lockgate-{unique}", runner)
    assert before is not None

    asked = lockgate(cluster, "sync", unique, "-n", runner)
    assert asked.code == 0, asked.err
    after = get(cluster, "secret", f"lockgate-{unique}", runner)
    assert after is not None
    at = after["metadata"]["annotations"].pop(REQUESTED_AT)
    assert at.endswith("Z") and f"requested at {at}" in asked.out
    # reconcile ran it, never serve: nothing answers the request, and sync says so
    assert "no lockgate serve has run this sync" in asked.out and "within seconds" not in asked.out
    assert after["metadata"]["annotations"] == before["metadata"]["annotations"]
    assert after["data"] == before["data"] and after["metadata"]["labels"] == before["metadata"]["labels"]
    assert "lockgate-sync" in {m["manager"] for m in after["metadata"]["managedFields"]}
    assert inventory(cluster, unique, runner).request_pending
    assert (
        f"  requested: {at} (lockgate sync; not handled yet)"
        in lockgate(cluster, "status", unique, "-n", runner).out
    )

    # the pass serve runs for it records the request as handled; the runner's own writes keep the annotation
    assert run(cluster, sync, requested_at=at).error is None
    handled = inventory(cluster, unique, runner)
    assert (handled.requested_at, handled.handled_request, handled.request_pending) == (at, at, False)
    assert "requested:" not in lockgate(cluster, "status", unique, "-n", runner).out

    never = lockgate(cluster, "sync", "never-ran", "-n", runner)
    assert never.code == 2
    assert f"sync never-ran has never run in namespace {runner} (no Secret lockgate-never-ran)" in never.err


def test_a_requested_pass_that_fails_before_applying_still_answers_the_request(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-r"
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(unique), configmap("c", unique, {}))})
    assert run(cluster, options(url, unique, runner)).error is None
    asked = lockgate(cluster, "sync", unique, "-n", runner)
    assert asked.code == 0, asked.err
    at = inventory(cluster, unique, runner).requested_at
    # the pass that answers it cannot even fetch the artifact (no such tag): it ran all the same
    missing = url.rsplit("@", 1)[0].rsplit(":", 1)[0] + ":no-such-tag"
    failed = run(cluster, options(missing, unique, runner), requested_at=at)
    assert failed.error is not None and "no-such-tag" in failed.error.message
    handled = inventory(cluster, unique, runner)
    assert (handled.handled_request, handled.request_pending) == (at, False)
    assert handled.digest == url.rsplit("@", 1)[1]  # nothing else of the inventory changed
