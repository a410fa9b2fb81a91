"""The status page's overview fits its screen, in Chromium (issue 36, Low).

Two syncs, one verified with a key file deep in a directory tree (a long "Verified by"), on
``lockgate status --web``. At 1280×900 the page does not scroll sideways (it did, with
"Next pass" cut off) and the table needs no scrolling of its own; a digest is one unbroken
word and a "Verified by" path does not wrap the row; at 390 px wide "2 syncs" stays on one
line and nothing scrolls sideways. Without JavaScript the page shows the overview the server
rendered, not "Loading…". Screenshots go to ``$LOCKGATE_ARTIFACTS/web``.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.integration.reconcile_support import LOCKGATE, configmap, dump, namespace
from tests.integration.web_support import PHONE, browser, watch
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

DESKTOP = {"width": 1280, "height": 900}


def _lockgate(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    run = subprocess.run([*LOCKGATE, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    return run


@pytest.fixture
def page_url(cluster: Cluster, registry: Registry, unique: str, tmp_path: Path) -> Iterator[str]:
    env = {**os.environ, "LOCKGATE_PASSWORD": "layout"}
    keys = tmp_path / "platform" / "release-engineering" / "signing-keys" / "production"
    keys.mkdir(parents=True)
    _lockgate("keygen", "--output-key-prefix", str(keys / "cosign"), cwd=tmp_path, env=env)
    runner = f"{unique}-r"
    for name in ("frontend", "payments-api"):
        tree = tmp_path / name
        tree.mkdir()
        (tree / "a.yaml").write_text(
            dump(namespace(f"{unique}-{name}"), configmap(name, f"{unique}-{name}", {}))
        )
        url = registry.oci(f"{unique}/{name}", ":v1")
        _lockgate(
            "push", str(tree), url, "--sign", "key", "--key", str(keys / "cosign.key"), cwd=tmp_path, env=env
        )
        _lockgate(
            "reconcile", url, "--name", name, "-n", runner, "--verify-key", str(keys / "cosign.pub"),
            f"--kubeconfig={cluster.kubeconfig}", cwd=tmp_path,
        )  # fmt: skip
    local = subprocess.Popen(
        [*LOCKGATE, "status", "--web", "--no-open", "-n", runner, f"--kubeconfig={cluster.kubeconfig}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")},
    )
    try:
        assert local.stdout is not None
        line = local.stdout.readline()
        assert "http://127.0.0.1:" in line, line
        yield "http://" + line.split("http://", 1)[1].split()[0]
    finally:
        local.send_signal(signal.SIGINT)
        local.wait(20)


def _lines(page: Page, selector: str) -> list[int]:
    """How many lines each element matching ``selector`` takes (its client rects' distinct tops)."""
    found: list[int] = page.eval_on_selector_all(
        selector,
        "els => els.map(e => new Set([...e.getClientRects()].map(r => Math.round(r.top))).size)",
    )
    return found


def _overflow(page: Page) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(
        """() => ({
            page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
            table: [...document.querySelectorAll('.scroll')].map(s => s.scrollWidth - s.clientWidth),
            lastHeader: Math.round([...document.querySelectorAll('table.syncs thead th')].pop()
                ?.getBoundingClientRect().right ?? 0),
        })"""
    )
    return found


def test_the_overview_fits_a_laptop_and_a_phone_and_reads_without_javascript(page_url: str) -> None:
    with browser() as chromium:
        desktop = watch(chromium, viewport=DESKTOP)
        desktop.page.goto(page_url)
        expect(desktop.page.locator('tr[data-sync="payments-api"]')).to_be_visible(timeout=30_000)
        desktop.shot("layout-desktop")
        found = _overflow(desktop.page)
        assert found["page"] <= 0 and all(extra <= 0 for extra in found["table"]), found
        assert found["lastHeader"] <= DESKTOP["width"], found  # "Next pass" is on screen
        # a digest is one word, and a long key path does not wrap its row
        assert _lines(desktop.page, 'td[data-label="Digest"] code') == [1, 1]
        assert _lines(desktop.page, 'td[data-label="Verified by"] .signer') == [1, 1]
        verified = desktop.page.locator('tr[data-sync="frontend"] td[data-label="Verified by"]')
        assert "signing-keys/production/cosign.pub" in (
            verified.inner_text() + (verified.locator(".signer").get_attribute("title") or "")
        )
        assert desktop.problems() == []

        phone = watch(chromium, viewport=PHONE, is_mobile=True)
        phone.page.goto(page_url)
        expect(phone.page.locator('tr[data-sync="frontend"]')).to_be_visible(timeout=30_000)
        phone.shot("layout-phone")
        found = _overflow(phone.page)
        assert found["page"] <= 0, found
        assert _lines(phone.page, "table.syncs caption") == [1]
        assert _lines(phone.page, 'td[data-label="Digest"] code') == [1, 1]

        plain = watch(chromium, viewport=DESKTOP, java_script_enabled=False)
        plain.page.goto(page_url)
        plain.shot("layout-no-javascript", full_page=True)
        text = plain.page.locator("body").inner_text()
        assert "Loading" not in text, text
        assert "frontend" in text and "payments-api" in text, text
        assert "needs JavaScript" not in text or "2 syncs" in text, text
