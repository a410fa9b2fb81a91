"""The status page shows the fleet (issue 24 item 4), in a real browser against the world.

Five runners of five clusterNames (ap-1, eu-1, eu-2, us-1, us-2; own namespaces and keys,
tests/integration/fleet_support.py) attest release 1.0.0; eu-1 and eu-2 attest 1.1.0, and the
sixth runner's own key signs "healthy in us-2" for 1.1.0. A ``lockgate serve`` for that sixth
cluster, production, requires healthy in eu-1 and in us-2, keys from a Secret holding every
runner's public key, and attests with its own key. Its page shows, read from the registry:
the clusters that attested the digest it runs (all five, and production itself), those that
attested the digest it wants (eu-1 and eu-2 healthy, us-2 unverified: never healthy), and
what the wanted digest waits for, requirement by requirement and cluster by cluster. Its
own key is bound to production, so its claim for us-2 is unverified too. Once
us-2's runner attests 1.1.0, production moves to it by itself and the page follows. Chromium
finds no CSP violation, axe-core no serious problem; screenshots in ``tests/.artifacts/web``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import expect

from lockgate.signing import attest
from tests.integration.fleet_support import CLUSTERS, Runners, digest
from tests.integration.serve_support import start_serve, sync_doc
from tests.integration.web_support import PHONE, axe_violations, browser, wait_until, watch
from tests.world.kube import Cluster
from tests.world.process import free_port
from tests.world.registry import Registry

pytestmark = pytest.mark.world

PRODUCTION = "production"


def api(url: str) -> dict[str, Any]:
    answer = requests.get(f"{url}api/syncs/app", timeout=30)
    assert answer.status_code == 200, answer.text
    doc: dict[str, Any] = answer.json()
    return doc


def states(fleet: dict[str, Any], role: str) -> dict[str, str]:
    (row,) = [d for d in fleet["digests"] if d["role"] == role]
    return {name: cell["state"] for name, cell in row["cells"].items()}


def test_the_page_shows_which_clusters_attested_and_what_a_waiting_sync_waits_for(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runners = Runners(cluster, registry, unique, tmp_path, names=(*CLUSTERS, PRODUCTION))
    v100 = runners.push("1.0.0")
    for name in CLUSTERS:
        assert runners.run(name).error is None
    v110 = runners.push("1.1.0")
    for name in ("eu-1", "eu-2"):
        assert runners.run(name).error is None
    # the production runner's own key signs for us-2: the page binds that key to production
    forger = runners.keys[PRODUCTION]
    forged = attest.health_predicate(
        cluster="us-2", sync="app", revision="1.1.0", healthy=True, at=dt.datetime.now(dt.UTC), objects={}
    )
    attest.attest_with_key(v110, forger, predicate_type=attest.HEALTHY, predicate=forged)

    runner_ns, port = runners.ns(PRODUCTION, "run"), free_port()
    cluster.kubectl(
        "create",
        "secret",
        "generic",
        "fleet-keys",
        "-n",
        runner_ns,
        *(f"--from-file={name}.pub={runners.pub(name)}" for name in CLUSTERS),
    )
    need = [{"cluster": name, "secretRef": {"name": "fleet-keys"}} for name in ("eu-1", "us-2")]
    served = start_serve(
        cluster,
        tmp_path / "serve",
        [
            sync_doc(
                "app",
                runners.url,
                runner_ns,
                semver=">=1.0.0",
                interval="5s",
                targetNamespace=runners.ns(PRODUCTION),
                wait=True,
                timeout="10s",
                verify={"insecureSkip": True, "attestations": need},
                attest={"secretRef": {"name": "attest-key"}},
            )
        ],
        runner={
            "clusterName": PRODUCTION,
            "namespace": runner_ns,
            "statusPage": {"address": f"127.0.0.1:{port}"},
        },
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        served.wait_sync_ready("app")

        def settled() -> bool:
            doc = api(url)
            fleet = doc["fleet"]
            return bool(
                doc["digest"] == digest(v100)
                and doc["waiting"]
                and fleet
                and PRODUCTION in fleet["clusters"]
                and len(fleet["digests"]) == 2
            )

        wait_until(settled, timeout=90, what="production on 1.0.0, waiting for 1.1.0", tail=served.tail)
        fleet = api(url)["fleet"]
        assert fleet["error"] == "" and fleet["clusters"] == sorted([*CLUSTERS, PRODUCTION])
        assert states(fleet, "current") == dict.fromkeys(fleet["clusters"], "healthy")
        assert states(fleet, "wanted") == {
            "ap-1": "none",
            "eu-1": "healthy",
            "eu-2": "healthy",
            PRODUCTION: "none",
            "us-1": "none",
            "us-2": "unverified",
        }
        (wanted,) = [d for d in fleet["digests"] if d["role"] == "wanted"]
        assert wanted["digest"] == digest(v110)
        assert wanted["cells"]["eu-1"]["since"] == runners.attestation("eu-1", v110)["healthyAt"]
        eu1, us2 = fleet["waitsFor"]
        assert (eu1["requirement"], eu1["ok"]) == ("healthy in eu-1", True)
        assert [(c["cluster"], c["state"]) for c in eu1["clusters"]] == [("eu-1", "healthy")]
        assert (us2["requirement"], us2["ok"]) == ("healthy in us-2", False)
        assert us2["reason"].startswith("waiting for healthy in us-2: no healthy attestation for us-2")
        assert [(c["cluster"], c["state"]) for c in us2["clusters"]] == [("us-2", "unverified")]
        assert "not signed by" in us2["clusters"][0]["reason"]
        assert wanted["cells"]["us-2"]["reason"].endswith(
            f"signed by the key for {PRODUCTION} (this runner's key ({PRODUCTION})), claims us-2"
        )

        with browser() as chromium:
            watched = watch(chromium, viewport={"width": 1400, "height": 1000})
            page = watched.page
            page.goto(url)
            overview = page.locator('tr[data-sync="app"]')
            attested = overview.locator('td[data-label="Attested in"]')
            expect(attested).to_contain_text("waits for us-2")
            for name in (*CLUSTERS, PRODUCTION):
                expect(attested.locator(".badge.ok", has_text=name)).to_be_visible()
            watched.shot("fleet-overview")

            page.goto(f"{url}sync/app")
            section = page.locator("#fleet")
            expect(section.locator("table.fleet thead th")).to_have_text(["Digest", *fleet["clusters"]])
            rows = section.locator("table.fleet tbody tr")
            expect(rows.nth(0)).to_contain_text("Runs sha256:" + digest(v100)[7:19])
            expect(rows.nth(1)).to_contain_text("Wants sha256:" + digest(v110)[7:19])
            expect(rows.nth(0).locator(".badge.ok")).to_have_count(len(fleet["clusters"]))
            us2_cell = rows.nth(1).locator('td[data-label="us-2"]')
            expect(us2_cell).to_contain_text("Unverified")
            expect(us2_cell).to_contain_text("not signed by")
            expect(rows.nth(1).locator('td[data-label="ap-1"]')).to_have_text("Not yet")
            waits = section.locator("table.waits tbody tr")
            expect(waits).to_have_count(2)
            expect(waits.nth(0)).to_contain_text("healthy in eu-1")
            expect(waits.nth(0)).to_contain_text("Met")
            expect(waits.nth(1)).to_contain_text("us-2")
            expect(waits.nth(1)).to_contain_text("Waiting")
            expect(page.locator("#waiting")).to_contain_text(
                f"1.1.0@{digest(v110)}: waiting for healthy in us-2"
            )
            watched.shot("fleet-sync-waiting")
            assert watched.csp_violations() == [] and watched.problems() == [], watched.console
            assert axe_violations(chromium, f"{url}sync/app") == []

            phone = watch(chromium, viewport=PHONE, is_mobile=True)
            phone.page.goto(f"{url}sync/app")
            expect(phone.page.locator("#fleet table.fleet")).to_be_visible()
            width = phone.page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"], f"the sync page scrolls sideways at phone width ({width}px)"
            phone.shot("fleet-sync-phone")

            # us-2's runner attests 1.1.0: production takes it on its own interval, the page follows
            assert runners.run("us-2").error is None
            expect(page.locator("#waiting")).to_have_text("nothing", timeout=90_000)
            expect(rows).to_have_count(1, timeout=30_000)
            expect(rows.nth(0)).to_contain_text("Runs sha256:" + digest(v110)[7:19])
            expect(rows.nth(0).locator('td[data-label="us-2"]')).to_contain_text("Healthy")
            expect(rows.nth(0).locator(f'td[data-label="{PRODUCTION}"]')).to_contain_text(
                "Healthy", timeout=60_000
            )
            expect(section.locator("table.waits")).to_have_count(0)
            watched.shot("fleet-sync-promoted")
            assert watched.csp_violations() == [] and watched.problems() == [], watched.console
    finally:
        served.stop()
