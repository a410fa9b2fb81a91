"""``reconcile --wait`` interrupted, and a sync looked at while it waits (issue 36, items 1 and 3).

A release whose Pods are Unschedulable (no kwok node has the label its nodeSelector asks for)
is applied over a healthy one on the full cluster (controllers, scheduler, kwok nodes). While
the pass waits, ``lockgate status`` (the table, ``-o json``) and the status page must show the
health of the revision they show (``Progressing``), never the verdict of the release before
it; Ctrl-C (SIGINT) or SIGTERM then stops the pass at its next look at its guard: it records
itself ``Abandoned``, prints what it had applied, exits 12 (the README's code for an abandoned
pass), and the health shown is that digest's own last verdict (``Unknown``: nothing was
decided), never another digest's ``Healthy``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.integration.reconcile_support import (
    LOCKGATE,
    cli,
    configmap,
    deployment,
    dump,
    namespace,
    push_tree,
)
from tests.integration.web_support import browser, watch
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = [pytest.mark.world, pytest.mark.full]


def _env() -> dict[str, str]:
    return {**os.environ, "LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize"))}


def _status(cluster: Cluster, runner: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LOCKGATE, "status", *args, "-n", runner, f"--kubeconfig={cluster.kubeconfig}"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _status_json(cluster: Cluster, runner: str, name: str) -> dict[str, Any]:
    run = _status(cluster, runner, name, "-o", "json")
    assert run.returncode == 0, run.stderr
    doc: dict[str, Any] = json.loads(run.stdout)
    return doc


def _health_column(table: str, name: str) -> str:
    """The HEALTH cell of sync ``name``'s row in ``lockgate status``'s table."""
    lines = table.splitlines()
    header = lines[0]
    start = header.index("HEALTH")
    end = header.index("LAST ATTEMPT")
    row = next(line for line in lines[1:] if line.split()[0] == name)
    return row[start:end].strip()


def _release(ns: str, version: str, *, schedulable: bool) -> dict[str, str]:
    web = deployment("web", ns, node_selector=None if schedulable else {"no-such-node": "true"})
    return {"app.yaml": dump(namespace(ns), configmap("cfg", ns, {"version": version}), web)}


def _wait_progressing(
    cluster: Cluster, runner: str, name: str, digest: str, proc: subprocess.Popen[str]
) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        doc = _status_json(cluster, runner, name)
        last = doc.get("lastAttempt") or {}
        if last.get("result") == "Progressing" and last.get("digest") == digest:
            return
        if proc.poll() is not None:
            raise AssertionError(f"the pass ended before waiting: {proc.communicate()}")
        time.sleep(0.5)
    raise AssertionError(f"the pass never recorded Progressing for {digest}: {doc}")


def _page_health(cluster: Cluster, runner: str, name: str, tmp: Path) -> tuple[str, str]:
    """(health, digest title) of the sync's row on ``lockgate status --web``, in Chromium."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    local = subprocess.Popen(
        [*LOCKGATE, "status", "--web", "--no-open", "-n", runner, f"--kubeconfig={cluster.kubeconfig}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert local.stdout is not None
        line = local.stdout.readline()
        assert "http://127.0.0.1:" in line, line
        url = "http://" + line.split("http://", 1)[1].split()[0]
        with browser() as chromium:
            watched = watch(chromium)
            watched.page.goto(url)
            row = watched.page.locator(f'tr[data-sync="{name}"]')
            expect(row).to_be_visible(timeout=30_000)
            health = row.locator('td[data-label="Health"]').inner_text().strip()
            digest = row.locator('td[data-label="Digest"] code').get_attribute("title") or ""
            watched.shot(f"interrupted-{tmp.name}")
            return health, digest
    finally:
        local.send_signal(signal.SIGINT)
        local.wait(20)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_an_interrupted_wait_is_abandoned_and_status_shows_the_health_of_the_revision_shown(
    stop: signal.Signals, full_cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner, name = unique, f"{unique}-r", unique
    flags = ("--name", name, "-n", runner, "--insecure-skip-verify", "--wait")
    healthy = push_tree(registry, unique, _release(ns, "1", schedulable=True), "v1")
    first = cli(full_cluster, healthy, *flags, "--timeout", "120s")
    assert first.code == 0, first.err
    assert _status_json(full_cluster, runner, name)["health"] == "Healthy"

    stuck = push_tree(registry, unique, _release(ns, "2", schedulable=False), "v2")
    digest = stuck.rsplit("@", 1)[1]
    proc = subprocess.Popen(
        [*LOCKGATE, "reconcile", stuck, *flags, "--timeout", "5m", f"--kubeconfig={full_cluster.kubeconfig}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        _wait_progressing(full_cluster, runner, name, digest, proc)
        # looked at while it waits: the health of the digest shown, not v1's Healthy
        waiting = _status_json(full_cluster, runner, name)
        assert waiting["digest"] == digest, waiting
        assert waiting["health"] == "Progressing", waiting
        assert waiting["ready"]["status"] == "Unknown", waiting
        table = _status(full_cluster, runner)
        assert table.returncode == 0, table.stderr
        assert _health_column(table.stdout, name) == "Progressing", table.stdout
        health, shown = _page_health(full_cluster, runner, name, tmp_path)
        assert (health, shown) == ("Progressing", digest)

        proc.send_signal(stop)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    said = out + err
    assert proc.returncode == 12, said
    assert "Traceback" not in said, said
    # what the pass had applied before it stopped, and that it stopped
    applied = {
        line.split()[0]: line.split()[1]
        for line in out.splitlines()
        if "/" in line and len(line.split()) >= 2
    }
    assert applied.get(f"ConfigMap/{ns}/cfg") == "configured", out
    assert applied.get(f"Deployment.apps/{ns}/web") == "configured", out
    assert f"interrupted by {stop.name}" in err, err
    assert "abandoned" in err.lower(), err

    after = _status_json(full_cluster, runner, name)
    assert after["lastAttempt"]["result"] == "Abandoned", after
    assert after["lastAttempt"]["exitCode"] == 12, after
    assert after["digest"] == digest
    assert after["history"][0]["digest"] == digest and after["history"][0]["result"] == "Abandoned"
    # that digest's own verdict: nothing was decided; never v1's Healthy
    assert after["health"] == "Unknown", after
    assert after["ready"]["status"] == "Unknown", after
    table = _status(full_cluster, runner)
    assert _health_column(table.stdout, name) == "Unknown", table.stdout
    health, shown = _page_health(full_cluster, runner, name, tmp_path)
    assert (health, shown) == ("Unknown", digest)
