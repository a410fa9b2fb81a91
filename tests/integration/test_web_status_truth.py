"""The status page tells the truth about syncs that are not fine, in a real browser.

Debian's chromium, headless, against ``lockgate serve`` on the world's cluster and registry,
with four syncs that are not simply applied: one failing (its verification key signed
nothing), one suspended, one waiting for the failing one (``dependsOn``) and one rolled
back (its new digest never became healthy). Each shows its readiness and its last attempt,
the error's summary with the whole one behind it, never "Not run" beside a time, and after
the rollback the unhealthy objects are those of what runs now (none). Screenshots go to
``$LOCKGATE_ARTIFACTS/web`` (``tests/.artifacts/web``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Page, expect

from lockgate.signing import keys
from tests.integration.reconcile_support import configmap, deployment, dump, namespace, push_tree
from tests.integration.serve_support import start_serve, sync_doc
from tests.integration.web_support import axe_violations, browser, watch
from tests.world.kube import Cluster
from tests.world.process import free_port
from tests.world.registry import Registry

pytestmark = pytest.mark.world

SYNCS = ("failing", "paused", "waiting", "rolling")


def row(page: Page, name: str) -> Any:
    return page.locator(f'tr[data-sync="{name}"]')


def api(url: str, path: str = "") -> dict[str, Any]:
    answer = requests.get(f"{url}api/syncs{path}", timeout=10)
    assert answer.status_code == 200, answer.text
    doc: dict[str, Any] = answer.json()
    return doc


def wait_api(url: str, what: str, check: Any, tail: Any, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = api(url)
        syncs = {s["name"]: s for s in doc["syncs"]}
        if check(syncs):
            return syncs
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}: {api(url)}\n{tail()}")


def test_failing_suspended_waiting_and_rolled_back_syncs_read_right(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns, port = f"{unique}-app", f"{unique}-run", free_port()
    wrong = tmp_path / "wrong.pub"
    wrong.write_bytes(keys.generate_key_pair(b"unused").public_pem)
    plain = push_tree(registry, f"{unique}/plain", {"a.yaml": dump(configmap("plain", ns, {}))}).split("@")[0]
    good = {"a.yaml": dump(namespace(ns), configmap("cfg", ns, {"v": "1"}))}
    rolling = push_tree(registry, f"{unique}/rolling", good, "live").split("@")[0]
    served = start_serve(
        cluster,
        tmp_path,
        [
            sync_doc("failing", plain, runner_ns, verify={"key": str(wrong)}),
            sync_doc("paused", plain, runner_ns, suspend=True),
            sync_doc("waiting", plain, runner_ns, dependsOn=["failing"]),
            sync_doc(
                "rolling",
                rolling,
                runner_ns,
                wait=True,
                timeout="3s",
                rollback="onHealthFailure",
                interval="2s",
            ),
        ],
        runner={"namespace": runner_ns, "statusPage": {"address": f"127.0.0.1:{port}"}},
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        served.wait_sync_ready("rolling", timeout=90)
        # a new digest whose Deployment asks for a node no cluster has: it times out, rolled back
        stuck = deployment("web", ns, node_selector={"no-such-node": "true"})
        bad = {"a.yaml": dump(namespace(ns), configmap("cfg", ns, {"v": "2"}), stuck)}
        push_tree(registry, f"{unique}/rolling", bad, "live")
        syncs = wait_api(
            url,
            "the rollback and the failures",
            lambda s: (
                (s["rolling"]["lastAttempt"] or {}).get("result") == "RolledBack"
                and (s["failing"]["lastAttempt"] or {}).get("result") == "Failed"
                and s["waiting"]["ready"]["reason"] == "DependencyNotReady"
            ),
            served.tail,
        )
        failing, paused, waiting, rolled = (syncs[n] for n in SYNCS)
        assert failing["ready"]["status"] == "False" and failing["ready"]["reason"] == "VerificationFailed"
        assert "is not signed" in failing["ready"]["message"]
        assert paused["suspended"] is True and paused["lastAttempt"] is None and not paused["lastPass"]
        assert waiting["ready"]["message"] == "waiting for 'failing' to be ready"
        assert rolled["ready"]["status"] == "False" and rolled["ready"]["reason"] == "RolledBack"
        assert f"Deployment.apps/{ns}/web" in rolled["ready"]["message"]  # whole: the failed object
        deadline = time.monotonic() + 10  # the page reads the inventories at most once a second
        while (detail := api(url, "/rolling"))["history"][0]["result"] != "RolledBack":
            assert time.monotonic() < deadline, detail["history"]
            time.sleep(0.3)
        # what runs now is the revision rolled back to: nothing of it is unhealthy
        assert detail["unhealthy"] == [], detail["unhealthy"]
        assert [h["result"] for h in detail["history"][:2]] == ["RolledBack", "Failed"]

        with browser() as chromium:
            watched = watch(chromium, viewport={"width": 1400, "height": 900})
            page = watched.page
            page.goto(url)
            for name in SYNCS:
                expect(row(page, name)).to_be_visible()
            expect(row(page, "failing")).to_contain_text("Not ready")
            expect(row(page, "failing")).to_contain_text("VerificationFailed")
            expect(row(page, "failing").locator("td[data-label='Last attempt']")).to_contain_text("Failed")
            expect(row(page, "paused")).to_contain_text("Suspended")
            expect(row(page, "waiting")).to_contain_text("DependencyNotReady")
            expect(row(page, "waiting")).to_contain_text("waiting for 'failing' to be ready")
            expect(row(page, "rolling").locator("td[data-label='Last attempt']")).to_contain_text(
                "RolledBack"
            )
            # "Not run" only where nothing ran: never beside a time
            for name in SYNCS:
                attempt = row(page, name).locator("td[data-label='Last attempt']")
                if "Not run" in attempt.inner_text():
                    assert attempt.locator("time").count() == 0, name
            expect(row(page, "rolling")).to_contain_text("was rolled back")
            # the summary (digests shortened), and the whole error behind it
            whole = row(page, "failing").locator("details.message")
            expect(whole.locator("summary")).to_contain_text("is not signed")
            expect(whole.locator("pre")).not_to_be_visible()
            whole.locator("summary").click()
            expect(whole.locator("pre")).to_contain_text(failing["ready"]["message"])
            page.wait_for_timeout(2500)  # an update of the page keeps it open
            expect(whole.locator("pre")).to_be_visible()
            watched.shot("truth-overview")

            page.goto(f"{url}sync/failing")
            expect(page.locator("#why")).to_contain_text("is not signed")
            expect(page.locator(".facts")).to_contain_text("Failed")
            watched.shot("truth-sync-failing")
            page.goto(f"{url}sync/paused")
            expect(page.locator(".facts")).to_contain_text("Suspended")
            expect(page.locator(".facts")).to_contain_text("Not run")
            watched.shot("truth-sync-suspended")
            page.goto(f"{url}sync/waiting")
            expect(page.locator("#why")).to_contain_text("waiting for 'failing' to be ready")
            watched.shot("truth-sync-waiting")
            page.goto(f"{url}sync/rolling")
            expect(page.locator("#unhealthy")).to_contain_text("None in the last pass")
            expect(page.locator("#why")).to_contain_text("was rolled back")
            # the last attempt's whole error: the rollback, then the object that failed
            expect(page.locator("#attempt")).to_contain_text("failed its health checks and was rolled back")
            expect(page.locator("#attempt")).to_contain_text(f"Deployment.apps/{ns}/web")
            history = page.locator("#history tbody tr")
            expect(history.nth(0)).to_contain_text("RolledBack")
            expect(history.nth(1)).to_contain_text("Failed")
            watched.shot("truth-sync-rolled-back")
            assert watched.csp_violations() == [], watched.console
            assert watched.problems() == [], watched.console + watched.errors
            for path in ("", "sync/rolling"):
                assert axe_violations(chromium, url + path) == []
    finally:
        assert served.stop() == 0, served.tail()
