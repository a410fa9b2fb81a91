"""What ``lockgate serve`` writes on stderr: one line per event in the chosen format, every line.

serve runs as a child process against the world (``serve_support``), with stdout and stderr
in one file; each test makes it say things that used to escape the format (a refused
webhook, a refused reload of several errors, a kubeconfig that skips TLS verification, a
first pass that fails) and reads every line back.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import yaml

from tests.integration.reconcile_support import configmap, dump, push_tree
from tests.integration.serve_support import Served, runner_doc, start_serve, sync_doc, write_config
from tests.integration.test_serve import TOKEN, webhook_secret
from tests.world.kube import Cluster
from tests.world.process import free_port
from tests.world.registry import Registry

pytestmark = pytest.mark.world

TEXT_LINE = re.compile(r"^\d\d:\d\d:\d\d (debug|info|warning|error|critical) +\S")


def lines(served: Served) -> list[str]:
    return served.log.read_text(errors="replace").splitlines()


def assert_every_line_json(served: Served) -> list[dict[str, object]]:
    events = []
    for line in lines(served):
        try:
            event = json.loads(line)
        except ValueError:
            raise AssertionError(f"not a JSON event: {line!r}\n{served.tail()}") from None
        assert isinstance(event, dict) and {"ts", "level", "msg"} <= event.keys(), line
        events.append(event)
    return events


def say_things(cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, log_format: str) -> Served:
    """A serve that refuses a webhook and refuses a reload with several errors, then stops."""
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    webhook_secret(cluster, runner_ns)
    url = push_tree(registry, f"{unique}/a", {"cm.yaml": dump(configmap("a", ns, {"v": "1"}))}).split("@")[0]
    ports = (free_port(), free_port())
    runner = runner_doc(*ports, namespace=runner_ns, webhook={"secretRef": {"name": "webhook"}})
    config = tmp_path / "lockgate.yaml"
    write_config(config, [runner, sync_doc("a", url, runner_ns)])
    served = start_serve(cluster, tmp_path, [], config=config, ports=ports, log_format=log_format)
    try:
        served.wait_sync_ready("a")
        assert served.hook("a", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert served.hook("a", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        bad = sync_doc("a", url, runner_ns, prnue=True, intervl="1m")  # two errors: a message of two lines
        write_config(config, [runner, bad])
        deadline = time.monotonic() + 30
        while "configuration refused" not in served.log.read_text():
            assert time.monotonic() < deadline, served.tail()
            time.sleep(0.1)
    finally:
        assert served.stop() == 0, served.tail()
    return served


def test_json_logs_are_one_event_per_line_even_a_refused_webhook(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    served = say_things(cluster, registry, unique, tmp_path, "json")
    events = assert_every_line_json(served)
    refused = next(e for e in events if e["msg"] == "webhook refused")
    assert refused["level"] == "warning" and refused["sync"] == "a" and refused["status"] == 401
    assert refused["client"] == "127.0.0.1" and "signature or token" in str(refused["reason"])
    triggered = next(e for e in events if e["msg"] == "webhook triggered a pass")
    assert triggered["sync"] == "a" and triggered["reason"] == "webhook (bearer)"
    reload = next(e for e in events if str(e["msg"]).startswith("configuration refused"))
    assert "prnue" in str(reload["reason"]) and "intervl" in str(reload["reason"])


def test_text_logs_are_one_line_per_event_too(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    served = say_things(cluster, registry, unique, tmp_path, "text")
    for line in lines(served):
        assert TEXT_LINE.match(line), f"not a text event: {line!r}\n{served.tail()}"
    refused = next(line for line in lines(served) if "webhook refused" in line)
    assert "sync=a" in refused and "status=401" in refused
    (reload,) = [line for line in lines(served) if "configuration refused" in line]
    assert "prnue" in reload and "intervl" in reload and "\\n" in reload  # the two errors, on one line


def test_insecure_skip_tls_verify_is_said_once_not_per_request(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    url = push_tree(registry, f"{unique}/a", {"cm.yaml": dump(configmap("a", ns, {"v": "1"}))}).split("@")[0]
    kubeconfig = yaml.safe_load(cluster.kubeconfig.read_text())
    for entry in kubeconfig["clusters"]:
        entry["cluster"].pop("certificate-authority", None)
        entry["cluster"].pop("certificate-authority-data", None)
        entry["cluster"]["insecure-skip-tls-verify"] = True
    insecure = tmp_path / "insecure.kubeconfig"
    insecure.write_text(yaml.safe_dump(kubeconfig))
    insecure.chmod(0o600)
    docs = [sync_doc("a", url, runner_ns, interval="1s", driftInterval="1s")]
    served = start_serve(cluster, tmp_path, docs, runner={"namespace": runner_ns}, kubeconfig=insecure)
    try:
        served.wait_sync_ready("a")
        time.sleep(3)  # a few full passes: hundreds of API requests
    finally:
        assert served.stop() == 0, served.tail()
    text = served.log.read_text()
    assert "InsecureRequestWarning" not in text and "Unverified HTTPS request" not in text, served.tail()
    events = assert_every_line_json(served)
    said = [e for e in events if "not verified" in str(e["msg"])]
    assert len(said) == 1 and said[0]["level"] == "warning" and said[0]["server"] == cluster.server
    assert sum(1 for e in events if e["msg"] == "pass finished") >= 2


def test_first_pass_is_said_only_on_the_first_pass(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns = f"{unique}-later", f"{unique}-run"  # ns does not exist yet: the passes fail
    url = push_tree(registry, f"{unique}/a", {"cm.yaml": dump(configmap("a", ns, {"v": "1"}))}).split("@")[0]
    docs = [sync_doc("a", url, runner_ns, interval="1m", retryInterval="1s")]
    served = start_serve(cluster, tmp_path, docs, runner={"namespace": runner_ns})
    try:
        deadline = time.monotonic() + 60
        while sum(1 for e in served.events() if e.get("msg") == "pass finished") < 3:
            assert time.monotonic() < deadline, served.tail()
            time.sleep(0.1)
        cluster.kubectl("create", "namespace", ns)
        served.wait_sync_ready("a", timeout=60)
    finally:
        assert served.stop() == 0, served.tail()
    reasons = [e["reason"] for e in served.events() if e.get("msg") == "pass started"]
    assert reasons[0] == "first pass" and reasons.count("first pass") == 1, reasons
    assert set(reasons[1:]) == {"retry: the last pass did not succeed"}, reasons
