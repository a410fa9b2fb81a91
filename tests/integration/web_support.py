"""The status page's browser tests: Debian's chromium driven headless by Playwright.

``browser()`` launches the system ``/usr/bin/chromium`` (never a Playwright-downloaded build)
with a fresh profile and the flags that keep it from calling out (the machine's network is
closed, and Chromium's background requests would otherwise stall or log errors). A
``Watched`` page records console messages, page errors and CSP violations so a test can
assert there were none. Screenshots go to ``$LOCKGATE_ARTIFACTS/web`` (default
``tests/.artifacts/web``, gitignored), which CI keeps. ``axe`` injects the pinned axe-core
(``tests.world.npm``) into a context that bypasses CSP, for that check only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright

from tests.world import npm

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
ROOT = Path(__file__).resolve().parents[2]
PHONE = {"width": 390, "height": 844}


def artifacts() -> Path:
    base = Path(os.environ.get("LOCKGATE_ARTIFACTS") or ROOT / "tests" / ".artifacts")
    out = base / "web"
    out.mkdir(parents=True, exist_ok=True)
    return out


@contextmanager
def browser() -> Iterator[Browser]:
    """The system chromium, headless; Playwright gives each launch a fresh temporary profile
    (its own ``--user-data-dir``) and removes it on close."""
    if not Path(CHROMIUM).exists():
        raise AssertionError(f"{CHROMIUM} is missing: install Debian's chromium (make setup)")
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Watched:
    page: Page
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def csp_violations(self) -> list[str]:
        return [m for m in self.console if "Content Security Policy" in m or "Refused to" in m]

    def problems(self) -> list[str]:
        """Console errors and uncaught exceptions (a CSP violation is a console error)."""
        return [m for m in self.console if m.startswith("error:")] + self.errors

    def shot(self, name: str, *, full_page: bool = True) -> Path:
        path = artifacts() / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        return path


def watch(browser_: Browser, **context: Any) -> Watched:
    page = browser_.new_context(**context).new_page()
    watched = Watched(page)

    def on_console(message: ConsoleMessage) -> None:
        watched.console.append(f"{message.type}: {message.text}")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: watched.errors.append(f"pageerror: {exc}"))
    return watched


def wait_until(predicate: Callable[[], bool], *, timeout: float, what: str, tail: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}:\n{tail()}")


def axe_violations(browser_: Browser, url: str, **context: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations of the page at ``url``.

    The page's CSP forbids injected scripts, so this context alone bypasses it.
    """
    script = npm.install(npm.AXE_CORE)
    ctx = browser_.new_context(bypass_csp=True, **context)
    try:
        page = ctx.new_page()
        page.goto(url)
        page.wait_for_selector("main h1")
        page.add_script_tag(path=str(script))
        result: dict[str, Any] = page.evaluate(
            "async () => await axe.run(document, {resultTypes: ['violations']})"
        )
    finally:
        ctx.close()
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
        if v.get("impact") in ("serious", "critical")
    ]
