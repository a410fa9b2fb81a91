"""``lockgate fleet --html DIR``: the static fleet page, built from the registry alone, in Chromium.

Three runners (eu-1, eu-2, us-1; ``fleet_support``) attest release 1.0.0, only eu-1 attests 1.1.0,
and a forged attestation names a cluster made of HTML (``<script>``, an ``<img onerror>``). The
page is served as a static host serves it (files over HTTP, no headers of its own): Chromium runs
no script, reports no CSP violation and shows the hostile name as text; axe-core finds no
violation at all (every impact level); production's quorum (2 of eu-*) is ready for 1.0.0 and
waiting for 1.1.0. The screenshot is kept under ``tests/.artifacts/web``.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from lockgate import registry as registry_mod
from lockgate.signing import attest
from tests.integration.fleet_support import Runners, fleet
from tests.integration.web_support import browser, watch
from tests.world import npm
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@contextmanager
def static_host(root: Path) -> Iterator[str]:
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def every_violation(page: Any) -> list[dict[str, Any]]:
    page.add_script_tag(path=str(npm.install(npm.AXE_CORE)))
    result: dict[str, Any] = page.evaluate(
        "async () => await axe.run(document, {resultTypes: ['violations']})"
    )
    return [{"id": v["id"], "impact": v["impact"]} for v in result["violations"]]


def test_the_page_is_escaped_scriptless_and_accessible(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runners = Runners(cluster, registry, unique, tmp_path, names=("eu-1", "eu-2", "us-1"))
    runners.push("1.0.0")
    for name in runners.names:
        assert runners.run(name).error is None
    v110 = runners.push("1.1.0")
    assert runners.run("eu-1").error is None
    forged = attest.health_predicate(
        cluster=HOSTILE, sync="app", revision="1.1.0", healthy=True, at=dt.datetime.now(dt.UTC), objects={}
    )
    attest.attest_with_key(
        registry_mod.parse(v110), runners.keys["us-1"], predicate_type=attest.HEALTHY, predicate=forged
    )

    site = tmp_path / "site"
    done = fleet(
        runners.url,
        "--html",
        str(site),
        *runners.key_flags(),
        "--waits-for",
        "production=clusters=eu-*,minClusters=2",
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in site.iterdir()) == ["fleet.json", "index.html", "style.css"]
    page_text = (site / "index.html").read_text()
    assert "<script" not in page_text and "onerror=alert" not in page_text.replace("onerror=alert(1)&gt;", "")
    document = json.loads((site / "fleet.json").read_text())
    (waits,) = document["waits"]
    by_revision = {r["revision"]: r["digest"] for r in document["revisions"]}
    assert waits["revisions"][by_revision["1.0.0"]]["met"] is True
    assert waits["revisions"][by_revision["1.1.0"]]["met"] is False

    with static_host(site) as url, browser() as chromium:
        watched = watch(chromium)
        page = watched.page
        page.goto(url)
        page.wait_for_selector("main h1")
        assert page.evaluate("() => document.scripts.length") == 0
        assert page.evaluate("() => document.querySelectorAll('img').length") == 0
        headers = page.locator("thead th").all_inner_texts()
        assert HOSTILE in headers, headers
        assert watched.problems() == [] and watched.csp_violations() == []
        assert page.locator("td.waiting").count() == 1 and "ready" in page.locator("tbody").inner_text()
        assert page.evaluate("() => getComputedStyle(document.querySelector('th')).borderTopStyle") == "solid"
        watched.shot("fleet-page")
        ctx = chromium.new_context(bypass_csp=True)
        try:
            checked = ctx.new_page()
            checked.goto(url)
            assert every_violation(checked) == []
        finally:
            ctx.close()


FLEET_CALLER = """name: fleet
on: workflow_dispatch
permissions: {}
jobs:
  fleet:
    uses: ./.github/workflows/fleet-page.yml
    permissions: {contents: read, packages: read, pages: write, id-token: write}
    with:
      url: URL
      keys: keys/*.pub
      waits-for: production=clusters=eu-*,minClusters=2
      publish: false
"""


def test_the_fleet_page_workflow_builds_the_page_under_act(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """fleet-page.yml as written, called with ``publish: false`` (GitHub Pages cannot run here):
    its build job installs lockgate with the action and writes the page from the registry."""
    from tests.world import act

    runners = Runners(cluster, registry, unique, tmp_path, names=("eu-1", "eu-2"))
    runners.push("1.0.0")
    for name in runners.names:
        assert runners.run(name).error is None
    repo = tmp_path / "repo"
    act.make_repo(
        repo,
        {
            **{f"keys/{name}.pub": runners.pub(name).read_text() for name in runners.names},
            ".github/workflows/fleet.yml": FLEET_CALLER.replace("URL", runners.url),
        },
        [act.WORKFLOWS / "fleet-page.yml"],
    )
    pages = act.ROOT / "tests" / "data" / "act" / "pages"
    stand_ins = [
        "--local-repository",
        f"actions/upload-pages-artifact@56afc609e74202658d3ffba0e8f6dda462b719fa={pages}",
        "--local-repository",
        f"actions/deploy-pages@d6db90164ac5ed86f2b6aed7e0febac5b3c0c03e={pages}",
    ]
    run = act.run_workflow(
        repo,
        ".github/workflows/fleet.yml",
        action=act.stage_action(tmp_path / "action"),
        extra_args=stand_ins,
    )
    assert run.code == 0, run.tail()
    assert "wrote site/index.html" in run.text(), run.tail()
    assert run.job_result("build") == "success" or "success" in str(run.job_result("fleet"))
