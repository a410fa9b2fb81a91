"""``serve``'s cheap checks of a promotion sync cost a HEAD per digest, yet see new attestations
(issue 24 item 5), against the world: registry (no referrers API), kube-apiserver.

A production sync on ``semver: ">=1.0.0"`` requires staging's healthy attestation. 1.0.0 is
attested and applied; 1.1.0 is pushed and waits. While it waits, each check (every second)
lists the tags and HEADs two tags and their two fallback indexes, and reads no referrer
again: the registry requests per check are counted through ``/metrics``
(``lockgate_registry_requests_total`` against ``lockgate_passes_total{outcome="skipped"}``).
Once staging attests 1.1.0, the next check sees it and the pass applies it.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from lockgate.signing import attest, keys
from tests.integration.reconcile_support import configmap, dump, get, push_tree
from tests.integration.serve_support import Served, start_serve, sync_doc
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

INTERVAL = 1.0
#: what the metrics may lag behind the checks they count (the housekeeping tick moves them)
SLACK = 6


def counters(served: Served, sync: str) -> tuple[int, dict[str, int]]:
    """(cheap checks that found nothing to do, registry requests by verb), from ``/metrics``."""
    checks, requests = 0, {}
    for line in served.metrics().splitlines():
        skipped = re.match(r"lockgate_passes_total\{(.*)\} ([0-9.e+]+)$", line)
        if skipped and f'name="{sync}"' in skipped[1] and 'outcome="skipped"' in skipped[1]:
            checks = int(float(skipped[2]))
        sent = re.match(r'lockgate_registry_requests_total\{verb="(\w+)"\} ([0-9.e+]+)$', line)
        if sent:
            requests[sent[1]] = int(float(sent[2]))
    return checks, requests


def test_a_waiting_promotion_costs_heads_per_check_and_applies_on_the_next_one(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    for name in (ns, runner_ns):
        cluster.kubectl("create", "namespace", name)
    staging = ec.generate_private_key(ec.SECP256R1())
    (tmp_path / "staging.pub").write_bytes(keys.public_key_pem(staging.public_key()))

    def push(version: str) -> str:
        return push_tree(
            registry, unique, {"app.yaml": dump(configmap("app", ns, {"v": version}))}, tag=version
        )

    def attest_healthy(url: str) -> None:
        at = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
        predicate = attest.health_predicate(
            cluster="staging", sync="app", revision=url, healthy=True, at=at, objects={"total": 1}
        )
        attest.attest_with_key(url, staging, predicate_type=attest.HEALTHY, predicate=predicate)

    attest_healthy(push("1.0.0"))
    verify = {
        "insecureSkip": True,
        "attestations": [{"cluster": "staging", "key": str(tmp_path / "staging.pub")}],
    }
    served = start_serve(
        cluster,
        tmp_path,
        [sync_doc("app", registry.oci(unique), runner_ns, semver=">=1.0.0", interval="1s", verify=verify)],
        runner={"namespace": runner_ns, "clusterName": "production"},
    )
    try:
        served.wait_sync_ready("app")
        assert (get(cluster, "configmap", "app", ns) or {}).get("data") == {"v": "1.0.0"}
        v110 = push("1.1.0")
        time.sleep(3 * INTERVAL)  # the first checks of 1.1.0 probe for its referrers
        checks0, sent0 = counters(served, "app")
        time.sleep(10 * INTERVAL)
        checks1, sent1 = counters(served, "app")
        checks = checks1 - checks0
        gets, heads = (sent1.get(v, 0) - sent0.get(v, 0) for v in ("get", "head"))
        assert checks >= 5, served.tail()
        # per check: the tag list (GET), 1.1.0 and its index, 1.0.0 and its index (HEADs)
        assert gets <= checks + SLACK, f"{gets} GETs for {checks} checks"
        assert heads <= 4 * checks + 4 * SLACK, f"{heads} HEADs for {checks} checks"
        assert sent1.get("put", 0) == sent0.get("put", 0)

        attest_healthy(v110)
        attested = time.time()
        started = served.wait_event(
            lambda e: e.get("msg") == "pass started" and e.get("digest") == v110.rsplit("@", 1)[1],
            timeout=30,
            what="the pass of 1.1.0",
        )
        seen = dt.datetime.fromisoformat(started["ts"].replace("Z", "+00:00")).timestamp()
        # the next check saw it: within one interval, plus what a check takes here
        assert seen - attested < INTERVAL + 2.0, f"pass started {seen - attested:.2f}s after the attestation"
        served.wait_event(
            lambda e: e.get("msg") == "pass finished" and str(e.get("revision", "")).startswith("1.1.0@"),
            timeout=60,
            what="1.1.0 applied",
        )
        assert (get(cluster, "configmap", "app", ns) or {}).get("data") == {"v": "1.1.0"}
    finally:
        assert served.stop() == 0, served.tail()
