"""A tenant's CEL cannot stall the runner (issue 30 item 2; docs/security.md §19).

cel-expr-python evaluates holding the GIL and has no cost limit: a 272-character expression
(three nested comprehensions over ten-element lists, each growing a string to 2 MiB with
``replace``) ran 49 s and 2.3 GB in one evaluation, and a cheat-sheet expression (``filter``
then ``all``) over an object whose tenant wrote 4,999 conditions holds the GIL for seconds (the runtime
copies the filtered list at every step; 4,999 conditions keep the look within the runtime's
10,000 iterations, so the expression completes, 7 s later). Under ``serve`` every thread stops meanwhile, the
liveness probe with them. Here, against the world: the first is refused when the config
loads, naming the file, line, field and the estimate; the second makes its object Failed
naming the expression, within seconds, while ``/healthz`` keeps answering within a second.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import yaml

from tests.integration.cel_support import COSTLY, CURRENT, FAILED, KIND, PLURAL, crd, widget
from tests.integration.reconcile_support import cli, configmap, dump, push_tree
from tests.integration.serve_support import start_serve, sync_doc
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

GROW = '.replace("x","xxxxxxxx")'
TEN = "[0,1,2,3,4,5,6,7,8,9]"
#: three nested comprehensions over ten elements, each growing "x" to 8^7 characters
ATTACK = f'{TEN}.all(a, {TEN}.all(b, {TEN}.all(c, "x"{GROW * 7}.size() > 0)))'
#: the kubelet's default probe timeoutSeconds
PROBE_TIMEOUT = 1.0


@pytest.fixture
def group(cluster: Cluster, unique: str) -> Iterator[str]:
    name = f"{unique}.example.com"
    cluster.kubectl("apply", "-f", "-", input=json.dumps(crd(name)))
    cluster.kubectl("wait", "--for=condition=Established", f"crd/{PLURAL}.{name}", "--timeout=60s")
    yield name
    cluster.kubectl("delete", "crd", f"{PLURAL}.{name}", "--wait=false", check=False)


def _release(registry: Registry, unique: str, group: str, conditions: int) -> str:
    objects = [widget(group, unique, conditions), configmap("app", unique, {"v": "1"})]
    return push_tree(registry, unique, {"app.yaml": dump(*objects)}).rsplit("@", 1)[0]


def test_an_expression_costly_by_its_shape_is_refused_when_the_config_loads(
    cluster: Cluster, registry: Registry, unique: str, group: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    for name in (unique, runner):
        cluster.kubectl("create", "namespace", name)
    url = _release(registry, unique, group, 1)
    exprs = [{"apiVersion": f"{group}/v1", "kind": KIND, "current": ATTACK, "failed": FAILED}]
    doc = sync_doc(unique, url, runner, wait=True, timeout="30s", healthCheckExprs=exprs)
    path = tmp_path / "syncs.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=100_000))
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "current:" in text)

    started = time.monotonic()
    run = cli(cluster, "--config", str(path), timeout=600)
    seconds = time.monotonic() - started

    assert run.code == 2, (run.code, run.err)
    said = f"{path}:{line}: Sync/{unique}: spec.healthCheckExprs[0].current: estimated cost "
    assert said in run.err, run.err
    assert "is over the limit of 10,000,000" in run.err, run.err
    # refused before anything was applied, and at once
    assert cluster.kubectl("get", "configmap", "app", "-n", unique, check=False).returncode != 0
    assert seconds < 30, seconds


class _Prober(threading.Thread):
    """Asks ``/healthz`` every 0.1 s, recording how long each answer took (a timeout counts as 3 s)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.stop, self.seconds = url, threading.Event(), list[float]()

    def run(self) -> None:
        while not self.stop.wait(0.1):
            started = time.monotonic()
            try:
                ok = requests.get(self.url, timeout=3).status_code == 200
            except requests.RequestException:
                ok = False
            self.seconds.append(time.monotonic() - started if ok else 3.0)


def test_an_expression_costly_by_its_data_fails_its_object_while_probes_answer(
    cluster: Cluster, registry: Registry, unique: str, group: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    for name in (unique, runner):
        cluster.kubectl("create", "namespace", name)
    url = _release(registry, unique, group, COSTLY)
    exprs = [{"apiVersion": f"{group}/v1", "kind": KIND, "current": CURRENT, "failed": FAILED}]
    sync = sync_doc("tenant", url, runner, wait=True, timeout="120s", healthCheckExprs=exprs)
    served = start_serve(cluster, tmp_path, [sync], runner={"namespace": runner})
    prober = _Prober(f"http://127.0.0.1:{served.metrics_port}/healthz")
    prober.start()
    try:
        finished = served.wait_event(
            lambda e: e.get("msg") == "pass finished" and e.get("sync") == "tenant",
            timeout=150,
            what="the tenant's pass",
        )
        time.sleep(1.0)  # and a moment after it
    finally:
        prober.stop.set()
        prober.join(10)
        assert served.stop() == 0, served.tail()
    assert prober.seconds, "no probe was made"
    slowest = max(prober.seconds)
    print(f"/healthz: {len(prober.seconds)} probes, slowest {slowest * 1000:.0f} ms")
    assert slowest < PROBE_TIMEOUT, sorted(prober.seconds)[-10:]
    error = str(finished.get("error", ""))
    # over the CPU limit, or (when a loaded machine lets the copying outrun the CPU clock) over
    # the worker's memory limit: either way the worker is killed and the object named Failed
    widget = f"{KIND}.{group}/{unique}/w: Failed: healthCheckExprs[0].failed {FAILED!r} ran over the "
    assert widget in error, (error, finished)
    assert any(f"{widget}{limit}" in error for limit in ("limit of", "CEL worker's memory limit")), error
    assert finished.get("seconds", 999) < 60, finished
