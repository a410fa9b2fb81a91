"""``lockgate serve`` against the world: webhooks, reloads, registry and API server faults, signals.

Each test runs serve as a child process (the way a Deployment runs it) with JSON logs, and
asserts on the cluster, the metrics endpoint and the log events.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.reconcile_support import LOCKGATE, configmap, dump, get, push_tree
from tests.integration.serve_support import mounted_configmap, runner_doc, start_serve, sync_doc
from tests.world.kube import Cluster, start_cluster
from tests.world.process import free_port
from tests.world.registry import Registry, start_registry

TOKEN = "s3cret-webhook-token"


def webhook_secret(cluster: Cluster, runner_ns: str) -> None:
    cluster.kubectl("create", "namespace", runner_ns, check=False)
    cluster.kubectl(
        "create", "secret", "generic", "webhook", "-n", runner_ns, f"--from-literal=token={TOKEN}"
    )


def wait_for(predicate: object, timeout: float = 60, what: str = "") -> float:
    """Poll; returns the seconds it took."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():  # type: ignore[operator]
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def data_of(cluster: Cluster, name: str, ns: str) -> dict[str, str] | None:
    obj = get(cluster, "configmap", name, ns)
    return None if obj is None else dict(obj.get("data") or {})


def test_two_syncs_converge_and_a_webhook_rolls_out_in_about_a_second(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    webhook_secret(cluster, runner_ns)
    a = push_tree(registry, f"{unique}/a", {"cm.yaml": dump(configmap("a", ns, {"v": "1"}))}, tag="live")
    b = push_tree(registry, f"{unique}/b", {"cm.yaml": dump(configmap("b", ns, {"v": "1"}))}, tag="live")
    cluster.kubectl("create", "namespace", ns)
    url_a, url_b = a.split("@")[0], b.split("@")[0]
    served = start_serve(
        cluster,
        tmp_path,
        [sync_doc("a", url_a, runner_ns), sync_doc("b", url_b, runner_ns, dependsOn=["a"])],
        runner={"namespace": runner_ns, "webhook": {"secretRef": {"name": "webhook"}}},
    )
    try:
        served.wait_sync_ready("a")
        served.wait_sync_ready("b")
        assert data_of(cluster, "a", ns) == {"v": "1"} and data_of(cluster, "b", ns) == {"v": "1"}
        # b depends on a: its first pass started after a's finished
        events = served.events()
        finished_a = next(e["ts"] for e in events if e.get("msg") == "pass finished" and e.get("sync") == "a")
        started_b = next(e["ts"] for e in events if e.get("msg") == "pass started" and e.get("sync") == "b")
        assert started_b >= finished_a

        push_tree(registry, f"{unique}/a", {"cm.yaml": dump(configmap("a", ns, {"v": "2"}))}, tag="live")
        t0 = time.monotonic()
        answer = served.hook("a", headers={"Authorization": f"Bearer {TOKEN}"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["triggered"] is True
        took = wait_for(lambda: (data_of(cluster, "a", ns) or {}).get("v") == "2", 30, "the rollout")
        assert time.monotonic() - t0 < 10, f"webhook to applied took {took:.2f}s"
        assert served.hook("nope", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404
        assert 'gotk_reconcile_duration_seconds_count{kind="Sync",name="a"' in served.metrics()
    finally:
        assert served.stop() == 0, served.tail()


def test_bad_signatures_and_oversized_bodies_trigger_nothing(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    webhook_secret(cluster, runner_ns)
    cluster.kubectl("create", "namespace", ns)
    url = push_tree(registry, f"{unique}/a", {"cm.yaml": dump(configmap("a", ns, {"v": "1"}))}, tag="t")
    served = start_serve(
        cluster,
        tmp_path,
        [sync_doc("a", url.split("@")[0], runner_ns)],
        runner={"namespace": runner_ns, "webhook": {"secretRef": {"name": "webhook"}}, "maxBodyBytes": 4096},
    )
    try:
        served.wait_sync_ready("a")
        before = sum(1 for e in served.events() if e.get("msg") == "sync triggered")
        body = json.dumps({"ref": "refs/heads/main"}).encode()
        wrong = "sha256=" + hmac.new(b"not-the-token", body, hashlib.sha256).hexdigest()
        right = "sha256=" + hmac.new(TOKEN.encode(), body, hashlib.sha256).hexdigest()
        push = {"X-GitHub-Event": "push"}
        assert served.hook("a", body, {**push, "X-Hub-Signature-256": wrong}).status_code == 401
        assert served.hook("a", body, {"Authorization": "Bearer nope"}).status_code == 401
        assert served.hook("a", body).status_code == 401
        assert served.hook("a", b"x" * 10_000, {"Authorization": f"Bearer {TOKEN}"}).status_code == 413
        time.sleep(0.5)
        assert sum(1 for e in served.events() if e.get("msg") == "sync triggered") == before
        assert served.hook("a", body, {**push, "X-Hub-Signature-256": right}).status_code == 200
        served.wait_event(lambda e: e.get("msg") == "sync triggered" and e.get("sync") == "a", what="trigger")
    finally:
        served.stop()


def test_a_valid_reload_takes_effect_and_a_bad_one_is_refused(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    a = push_tree(registry, f"{unique}/a", {"cm.yaml": dump(configmap("a", ns, {"v": "1"}))}).split("@")[0]
    c = push_tree(registry, f"{unique}/c", {"cm.yaml": dump(configmap("c", ns, {"v": "1"}))}).split("@")[0]
    metrics_port, webhook_port = free_port(), free_port()
    runner = runner_doc(metrics_port, webhook_port, namespace=runner_ns)
    mount = tmp_path / "mount"  # a ConfigMap volume: updated by a symlink swap, as the kubelet does
    config = mounted_configmap(mount, [runner, sync_doc("a", a, runner_ns)])
    served = start_serve(cluster, tmp_path, [], config=config, ports=(metrics_port, webhook_port))
    try:
        served.wait_sync_ready("a")
        mounted_configmap(mount, [runner, sync_doc("a", a, runner_ns), sync_doc("c", c, runner_ns)])
        served.wait_event(lambda e: e.get("msg") == "configuration reloaded", what="reload", timeout=30)
        served.wait_sync_ready("c")
        assert data_of(cluster, "c", ns) == {"v": "1"}

        bad = sync_doc("a", a, runner_ns)
        bad["spec"]["prnue"] = True
        mounted_configmap(mount, [runner, bad])
        refused = served.wait_event(
            lambda e: e.get("msg", "").startswith("configuration refused"), what="refusal"
        )
        assert "prnue" in refused["reason"] and "did you mean prune" in refused["reason"]
        assert 'lockgate_config_reloads_total{result="failure"} 1.0' in served.metrics()
        # the old configuration keeps running: both syncs, ready
        assert served.sync_ready("a") and served.sync_ready("c")
        assert served.readyz().status_code == 200
    finally:
        assert served.stop() == 0, served.tail()


def test_registry_down_for_a_while_keeps_the_cluster_and_recovers(
    cluster: Cluster, unique: str, tmp_path: Path
) -> None:
    own = start_registry(tmp_path, name="flaky-registry")
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    try:
        url = push_tree(own, f"{unique}/a", {"cm.yaml": dump(configmap("a", ns, {"v": "1"}))}).split("@")[0]
        served = start_serve(
            cluster,
            tmp_path / "serve",
            [sync_doc("a", url, runner_ns, interval="2s", retryInterval="1s", driftInterval="2s")],
            runner={"namespace": runner_ns},
        )
        try:
            served.wait_sync_ready("a")
            own.process.stop()
            down_at = time.monotonic()
            wait_for(lambda: not served.sync_ready("a"), 30, "not ready while the registry is down")
            failed = served.wait_event(
                lambda e: e.get("outcome") == "failed" and e.get("sync") == "a", what="a failed check"
            )
            assert own.host in json.dumps(failed)
            time.sleep(max(0.0, 60 - (time.monotonic() - down_at)))  # down for a minute, retried meanwhile
            assert sum(1 for e in served.events() if e.get("outcome") == "failed") >= 10
            assert data_of(cluster, "a", ns) == {"v": "1"}  # last applied state kept, nothing pruned
            own.process.restart()
            served.wait_sync_ready("a", timeout=60)
            assert data_of(cluster, "a", ns) == {"v": "1"}
        finally:
            assert served.stop() == 0, served.tail()
    finally:
        own.stop()


def test_a_sync_is_ready_again_by_itself_once_its_checks_succeed_and_so_are_its_dependents(
    cluster: Cluster, unique: str, tmp_path: Path
) -> None:
    """The registry goes away and comes back at the same digest: cheap checks alone (no drift
    pass is due for an hour, nobody runs ``lockgate sync``) make the sync ready again, and the
    sync that depends on it stops waiting."""
    own = start_registry(tmp_path, name="returning-registry")
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    timing = {"interval": "1s", "retryInterval": "1s", "driftInterval": "1h"}
    try:
        base = push_tree(own, f"{unique}/base", {"cm.yaml": dump(configmap("base", ns, {"v": "1"}))})
        app = push_tree(own, f"{unique}/app", {"cm.yaml": dump(configmap("app", ns, {"v": "1"}))})
        docs = [
            sync_doc("base", base.split("@")[0], runner_ns, **timing),
            sync_doc("app", app.split("@")[0], runner_ns, dependsOn=["base"], **timing),
        ]
        served = start_serve(cluster, tmp_path / "serve", docs, runner={"namespace": runner_ns})
        try:
            served.wait_sync_ready("base")
            served.wait_sync_ready("app")
            own.process.stop()
            wait_for(lambda: not served.sync_ready("base"), 30, "base not ready while the registry is down")
            wait_for(lambda: not served.sync_ready("app"), 30, "app waiting for base")
            own.process.restart()
            back = time.monotonic()
            served.wait_sync_ready("base", timeout=30)
            served.wait_sync_ready("app", timeout=30)
            assert time.monotonic() - back < 20
            passes = [e for e in served.events() if e.get("msg") == "pass started"]
            assert [e["sync"] for e in passes] == ["base", "app"], "readiness came back without a pass"
        finally:
            assert served.stop() == 0, served.tail()
    finally:
        own.stop()


def _many(ns: str, count: int, version: str) -> str:
    return dump(*(configmap(f"cm-{i:04d}", ns, {"v": version}) for i in range(count)))


def _members(cluster: Cluster, runner_ns: str, name: str) -> int:
    secret = get(cluster, "secret", f"lockgate-{name}", runner_ns)
    assert secret is not None
    return int(secret["metadata"]["annotations"]["lockgate.dev/members"])


def _labelled(cluster: Cluster, ns: str) -> int:
    out = cluster.kubectl("get", "configmaps", "-n", ns, "-l", "applyset.kubernetes.io/part-of", "-o", "name")
    return len(out.stdout.split())


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A cluster of its own, for tests that restart the API server."""
    made = start_cluster(tmp_path / "cluster")
    yield made
    made.stop()


def test_api_server_restart_mid_pass_converges_and_orphans_nothing(
    own_cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    cluster = own_cluster
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    url = push_tree(registry, f"{unique}/many", {"cms.yaml": _many(ns, 600, "1")}).split("@")[0]
    served = start_serve(
        cluster,
        tmp_path / "serve",
        [sync_doc("many", url, runner_ns, interval="1m", retryInterval="1s")],
        runner={"namespace": runner_ns, "concurrency": 1},
    )
    try:
        served.wait_event(lambda e: e.get("msg") == "pass started", what="the first pass")
        wait_for(lambda: _labelled(cluster, ns) > 20, 60, "some objects applied")
        apiserver = next(p for p in cluster.processes if p.name == "kube-apiserver")
        apiserver.restart()
        served.wait_sync_ready("many", timeout=120)
        assert _labelled(cluster, ns) == 600
        assert _members(cluster, runner_ns, "many") == 600
    finally:
        served.stop()


def test_sigterm_mid_apply_exits_in_time_and_leaves_a_whole_inventory(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    url = push_tree(registry, f"{unique}/many", {"cms.yaml": _many(ns, 1500, "1")}).split("@")[0]
    docs = [sync_doc("many", url, runner_ns, interval="1m")]
    served = start_serve(cluster, tmp_path / "one", docs, runner={"namespace": runner_ns, "concurrency": 1})
    served.wait_event(lambda e: e.get("msg") == "pass started", what="the first pass")
    wait_for(lambda: _labelled(cluster, ns) > 20, 60, "some objects applied")
    t0 = time.monotonic()
    code = served.stop(signal.SIGTERM)
    assert time.monotonic() - t0 < 20, "serve must exit within its grace period"
    assert code == 0, served.tail()
    applied = _labelled(cluster, ns)
    stopped = served.wait_event(lambda e: e.get("msg") == "stopped", what="stopped")
    assert stopped["clean"] is True
    cut = served.wait_event(lambda e: e.get("msg") == "pass finished", what="the cut pass")
    assert cut["outcome"] == "abandoned" and "shutting down" in cut["error"], cut
    assert 0 < applied < 1500 and f"{applied} created" in cut["summary"], (applied, cut)
    # every applied object is in the inventory already (the union), none half-written
    assert _members(cluster, runner_ns, "many") == 1500
    again = start_serve(cluster, tmp_path / "two", docs, runner={"namespace": runner_ns})
    try:
        again.wait_sync_ready("many", timeout=120)
        assert _labelled(cluster, ns) == 1500 and _members(cluster, runner_ns, "many") == 1500
    finally:
        again.stop()


def test_registry_credentials_from_a_secret_serve_checks_and_passes(
    cluster: Cluster, auth_registry: Registry, unique: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    cluster.kubectl("create", "namespace", runner_ns)
    assert auth_registry.username and auth_registry.password
    docker = tmp_path / "docker"
    docker.mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(docker))  # serve inherits it: only the Secret has credentials
    auth = base64.b64encode(f"{auth_registry.username}:{auth_registry.password}".encode()).decode()
    (docker / "config.json").write_text(json.dumps({"auths": {auth_registry.host: {"auth": auth}}}))
    files = {"cm.yaml": dump(configmap("private", ns, {"v": "1"}))}
    url = push_tree(auth_registry, f"{unique}/private", files).split("@")[0]
    (docker / "config.json").unlink()
    docs = [sync_doc("private", url, runner_ns, interval="1s", secretRef={"name": "pull"})]
    served = start_serve(cluster, tmp_path, docs, runner={"namespace": runner_ns})
    try:
        failed = served.wait_event(
            lambda e: e.get("outcome") == "failed", what="a failure without the Secret"
        )
        assert "Secret/" in failed.get("error", failed.get("reason", "")) and "pull" in json.dumps(failed)
        cluster.kubectl(
            "create",
            "secret",
            "docker-registry",
            "pull",
            "-n",
            runner_ns,
            f"--docker-server={auth_registry.host}",
            f"--docker-username={auth_registry.username}",
            f"--docker-password={auth_registry.password}",
        )
        served.wait_sync_ready("private", timeout=60)
        assert data_of(cluster, "private", ns) == {"v": "1"}
        assert auth_registry.password not in served.log.read_text()
    finally:
        assert served.stop() == 0, served.tail()


BAD_CONFIGS = {
    "malformed YAML": ("kind: Sync\nmetadata: {name: a\n", "a.yaml:"),
    "unknown field": (
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: a}\n"
        "spec: {url: oci://r.example/a:1, interval: 1m, prnue: true, verify: {insecureSkip: true}}\n",
        "spec.prnue: unknown field; did you mean prune?",
    ),
    "duplicate names": (
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: a}\n"
        "spec: {url: oci://r.example/a:1, interval: 1m, verify: {insecureSkip: true}}\n---\n"
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: a}\n"
        "spec: {url: oci://r.example/b:1, interval: 1m, verify: {insecureSkip: true}}\n",
        "duplicate name 'a'",
    ),
    "dependsOn cycle": (
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: a}\n"
        "spec: {url: oci://r.example/a:1, interval: 1m, dependsOn: [b], verify: {insecureSkip: true}}\n---\n"
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: b}\n"
        "spec: {url: oci://r.example/b:1, interval: 1m, dependsOn: [a], verify: {insecureSkip: true}}\n",
        "a -> b -> a",
    ),
    "no interval": (
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: a}\n"
        "spec: {url: oci://r.example/a:1, verify: {insecureSkip: true}}\n",
        "spec.interval: required field is missing",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_serve_refuses_a_bad_configuration_before_starting(
    cluster: Cluster, tmp_path: Path, case: str
) -> None:
    text, expected = BAD_CONFIGS[case]
    path = tmp_path / "a.yaml"
    path.write_text(text)
    done = subprocess.run(
        [*LOCKGATE, "serve", f"--config={path}", f"--kubeconfig={cluster.kubeconfig}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_lockgate_sync_makes_serve_run_a_pass_within_seconds(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    url = push_tree(registry, f"{unique}/a", {"cm.yaml": dump(configmap("a", ns, {"v": "1"}))}).split("@")[0]
    served = start_serve(cluster, tmp_path, [sync_doc("a", url, runner_ns)], runner={"namespace": runner_ns})
    try:
        served.wait_sync_ready("a")
        # drift by hand: the digest is unchanged, so only a full pass (a person's request) repairs it
        cluster.kubectl(
            "patch", "configmap", "a", "-n", ns, "--type=merge", "-p", '{"data": {"v": "drifted"}}'
        )
        t0 = time.monotonic()
        done = subprocess.run(
            [*LOCKGATE, "sync", "a", "-n", runner_ns, f"--kubeconfig={cluster.kubeconfig}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        took = wait_for(lambda: data_of(cluster, "a", ns) == {"v": "1"}, 30, "the requested pass")
        assert time.monotonic() - t0 < 10, f"requested pass took {took:.1f}s"
        started = served.wait_event(
            lambda e: e.get("msg") == "pass started" and e.get("reason") == "requested", what="requested pass"
        )
        assert started["sync"] == "a"
        # the request is recorded as handled: a restarted serve does not answer it again
        secret = get(cluster, "secret", "lockgate-a", runner_ns)
        assert secret is not None and "lockgate.dev/requestedAt" in secret["metadata"]["annotations"]
    finally:
        assert served.stop() == 0, served.tail()
    again = start_serve(
        cluster, tmp_path / "again", [sync_doc("a", url, runner_ns)], runner={"namespace": runner_ns}
    )
    try:
        again.wait_sync_ready("a")
        time.sleep(2)
        assert not any(
            e.get("reason") == "requested" for e in again.events() if e.get("msg") == "pass started"
        )
    finally:
        again.stop()
