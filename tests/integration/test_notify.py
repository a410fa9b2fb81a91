"""Notifications from ``reconcile`` and ``serve``: GitHub commit statuses, Flux events, Slack.

GitHub's REST API and Slack are SaaS that cannot run here: a local recording HTTP endpoint
(``tests.world.recorder``) stands in for both, and records what lockgate sends. Everything
else is the world: the registry holds the artifacts (with the source and revision
annotations CI writes), the cluster holds the Secrets with the token, the HMAC key and
Slack's URL, and the passes apply for real.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate import registry as oci
from lockgate.artifact import manifest, pack
from lockgate.errors import ExitCode
from runner.serve.notify import delivery
from tests.integration.reconcile_support import Run, cli, configmap, deployment, dump, namespace
from tests.integration.serve_support import start_serve, sync_doc
from tests.world.kube import Cluster
from tests.world.process import free_port
from tests.world.recorder import Recorded, Recorder
from tests.world.registry import Registry

pytestmark = pytest.mark.world

SHA = "6d1e0c3b9f2a4e5d8c7b6a5f4e3d2c1b0a9f8e7d"
TOKEN = "ghp_notifytoken0123456789"
HMAC_KEY = "generic-hmac-key"
#: Slack's incoming-webhook URLs carry their credential in the path: it must reach no log
SLACK_PATH = "/services/T0000/B0000/sl4cks3cr3tpath"
ATTEMPTS = 5  # runner.serve.notify.delivery.ATTEMPTS


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    yield rec
    rec.stop()


def push_built_from(
    reg: Registry, repo: str, files: dict[str, str], *, tag: str = "v1", sha: str = SHA
) -> str:
    """Push ``files`` as CI does: with the source repository and commit as annotations."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "src"
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        layer = pack.pack(root, Path(tmp) / "layer.tgz")
        built = manifest.build(
            layer.digest,
            layer.size,
            {
                "org.opencontainers.image.source": "https://github.com/acme/app",
                "org.opencontainers.image.revision": f"main@sha1:{sha}",
            },
        )
        ref = oci.parse(reg.oci(repo, f":{tag}"))
        client = oci.RegistryClient.for_reference(ref)
        client.upload_blob(
            repo, built.config_blob, digest=built.manifest.config.digest, size=len(built.config_blob)
        )
        with open(layer.path, "rb") as stream:
            client.upload_blob(repo, stream, digest=layer.digest, size=layer.size)
        digest = client.put_manifest(repo, tag, built.content, built.manifest.media_type)
    return reg.oci(repo, f":{tag}@{digest}")


def by_tag(url: str) -> str:
    """The tag reference (Flux's revision is then ``<tag>@sha256:...``)."""
    return url.split("@")[0]


def secret(cluster: Cluster, ns: str, name: str, **entries: str) -> None:
    cluster.kubectl("create", "namespace", ns, check=False)
    literals = [f"--from-literal={k}={v}" for k, v in entries.items()]
    cluster.kubectl("create", "secret", "generic", name, "-n", ns, *literals)


def runner(cluster_name: str = "east", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Runner",
        "spec": {"clusterName": cluster_name, **spec},
    }


def reconcile_config(path: Path, *docs: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    return path


def github(api: str, **extra: Any) -> dict[str, Any]:
    """GitHub's API is the stand-in's; the repository is pinned as Flux pins it (``address``)."""
    return {
        "type": "github",
        "address": "https://github.com/acme/app",
        "apiURL": api,
        "secretRef": {"name": "github-token"},
        **extra,
    }


def statuses(rec: Recorder, prefix: str = "", sha: str = SHA) -> list[Recorded]:
    return rec.requests(f"{prefix}/repos/acme/app/statuses/{sha}")


def test_a_healthy_pass_posts_pending_then_success_and_an_unchanged_pass_posts_nothing(
    cluster: Cluster, registry: Registry, recorder: Recorder, unique: str, tmp_path: Path
) -> None:
    """GitHub Enterprise base URL, context with the cluster name, the token from a Secret."""
    runner_ns = f"{unique}-r"
    secret(cluster, runner_ns, "github-token", token=TOKEN)
    url = push_built_from(
        registry, f"{unique}/app", {"a.yaml": dump(namespace(unique), configmap("app", unique, {}))}
    )
    api = recorder.url + "/api/v3"
    config = reconcile_config(
        tmp_path / "lockgate.yaml",
        runner("east"),
        sync_doc(
            "web",
            by_tag(url),
            runner_ns,
            wait=True,
            notify=[github(api, targetURL="https://dash.example/web")],
        ),
    )
    first = cli(cluster, "--config", str(config))
    assert first.code == 0, first.err
    posted = statuses(recorder, "/api/v3")
    assert [r.json()["state"] for r in posted] == ["pending", "success"], posted
    pending, success = (r.json() for r in posted)
    assert pending["context"] == success["context"] == "lockgate/east/web"
    assert pending["description"].startswith("applying v1@sha256:")
    assert success["description"] == "applied 2 created, 2 objects healthy", success
    assert success["target_url"] == "https://dash.example/web"
    for r in posted:
        assert r.header("Authorization") == f"Bearer {TOKEN}"
        assert r.header("Accept") == "application/vnd.github+json"
    assert TOKEN not in first.err

    # a second run (a new process: nothing in memory) of the same digest: GitHub already shows it
    again = cli(cluster, "--config", str(config))
    assert again.code == 0, again.err
    assert len(statuses(recorder, "/api/v3")) == 2, statuses(recorder, "/api/v3")

    # another cluster's runner posts its own context and does not overwrite this one (one
    # cluster stands in for both, so west applies its own objects: one object has one owner)
    west_url = push_built_from(
        registry,
        f"{unique}/west",
        {"a.yaml": dump(namespace(f"{unique}-w2"), configmap("app", f"{unique}-w2", {}))},
    )
    other = reconcile_config(
        tmp_path / "west.yaml",
        runner("west"),
        sync_doc(
            "web", by_tag(west_url), f"{unique}-w", notify=[github(api, secretRef={"name": "github-token"})]
        ),
    )
    secret(cluster, f"{unique}-w", "github-token", token=TOKEN)
    west = cli(cluster, "--config", str(other))
    assert west.code == 0, west.err
    contexts = [r.json()["context"] for r in statuses(recorder, "/api/v3")]
    assert contexts == ["lockgate/east/web"] * 2 + ["lockgate/west/web"] * 2


def test_a_health_failure_posts_failure_with_the_reason(
    cluster: Cluster, registry: Registry, recorder: Recorder, unique: str, tmp_path: Path
) -> None:
    """The Deployment never becomes available: it asks for a node no cluster has (and in the
    minimal profile no controller-manager runs at all; the full one may be up by now)."""
    runner_ns = f"{unique}-r"
    secret(cluster, runner_ns, "github-token", token=TOKEN)
    files = {
        "a.yaml": dump(namespace(unique), deployment("stuck", unique, node_selector={"no-such-node": "true"}))
    }
    url = push_built_from(registry, f"{unique}/app", files)
    config = reconcile_config(
        tmp_path / "lockgate.yaml",
        runner("east"),
        sync_doc(
            "stuck",
            by_tag(url),
            runner_ns,
            wait=True,
            timeout="2s",
            notify=[github(recorder.url, context="deploy/{cluster}/{sync}")],
        ),
    )
    run = cli(cluster, "--config", str(config))
    assert run.code == int(ExitCode.HEALTH), run.err
    posted = [r.json() for r in statuses(recorder)]
    assert [p["state"] for p in posted] == ["pending", "failure"], posted
    failure = posted[1]
    assert failure["context"] == "deploy/east/stuck"
    assert failure["description"].startswith("health check failed: "), failure
    assert "stuck" in failure["description"] and len(failure["description"]) <= 140
    # the same failure on the next run is not posted again
    assert cli(cluster, "--config", str(config)).code == int(ExitCode.HEALTH)
    assert len(statuses(recorder)) == 2


def test_the_generic_webhook_gets_a_flux_event_signed_with_hmac(
    cluster: Cluster, registry: Registry, recorder: Recorder, unique: str, tmp_path: Path
) -> None:
    runner_ns = f"{unique}-r"
    secret(cluster, runner_ns, "hook", token=HMAC_KEY)
    url = push_built_from(
        registry, f"{unique}/app", {"a.yaml": dump(namespace(unique), configmap("app", unique, {}))}
    )
    notify = [{"type": "generic", "address": recorder.url + "/flux", "secretRef": {"name": "hook"}}]
    config = reconcile_config(
        tmp_path / "lockgate.yaml", sync_doc("web", by_tag(url), runner_ns, notify=notify)
    )
    run = cli(cluster, "--config", str(config))
    assert run.code == 0, run.err
    [request] = recorder.requests("/flux")
    expected = "sha256=" + hmac.new(HMAC_KEY.encode(), request.body, hashlib.sha256).hexdigest()
    assert request.header("X-Signature") == expected
    assert request.header("gotk-component") == "lockgate"
    event = request.json()
    assert event["involvedObject"] == {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "name": "web",
        "namespace": runner_ns,
    }
    assert event["severity"] == "info" and event["reason"] == "ReconciliationSucceeded"
    assert event["reportingController"] == "lockgate"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", event["timestamp"])
    assert f"ConfigMap/{unique}/app created" in event["message"]
    digest = url.split("@")[1]
    assert event["metadata"]["digest"] == digest
    assert event["metadata"]["revision"] == f"v1@{digest}"
    assert event["metadata"]["originRevision"] == f"main@sha1:{SHA}"
    # nothing changed on the next run: no event (as Flux's kustomize-controller)
    assert cli(cluster, "--config", str(config)).code == 0
    assert len(recorder.requests("/flux")) == 1


def test_slack_gets_a_short_message_at_the_address_from_a_secret(
    cluster: Cluster, registry: Registry, recorder: Recorder, unique: str, tmp_path: Path
) -> None:
    runner_ns = f"{unique}-r"
    secret(cluster, runner_ns, "slack", address=recorder.url + SLACK_PATH)
    url = push_built_from(
        registry, f"{unique}/app", {"a.yaml": dump(namespace(unique), configmap("app", unique, {}))}
    )
    config = reconcile_config(
        tmp_path / "lockgate.yaml",
        runner("east", notify=[{"type": "slack", "secretRef": {"name": "slack"}}], namespace=runner_ns),
        sync_doc("web", by_tag(url), runner_ns),
    )
    run = cli(cluster, "--config", str(config))
    assert run.code == 0, run.err
    [request] = recorder.requests(SLACK_PATH)
    text = request.json()["text"]
    assert text.startswith(f":white_check_mark: {runner_ns}/web on east: applied v1@sha256:"), text
    assert text.endswith("2 created"), text


def test_a_failure_naming_two_objects_is_whole_or_summarised_never_cut(
    cluster: Cluster, registry: Registry, recorder: Recorder, unique: str, tmp_path: Path
) -> None:
    """The API server refuses two objects: the commit status (140 characters) gets the summary,
    Slack and the generic event the whole error with both objects."""
    runner_ns = f"{unique}-r"
    secret(cluster, runner_ns, "github-token", token=TOKEN)
    secret(cluster, runner_ns, "slack", address=recorder.url + SLACK_PATH)
    bad = {"bad key!": "x"}
    files = {
        "a.yaml": dump(namespace(unique), configmap("first", unique, bad), configmap("second", unique, bad))
    }
    url = push_built_from(registry, f"{unique}/app", files)
    notify = [
        github(recorder.url),
        {"type": "slack", "secretRef": {"name": "slack"}},
        {"type": "generic", "address": recorder.url + "/flux"},
    ]
    config = reconcile_config(
        tmp_path / "lockgate.yaml", runner("east"), sync_doc("web", by_tag(url), runner_ns, notify=notify)
    )
    run = cli(cluster, "--config", str(config))
    assert run.code == int(ExitCode.APPLY), run.err
    objects = (f"ConfigMap/{unique}/first", f"ConfigMap/{unique}/second")
    failure = statuses(recorder)[-1].json()
    description = failure["description"]
    assert failure["state"] == "failure" and len(description) <= 140, failure
    assert description.startswith("2 objects failed to apply: ConfigMap/"), description
    assert re.search(r", \+1 more$", description) and " - " not in description, description
    [slack] = recorder.requests(SLACK_PATH)
    text = slack.json()["text"]
    assert text.startswith(f":x: {runner_ns}/web on east: ApplyFailed at v1@sha256:"), text
    assert all(o in text for o in objects) and text.count("bad key!") >= 2, text
    [event] = recorder.requests("/flux")
    message = event.json()["message"]
    assert message.startswith("2 objects failed to apply:\n") and all(o in message for o in objects)


def _failures(served_metrics: str, provider: str, sync: str) -> float:
    for line in served_metrics.splitlines():
        if line.startswith(f'lockgate_notification_failures_total{{provider="{provider}",sync="{sync}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_serve_endpoint_down_or_500_the_pass_succeeds_retries_happen_and_failures_are_counted(
    cluster: Cluster, registry: Registry, recorder: Recorder, unique: str, tmp_path: Path
) -> None:
    """GitHub answers, the generic endpoint is down (nothing listens), Slack answers 500."""
    runner_ns = f"{unique}-r"
    secret(cluster, runner_ns, "github-token", token=TOKEN)
    failing = Recorder(status=500)
    secret(cluster, runner_ns, "slack", address=f"{failing.url}{SLACK_PATH}")
    down = f"http://127.0.0.1:{free_port()}/hook"
    url = push_built_from(
        registry, f"{unique}/app", {"a.yaml": dump(namespace(unique), configmap("app", unique, {}))}
    )
    notify = [
        github(recorder.url),
        {"type": "generic", "address": down},
        {"type": "slack", "secretRef": {"name": "slack"}},
    ]
    served = start_serve(
        cluster,
        tmp_path,
        [sync_doc("web", by_tag(url), runner_ns, notify=notify)],
        runner={"clusterName": "east"},
    )
    try:
        served.wait_sync_ready("web")
        recorder.wait_for(lambda _: len(statuses(recorder)) == 2, what="pending and success")
        assert [r.json()["state"] for r in statuses(recorder)] == ["pending", "success"]
        failing.wait_for(lambda seen: len(seen) >= ATTEMPTS, what=f"{ATTEMPTS} attempts at Slack")
        served.wait_event(
            lambda e: e.get("provider") == "generic" and "failed:" in e.get("msg", ""),
            what="the generic notification given up",
        )
        served.wait_event(
            lambda e: e.get("provider") == "slack" and "failed:" in e.get("msg", ""),
            what="the slack notification given up",
        )
        metrics = served.metrics()
        assert _failures(metrics, "generic", "web") == 1, metrics
        assert _failures(metrics, "slack", "web") == 1, metrics
        assert _failures(metrics, "github", "web") == 0, metrics
        assert 'lockgate_notifications_total{provider="github",sync="web"} 2.0' in metrics
        assert (
            'lockgate_passes_total{name="web",namespace="' + runner_ns + '",outcome="applied"} 1.0' in metrics
        )
        assert len(failing.requests()) == ATTEMPTS  # bounded: no more after the last attempt
        retries = [
            e for e in served.events() if e.get("provider") == "slack" and "retrying" in e.get("msg", "")
        ]
        assert len(retries) == ATTEMPTS - 1
        assert any("HTTP 500" in e["msg"] for e in retries)
        log = served.log.read_text()
        assert "sl4cks3cr3tpath" not in log and TOKEN not in log
        assert served.stop() == 0, served.tail()
    finally:
        served.stop()
        failing.stop()


def test_reconcile_flushes_with_retries_and_a_500_does_not_fail_the_pass(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    failing = Recorder(status=500)
    try:
        url = push_built_from(
            registry, f"{unique}/app", {"a.yaml": dump(namespace(unique), configmap("app", unique, {}))}
        )
        notify = [{"type": "generic", "address": failing.url + "/flux"}]
        config = reconcile_config(
            tmp_path / "lockgate.yaml", sync_doc("web", by_tag(url), f"{unique}-r", notify=notify)
        )
        run: Run = cli(cluster, "--config", str(config))
        assert run.code == 0, run.err
        assert len(failing.requests("/flux")) == ATTEMPTS
        assert f"notification to generic for sync web failed: HTTP 500 (after {ATTEMPTS} attempts)" in run.err
        assert "/flux" not in run.err  # the host, never the path
    finally:
        failing.stop()


def test_a_github_provider_without_a_secret_is_refused_naming_the_field(
    cluster: Cluster, unique: str, tmp_path: Path
) -> None:
    config = reconcile_config(
        tmp_path / "lockgate.yaml",
        sync_doc("web", "oci://example.invalid/app:v1", f"{unique}-r", notify=[{"type": "github"}]),
    )
    run = cli(cluster, "--config", str(config))
    assert run.code == int(ExitCode.USAGE), run.err
    assert "Sync/web: spec.notify[0]: a github provider needs secretRef" in run.err
    assert "Traceback" not in run.err


def test_serve_after_a_restart_posts_nothing_github_shows_and_a_new_commit_gets_its_own(
    cluster: Cluster, registry: Registry, recorder: Recorder, unique: str, tmp_path: Path
) -> None:
    """The last status sent is kept in memory; after a restart the inventory stands in for it."""
    runner_ns = f"{unique}-r"
    secret(cluster, runner_ns, "github-token", token=TOKEN)
    files = {"a.yaml": dump(namespace(unique), configmap("app", unique, {"v": "1"}))}
    url = push_built_from(registry, f"{unique}/app", files)
    syncs = [sync_doc("web", by_tag(url), runner_ns, interval="1s", notify=[github(recorder.url)])]
    served = start_serve(cluster, tmp_path, syncs, runner={"clusterName": "east"})
    try:
        recorder.wait_for(lambda _: len(statuses(recorder)) == 2, what="pending and success")
        assert served.stop() == 0, served.tail()
        again = start_serve(cluster, tmp_path / "again", syncs, runner={"clusterName": "east"}, identity="r1")
        try:
            again.wait_event(
                lambda e: e.get("msg") == "pass finished" and e.get("sync") == "web",
                what="the first pass after the restart",
            )
            assert [r.json()["state"] for r in statuses(recorder)] == ["pending", "success"]
            new_sha = "f" * 40
            files = {"a.yaml": dump(namespace(unique), configmap("app", unique, {"v": "2"}))}
            push_built_from(registry, f"{unique}/app", files, sha=new_sha)
            recorder.wait_for(
                lambda _: len(statuses(recorder, sha=new_sha)) == 2, what="the new commit's statuses"
            )
            assert [r.json()["state"] for r in statuses(recorder, sha=new_sha)] == ["pending", "success"]
            assert len(statuses(recorder)) == 2  # the old commit's are left alone
        finally:
            again.stop()
    finally:
        served.stop()


def test_the_queue_is_bounded_and_a_4xx_is_not_retried(recorder: Recorder) -> None:
    """The delivery worker alone, against the recorder as the provider (GitHub answering 422)."""
    failed: list[tuple[str, str]] = []
    sent: list[tuple[str, str]] = []
    gate = threading.Event()

    def job(name: str, *, wait: bool = False) -> delivery.Job:
        def prepare() -> delivery.Request:
            if wait:
                gate.wait(30)
            return delivery.Request(f"{recorder.url}/{name}", b"{}")

        return delivery.Job(provider="github", sync=name, what=name, prepare=prepare)

    queue = delivery.Queue(
        size=2, backoff=0.01, failed=lambda p, s: failed.append((p, s)), sent=lambda p, s: sent.append((p, s))
    )
    recorder.status = 422
    assert queue.submit(job("held", wait=True))  # in flight until the gate opens
    assert queue.submit(job("queued"))
    assert not queue.submit(job("dropped"))  # two in the queue: the third is refused and counted
    assert failed == [("github", "dropped")]
    gate.set()
    assert queue.flush(30) == 0
    assert [r.path for r in recorder.requests()] == ["/held", "/queued"]  # one attempt each: 422
    assert sorted(failed) == [("github", "dropped"), ("github", "held"), ("github", "queued")]
    assert sent == []
