"""The status page in a real browser (Debian's chromium, headless, driven by Playwright).

Against ``lockgate serve`` on the world's cluster and registry: the overview lists the syncs
with a link to the source commit, updates by itself after a webhook-triggered pass, a Secret
change shows masked values only, a failing health check shows the object and its kstatus
reason, a rollback shows in the history; the strict CSP is sent and nothing violates it;
axe-core finds no serious or critical accessibility problem; ``status --web`` shows the
same view without ``serve``; beyond loopback the page needs its token. Screenshots are
kept in ``$LOCKGATE_ARTIFACTS/web`` (``tests/.artifacts/web``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Page, expect

from runner.serve.web import app
from tests.integration.reconcile_support import LOCKGATE, configmap, deployment, dump, namespace, push_tree
from tests.integration.serve_support import Served, runner_doc, start_serve, sync_doc, write_config
from tests.integration.web_support import PHONE, Watched, axe_violations, browser, watch
from tests.world.kube import Cluster
from tests.world.process import free_port
from tests.world.registry import Registry

pytestmark = pytest.mark.world

TOKEN = "status-page-test-token"
SOURCE = "https://git.example.test/org/app"
DOCS_IMAGE = Path(__file__).resolve().parents[2] / "docs" / "images" / "status-page.png"


def secret(name: str, ns: str, password: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "type": "Opaque",
        "stringData": {"password": password, "user": "app"},
    }


def push_with_provenance(registry: Registry, repo: str, tmp: Path, files: dict[str, str], sha: str) -> str:
    """``lockgate push`` with source and revision annotations; returns the pushed digest."""
    root = tmp / f"src-{sha[:8]}"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    proc = subprocess.run(
        [
            *LOCKGATE,
            "push",
            str(root),
            registry.oci(repo, ":live"),
            f"--source={SOURCE}",
            f"--revision=main@sha1:{sha}",
            "--created=0",
            "--output=json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["digest"])


def webhook_and_page(cluster: Cluster, runner_ns: str, page_port: int, **page: Any) -> dict[str, Any]:
    cluster.kubectl("create", "namespace", runner_ns, check=False)
    cluster.kubectl(
        "create", "secret", "generic", "webhook", "-n", runner_ns, f"--from-literal=token={TOKEN}"
    )
    return {
        "namespace": runner_ns,
        "webhook": {"secretRef": {"name": "webhook"}},
        "statusPage": {"address": f"127.0.0.1:{page_port}", **page},
    }


def hook(served: Served, sync: str) -> None:
    answer = served.hook(sync, headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200, answer.text


def row(page: Page, name: str) -> Any:
    return page.locator(f'tr[data-sync="{name}"]')


def assert_clean(watched: Watched) -> None:
    assert watched.csp_violations() == [], watched.console
    assert watched.problems() == [], watched.console + watched.errors


def test_the_overview_updates_itself_and_a_secret_change_shows_masked_values(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns, port = f"{unique}-app", f"{unique}-run", free_port()
    runner = webhook_and_page(cluster, runner_ns, port)
    cluster.kubectl("create", "namespace", ns)
    first_sha, second_sha = "1" * 40, "2" * 40
    first = push_with_provenance(
        registry,
        f"{unique}/app",
        tmp_path,
        {"all.yaml": dump(configmap("cfg", ns, {"v": "1"}), secret("creds", ns, "hunter2-first"))},
        first_sha,
    )
    other = push_tree(registry, f"{unique}/other", {"cm.yaml": dump(configmap("other", ns, {"v": "1"}))})
    served = start_serve(
        cluster,
        tmp_path,
        [
            sync_doc("app", registry.oci(f"{unique}/app", ":live"), runner_ns),
            sync_doc("other", other.split("@")[0], runner_ns),
        ],
        runner=runner,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        served.wait_sync_ready("app")
        served.wait_sync_ready("other")
        # the page's own checks, without a browser: headers, and loopback host names only
        answer = requests.get(url, timeout=5)
        assert answer.headers["Content-Security-Policy"] == app.CSP
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert answer.headers["X-Frame-Options"] == "DENY"
        assert "<script>" not in answer.text and "style=" not in answer.text
        rebound = requests.get(f"{url}api/syncs", headers={"Host": "attacker.example"}, timeout=5)
        assert rebound.status_code == 421
        assert requests.post(f"{url}api/syncs", timeout=5).status_code == 405

        with browser() as chromium:
            watched = watch(chromium, viewport={"width": 1280, "height": 900})
            page = watched.page
            response = page.goto(url)
            assert response is not None and response.headers["content-security-policy"] == app.CSP
            expect(row(page, "app")).to_be_visible()
            expect(row(page, "other")).to_be_visible()
            expect(row(page, "app")).to_contain_text("Ready")
            expect(row(page, "app")).to_contain_text("live@sha256:" + first[7:19])
            expect(row(page, "app")).to_contain_text("nobody")
            link = row(page, "app").locator("a.commit")
            expect(link).to_have_attribute("href", f"{SOURCE}/commit/{first_sha}")
            expect(row(page, "other")).not_to_contain_text("source main@")
            watched.shot("overview")

            # a new digest, a webhook, a pass: the open page shows it without being reloaded
            page.evaluate("window.__notReloaded = true")
            second = push_with_provenance(
                registry,
                f"{unique}/app",
                tmp_path,
                {"all.yaml": dump(configmap("cfg", ns, {"v": "2"}), secret("creds", ns, "hunter2-second"))},
                second_sha,
            )
            hook(served, "app")
            expect(row(page, "app")).to_contain_text("live@sha256:" + second[7:19], timeout=60_000)
            expect(link).to_have_attribute("href", f"{SOURCE}/commit/{second_sha}")
            assert page.evaluate("window.__notReloaded") is True

            # keyboard: Tab to the sync's link and follow it with Enter
            page.locator('tr[data-sync="app"] th a').focus()
            page.keyboard.press("Enter")
            page.wait_for_url(f"{url}sync/app")
            changes = page.locator("#changes")
            expect(changes).to_contain_text("Secret", timeout=20_000)
            creds = changes.locator('li[data-object*="creds"]')
            expect(creds).to_contain_text("data.password")
            expect(creds).not_to_contain_text("data.user")
            expect(creds).to_contain_text("*** (before)")
            expect(creds).to_contain_text("*** (after)")
            expect(changes.locator('li[data-object*="cfg"] tbody td')).to_have_text(["data.v", "1", "2"])
            expect(page.locator("#events")).to_contain_text("ReconciliationSucceeded")
            expect(page.locator("#history")).to_contain_text("Succeeded")
            # drift: someone edits an object; a requested pass (lockgate sync) corrects it
            expect(page.locator("#drift")).to_contain_text("None since this serve started")
            cluster.kubectl(
                "patch", "configmap", "cfg", "-n", ns, "--type=merge", "-p", '{"data":{"v":"edited"}}'
            )
            asked = subprocess.run(
                [*LOCKGATE, "sync", "app", "-n", runner_ns, f"--kubeconfig={cluster.kubeconfig}"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert asked.returncode == 0, asked.stderr
            expect(page.locator("#drift")).to_contain_text(f"ConfigMap/{ns}/cfg", timeout=60_000)
            body = page.content() + json.dumps(requests.get(f"{url}api/syncs/app", timeout=5).json())
            assert "hunter2" not in body
            watched.shot("sync-app")
            assert_clean(watched)

            phone = watch(chromium, viewport=PHONE, is_mobile=True)
            phone.page.goto(url)
            expect(row(phone.page, "app")).to_be_visible()
            width = phone.page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"], f"the overview scrolls sideways at phone width ({width}px)"
            phone.shot("overview-phone")
            assert_clean(phone)

            for path in ("", "sync/app"):
                assert axe_violations(chromium, url + path) == []
    finally:
        served.stop()

    # status --web: the same view from the inventories, without serve
    local = subprocess.Popen(
        [
            *LOCKGATE,
            "status",
            "--web",
            "--no-open",
            "-n",
            runner_ns,
            f"--kubeconfig={cluster.kubeconfig}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")},
    )
    try:
        assert local.stdout is not None and local.stderr is not None
        line = local.stdout.readline()
        assert "http://127.0.0.1:" in line, line + (local.stderr.read() if local.poll() is not None else "")
        local_url = line.split("http://", 1)[1].split()[0]
        with browser() as chromium:
            watched = watch(chromium)
            watched.page.goto(f"http://{local_url}")
            expect(row(watched.page, "app")).to_contain_text("live@sha256:" + second[7:19])
            expect(row(watched.page, "other")).to_be_visible()
            watched.page.goto(f"http://{local_url}sync/app")
            expect(watched.page.locator("#changes")).to_contain_text("Known only to a running lockgate serve")
            expect(watched.page.locator("#history")).to_contain_text("Succeeded")
            watched.shot("status-web-sync-app")
            assert_clean(watched)
    finally:
        local.send_signal(signal.SIGINT)
        assert local.wait(20) == 0, local.stderr.read() if local.stderr else ""


@pytest.mark.full
def test_unhealthy_objects_and_a_rollback_show_on_the_sync_pages(
    full_cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns, port = unique, f"{unique}-run", free_port()
    runner = webhook_and_page(full_cluster, runner_ns, port)
    stuck = {"no-such-node": "true"}
    broken = push_tree(
        registry,
        f"{unique}/broken",
        {
            "a.yaml": dump(
                namespace(f"{ns}-b"), deployment("stuck", f"{ns}-b", node_selector=stuck, deadline=5)
            )
        },
    )
    push_with_provenance(
        registry,
        f"{unique}/rolling",
        tmp_path,
        {"a.yaml": dump(namespace(ns), deployment("web", ns), configmap("cfg", ns, {"k": "1"}))},
        "3" * 40,
    )
    served = start_serve(
        full_cluster,
        tmp_path,
        [
            sync_doc(
                "rolling",
                registry.oci(f"{unique}/rolling", ":live"),
                runner_ns,
                wait=True,
                timeout="90s",
                rollback="onHealthFailure",
            ),
            sync_doc(
                "broken", broken.split("@")[0], runner_ns, wait=True, timeout="60s", dependsOn=["rolling"]
            ),
        ],
        runner=runner,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        served.wait_sync_ready("rolling", timeout=120)
        bad = push_tree(
            registry,
            f"{unique}/rolling",
            {
                "a.yaml": dump(
                    namespace(ns),
                    deployment("web", ns, node_selector=stuck, deadline=5),
                    configmap("cfg", ns, {"k": "2"}),
                )
            },
            tag="live",
        )
        hook(served, "rolling")
        with browser() as chromium:
            watched = watch(chromium, viewport={"width": 1280, "height": 800})
            page = watched.page
            page.goto(f"{url}sync/broken")
            unhealthy = page.locator("#unhealthy")
            expect(unhealthy).to_contain_text(f"Deployment.apps/{ns}-b/stuck", timeout=120_000)
            expect(unhealthy).to_contain_text("Failed")
            reason = unhealthy.locator("td").nth(2).inner_text().lower()
            assert "progress deadline" in reason, reason
            expect(page.locator("h1")).to_contain_text("broken")
            expect(page.locator(".facts")).to_contain_text("Not ready")
            watched.shot("sync-broken-unhealthy")

            page.goto(f"{url}sync/rolling")
            history = page.locator("#history")
            expect(history).to_contain_text("RolledBack", timeout=120_000)
            rows = history.locator("tbody tr")
            expect(rows.nth(0)).to_contain_text("RolledBack")
            expect(rows.nth(1)).to_contain_text("Failed")
            expect(rows.nth(1)).to_contain_text("sha256:" + bad.rsplit("sha256:", 1)[1][:12])
            expect(page.locator(".facts")).to_contain_text("Rolled back from")
            expect(page.locator("#events")).to_contain_text("RolledBack")
            watched.shot("sync-rolling-rollback")

            page.goto(url)
            expect(row(page, "broken")).to_contain_text("Not ready")
            expect(row(page, "rolling")).to_contain_text("RolledBack")
            # back on the good digest: its commit again
            commit = f"{SOURCE}/commit/{'3' * 40}"
            expect(row(page, "rolling").locator("a.commit")).to_have_attribute("href", commit)
            shot = watched.shot("overview-unhealthy-and-rolled-back")
            if os.environ.get("LOCKGATE_DOCS_SCREENSHOT"):
                DOCS_IMAGE.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(shot, DOCS_IMAGE)
            assert_clean(watched)
            assert axe_violations(chromium, f"{url}sync/broken") == []
    finally:
        served.stop()


def test_beyond_loopback_the_page_needs_its_token(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns, port = f"{unique}-run", free_port()
    cluster.kubectl("create", "namespace", runner_ns)
    pushed = push_tree(registry, unique, {"cm.yaml": dump(configmap("c", runner_ns, {"v": "1"}))})
    syncs = [sync_doc("only", pushed.split("@")[0], runner_ns)]
    config = tmp_path / "open.yaml"
    write_config(
        config,
        [
            runner_doc(free_port(), free_port(), namespace=runner_ns, statusPage={"address": f":{port}"}),
            *syncs,
        ],
    )
    refused = subprocess.run(
        [*LOCKGATE, "serve", f"--config={config}", f"--kubeconfig={cluster.kubeconfig}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2, refused.stderr
    assert f"spec.statusPage.address ':{port}' listens beyond loopback" in refused.stderr
    assert "Traceback" not in refused.stderr

    cluster.kubectl("create", "secret", "generic", "page", "-n", runner_ns, f"--from-literal=token={TOKEN}")
    served = start_serve(
        cluster,
        tmp_path,
        syncs,
        runner={"namespace": runner_ns, "statusPage": {"address": f":{port}", "secretRef": {"name": "page"}}},
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        assert requests.get(f"{url}api/syncs", timeout=5).status_code == 401
        wrong = requests.get(f"{url}api/syncs", headers={"Authorization": "Bearer nope"}, timeout=5)
        assert wrong.status_code == 401
        right = requests.get(f"{url}api/syncs", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5)
        assert right.status_code == 200 and [s["name"] for s in right.json()["syncs"]] == ["only"]
        # a login posted from another origin is refused (login CSRF)
        forged = requests.post(
            f"{url}login", data={"token": TOKEN}, headers={"Origin": "https://attacker.example"}, timeout=5
        )
        assert forged.status_code == 403 and "set-cookie" not in forged.headers
        with browser() as chromium:
            watched = watch(chromium)
            page = watched.page
            page.goto(url)
            page.wait_for_url(f"{url}login")
            page.fill("#token", "wrong")
            page.keyboard.press("Enter")
            expect(page.locator("#refused")).to_be_visible()
            page.fill("#token", TOKEN)
            page.keyboard.press("Enter")
            page.wait_for_url(url)
            expect(page.locator("main h1")).to_have_text("Syncs")
            cookie = next(c for c in page.context.cookies() if c["name"] == app.COOKIE)
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and TOKEN not in cookie["value"]
            watched.shot("login-then-overview")
            assert_clean(watched)
    finally:
        served.stop()
