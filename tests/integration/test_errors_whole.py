"""An error is one value: kept whole wherever it is shown or stored, summarised where room is short.

Against the world: the API server refuses two objects of an artifact (a ConfigMap key it
rejects), and the error that names both is followed into ``reconcile``'s table, the
inventory's history and last attempt, ``lockgate status`` (text and JSON), the Events and
``serve``'s log lines (JSON and text). A summary names the objects it has room for and
counts the rest ("+1 more"); it never ends on a dangling colon.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from lockgate.summary import summarise
from runner.inventory.events import MAX_MESSAGE
from tests.integration.history_support import lockgate
from tests.integration.reconcile_support import cli, configmap, dump, events_of, namespace, push_tree
from tests.integration.serve_support import start_serve, sync_doc
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def refused(name: str, ns: str) -> dict[str, Any]:
    """A ConfigMap the API server refuses: its data key is not a valid key."""
    return configmap(name, ns, {"bad key!": "x"})


def _no_dangling_colon(text: str) -> None:
    assert text.strip() and not text.rstrip().endswith(":"), text


def test_a_refusal_of_two_objects_is_whole_in_the_table_status_history_and_events(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-r"
    good = push_tree(registry, unique, {"a.yaml": dump(namespace(unique), configmap("a", unique, {}))}, "v1")
    args = ("--name", unique, "-n", runner, "--insecure-skip-verify")
    assert cli(cluster, good, *args).code == 0
    bad = push_tree(
        registry,
        unique,
        {"a.yaml": dump(namespace(unique), refused("first", unique), refused("second", unique))},
        "v2",
    )
    run = cli(cluster, bad, *args)
    assert run.code == 5, run.err
    objects = (f"ConfigMap/{unique}/first", f"ConfigMap/{unique}/second")
    # the table on stdout: the failure with both objects and the API server's reason
    failed = run.out[run.out.index("FAILED:") :]
    assert failed.startswith("FAILED: 2 objects failed to apply:"), run.out
    assert all(o in failed for o in objects) and failed.count("bad key!") >= 2, run.out

    doc = lockgate(cluster, "status", unique, "-n", runner, "-o", "json").json()
    whole = doc["lastAttempt"]["message"]
    assert all(o in whole for o in objects) and whole.startswith("2 objects failed to apply:"), whole
    assert doc["history"][0]["message"] == whole  # stored whole in the inventory
    assert doc["lastAttempt"]["result"] == "Failed" and doc["lastAttempt"]["reason"] == "ApplyFailed"
    assert doc["ready"]["status"] == "False" and doc["ready"]["message"] == whole
    # where room is short: the summary names an object, counts the other, never dangles
    summary = doc["ready"]["summary"]
    assert summary == summarise(whole) and summary.startswith(f"2 objects failed to apply: {objects[0]} (")
    _no_dangling_colon(summary)
    assert doc["lastResult"]["summary"] == summarise(whole, 300)

    table = lockgate(cluster, "status", "-n", runner)
    assert table.code == 0, table.err
    header, row = table.out.splitlines()[:2]
    assert header.split()[:3] == ["NAME", "READY", "SUSPENDED"] and row.split()[:2] == [unique, "False"]
    message = row[header.index("MESSAGE") :]
    assert message.startswith("2 objects failed to apply: ConfigMap/"), table.out
    _no_dangling_colon(message)
    detail = lockgate(cluster, "status", unique, "-n", runner)
    assert "  ready:     False (ApplyFailed)" in detail.out, detail.out
    why = detail.out[detail.out.index("  why:") :]
    assert all(o in why for o in objects), detail.out

    (warning,) = [e for e in events_of(cluster, unique, runner) if e["type"] == "Warning"]
    assert warning["reason"] == "ApplyFailed" and warning["message"] == whole


def test_an_event_too_long_for_kubernetes_is_summarised_not_cut(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    """Thirty refused objects make a message beyond an Event note's 1024 characters."""
    runner = f"{unique}-r"
    ns = unique
    good = push_tree(registry, unique, {"a.yaml": dump(namespace(ns))}, "v1")
    args = ("--name", unique, "-n", runner, "--insecure-skip-verify")
    assert cli(cluster, good, *args).code == 0
    names = [f"refused-with-a-rather-long-name-{i:02d}" for i in range(30)]
    bad = push_tree(registry, unique, {"a.yaml": dump(namespace(ns), *(refused(n, ns) for n in names))}, "v2")
    run = cli(cluster, bad, *args, "-o", "json")
    assert run.code == 5, run.err
    whole = run.json()["error"]["message"]
    assert len(whole) > MAX_MESSAGE
    (warning,) = [e for e in events_of(cluster, unique, runner) if e["type"] == "Warning"]
    message = warning["message"]
    assert message == summarise(whole, MAX_MESSAGE), message
    assert len(message) <= MAX_MESSAGE and re.search(r", \+\d+ more$", message), message
    assert message.startswith(f"30 objects failed to apply: ConfigMap/{ns}/{names[0]} (")


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_serve_logs_the_whole_error(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, log_format: str
) -> None:
    runner = f"{unique}-r"
    url = push_tree(
        registry,
        unique,
        {"a.yaml": dump(namespace(unique), refused("first", unique), refused("second", unique))},
    )
    served = start_serve(
        cluster,
        tmp_path,
        [sync_doc("broken", url.split("@")[0], runner)],
        runner={"namespace": runner},
        log_format=log_format,
    )
    objects = (f"ConfigMap/{unique}/first", f"ConfigMap/{unique}/second")
    try:
        if log_format == "json":
            finished = served.wait_event(
                lambda e: e.get("msg") == "pass finished" and e.get("outcome") == "failed",
                what="the failed pass",
            )
            assert finished["error"].startswith("2 objects failed to apply:"), finished
            assert all(o in finished["error"] for o in objects), finished
        else:
            deadline = time.monotonic() + 60
            text = ""
            while "pass finished" not in text and time.monotonic() < deadline:
                time.sleep(0.2)
                text = served.log.read_text()
            after = text[text.index("pass finished") :]
            assert "2 objects failed to apply" in after and all(o in after for o in objects), served.tail()
    finally:
        assert served.stop() == 0, served.tail()
