"""Flux's Alert filters (``eventSeverity``, ``inclusionList``, ``exclusionList``), Microsoft Teams
and Alertmanager as notification providers.

Microsoft Teams is a SaaS that cannot run here: the local recording HTTP endpoint
(``tests.world.recorder``) stands in for a Teams workflow URL, records the card and judges it
against the published Adaptive Card schema (``tests.world.teams``). Alertmanager
is the real one (``tests.world.alertmanager``, built from the Go module proxy): the tests ask
its v2 API what it holds. The registry, the cluster (Secrets, the applies) are the world.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lockgate.errors import ExitCode
from tests.integration.reconcile_support import cli, configmap, dump, namespace
from tests.integration.serve_support import start_serve, sync_doc
from tests.integration.test_notify import (
    _failures,
    by_tag,
    push_built_from,
    reconcile_config,
    runner,
    secret,
)
from tests.world import teams
from tests.world.alertmanager import Alertmanager, start_alertmanager
from tests.world.kube import Cluster
from tests.world.recorder import Recorder
from tests.world.registry import Registry

pytestmark = pytest.mark.world

#: a Teams workflow URL carries its credential in the query (``sig``): it must reach no log
TEAMS_PATH = "/workflows/0a1b2c/triggers/manual/paths/invoke"
TEAMS_SIG = "t3amss1gn4tur3"
AM_PASSWORD = "am-passw0rd-refused"


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    yield rec
    rec.stop()


@pytest.fixture
def alertmanager(tmp_path: Path, recorder: Recorder) -> Iterator[Alertmanager]:
    am = start_alertmanager(tmp_path / "alertmanager", receiver_url=recorder.url + "/am-webhook")
    yield am
    am.stop()


def given_up(provider: str) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e.get("provider") == provider and "failed:" in str(e.get("msg", ""))


def generic(address: str, **filters: object) -> dict[str, object]:
    return {"type": "generic", "address": address, **filters}


def test_filters_drop_info_events_by_severity_and_messages_by_go_regexps(
    cluster: Cluster, registry: Registry, recorder: Recorder, unique: str, tmp_path: Path
) -> None:
    """One pass that creates objects (an info event) and five providers that filter it."""
    url = push_built_from(
        registry, f"{unique}/app", {"a.yaml": dump(namespace(unique), configmap("app", unique, {}))}
    )
    notify = [
        generic(recorder.url + "/all"),
        generic(recorder.url + "/errors-only", eventSeverity="error"),
        # a POSIX class inside a bracket: Go reads it as alphanumerics, Python's re as a set of
        # the characters "[:alnum" and then "-]"
        generic(recorder.url + "/included", inclusionList=[r"ConfigMap/[[:alnum:]-]+/app created"]),
        generic(recorder.url + "/not-included", inclusionList=["^Secret/"]),
        generic(
            recorder.url + "/excluded",
            inclusionList=["created"],
            exclusionList=["no such text", r"ConfigMap/\S+/app"],
        ),
    ]
    config = reconcile_config(
        tmp_path / "lockgate.yaml", sync_doc("web", by_tag(url), f"{unique}-r", notify=notify)
    )
    run = cli(cluster, "--config", str(config))
    assert run.code == 0, run.err
    [everything] = recorder.requests("/all")
    assert everything.json()["severity"] == "info"
    assert f"ConfigMap/{unique}/app created" in everything.json()["message"]
    [included] = recorder.requests("/included")
    assert included.body == everything.body or included.json()["message"] == everything.json()["message"]
    assert recorder.requests("/errors-only") == []
    assert recorder.requests("/not-included") == []
    assert recorder.requests("/excluded") == []  # exclusion wins over a matching inclusion


def test_an_invalid_regexp_or_a_filter_on_a_commit_status_is_refused_at_load(
    cluster: Cluster, unique: str, tmp_path: Path
) -> None:
    notify = [
        generic("http://127.0.0.1:9/hook", inclusionList=["ok", "(unclosed"]),
        generic("http://127.0.0.1:9/hook", exclusionList=[r"(?=lookahead)"]),
        {"type": "github", "secretRef": {"name": "t"}, "eventSeverity": "error"},
    ]
    config = reconcile_config(
        tmp_path / "lockgate.yaml",
        sync_doc("web", "oci://example.invalid/app:v1", f"{unique}-r", notify=notify),
    )
    run = cli(cluster, "--config", str(config))
    assert run.code == int(ExitCode.USAGE), run.err
    assert (
        "Sync/web: spec.notify[0]: inclusionList[1]: error parsing regexp: missing closing ): `(unclosed`"
        in run.err
    ), run.err
    assert "Sync/web: spec.notify[1]: exclusionList[0]: error parsing regexp: " in run.err, run.err
    assert "Sync/web: spec.notify[2]: eventSeverity, inclusionList and exclusionList filter events" in run.err
    assert "Traceback" not in run.err


@pytest.fixture
def teams_workflow() -> Iterator[Recorder]:
    stand_in = Recorder(status=202, judge=teams.judge)
    yield stand_in
    stand_in.stop()


def test_msteams_gets_flux_adaptive_card_for_a_failure(
    cluster: Cluster, registry: Registry, teams_workflow: Recorder, unique: str, tmp_path: Path
) -> None:
    """The Teams workflow is stood in by the recorder, which accepts only a card valid under the
    published Adaptive Card schema; its URL (with ``sig``) comes from a Secret."""
    recorder = teams_workflow
    runner_ns = f"{unique}-r"
    secret(cluster, runner_ns, "teams", address=f"{recorder.url}{TEAMS_PATH}?api-version=1&sig={TEAMS_SIG}")
    bad = {"bad key!": "x"}
    url = push_built_from(
        registry, f"{unique}/app", {"a.yaml": dump(namespace(unique), configmap("first", unique, bad))}
    )
    notify = [{"type": "msteams", "secretRef": {"name": "teams"}}]
    config = reconcile_config(
        tmp_path / "lockgate.yaml", runner("east"), sync_doc("web", by_tag(url), runner_ns, notify=notify)
    )
    run = cli(cluster, "--config", str(config))
    assert run.code == int(ExitCode.APPLY), run.err
    [posted] = recorder.requests(f"{TEAMS_PATH}?api-version=1&sig={TEAMS_SIG}")
    assert recorder.refusals == []  # the card is valid under the published schema
    assert posted.header("Content-Type") == "application/json"
    message = posted.json()
    assert message["type"] == "message"
    [attachment] = message["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    content = attachment["content"]
    assert content["$schema"] == "http://adaptivecards.io/schemas/adaptive-card.json"
    assert (content["type"], content["version"], content["msteams"]) == (
        "AdaptiveCard",
        "1.4",
        {"width": "Full"},
    )
    [container] = content["body"]
    assert container["type"] == "Container"
    heading, text, facts = container["items"]
    assert heading == {
        "type": "TextBlock",
        "text": f"sync/web.{runner_ns}",
        "size": "large",
        "weight": "bolder",
        "wrap": True,
    }
    assert text["type"] == "TextBlock" and text["color"] == "attention" and text["wrap"] is True
    assert f"ConfigMap/{unique}/first" in text["text"] and "bad key!" in text["text"], text
    assert facts["type"] == "FactSet"
    titles = [f["title"] for f in facts["facts"]]
    assert titles == sorted(titles) and {"digest", "revision", "originRevision"} <= set(titles), titles
    assert TEAMS_SIG not in run.err


def test_alertmanager_alert_fires_while_the_sync_fails_and_resolves_when_it_recovers(
    cluster: Cluster,
    registry: Registry,
    recorder: Recorder,
    alertmanager: Alertmanager,
    unique: str,
    tmp_path: Path,
) -> None:
    """Two ``reconcile`` runs (two processes): a failing artifact, then a fixed one on the same tag;
    the second run knows the alert from the inventory's last result."""
    runner_ns = f"{unique}-r"
    repo = f"{unique}/app"
    url = push_built_from(
        registry, repo, {"a.yaml": dump(namespace(unique), configmap("app", unique, {"bad key!": "x"}))}
    )
    notify = [{"type": "alertmanager", "address": alertmanager.url + "/api/v2/alerts"}]
    config = reconcile_config(
        tmp_path / "lockgate.yaml", runner("east"), sync_doc("web", by_tag(url), runner_ns, notify=notify)
    )
    failed = cli(cluster, "--config", str(config))
    assert failed.code == int(ExitCode.APPLY), failed.err
    ours = [
        a
        for a in alertmanager.alerts()
        if a["labels"].get("sync") == "web" and a["labels"].get("namespace") == runner_ns
    ]
    assert len(ours) == 1, alertmanager.alerts()
    [alert] = ours
    assert alert["status"]["state"] == "active", alert
    assert alert["labels"] == {
        "alertname": "LockgateSyncFailed",
        "severity": "error",
        "cluster": "east",
        "sync": "web",
        "namespace": runner_ns,
        "kind": "Sync",
        "reportingcontroller": "lockgate",
    }
    assert alert["annotations"]["summary"].startswith(
        f"sync {runner_ns}/web on east is failing: ApplyFailed at v1@"
    )
    assert f"ConfigMap/{unique}/app" in alert["annotations"]["message"]
    assert alert["annotations"]["reason"] == "ApplyFailed"
    started = alert["startsAt"]
    # active for two of the sync's intervals (10m) unless a pass posts it again or resolves it
    lasts = dt.datetime.fromisoformat(alert["endsAt"]) - dt.datetime.fromisoformat(started)
    assert dt.timedelta(minutes=19) < lasts <= dt.timedelta(minutes=21), alert
    recorder.wait_for(
        lambda seen: any(r.path == "/am-webhook" and r.json()["status"] == "firing" for r in seen),
        what="Alertmanager's own firing notification",
    )

    # the same failure again keeps the one alert (its labels), still active
    assert cli(cluster, "--config", str(config)).code == int(ExitCode.APPLY)
    assert [
        a["labels"]["sync"] for a in alertmanager.alerts() if a["labels"].get("namespace") == runner_ns
    ] == ["web"]

    push_built_from(
        registry, repo, {"a.yaml": dump(namespace(unique), configmap("app", unique, {"good": "x"}))}
    )
    recovered = cli(cluster, "--config", str(config))
    assert recovered.code == 0, recovered.err
    assert [a for a in alertmanager.alerts() if a["labels"].get("namespace") == runner_ns] == []
    resolved = recorder.wait_for(
        lambda seen: any(r.path == "/am-webhook" and r.json()["status"] == "resolved" for r in seen),
        what="Alertmanager's own resolved notification",
    )
    [note] = [r.json() for r in resolved if r.path == "/am-webhook" and r.json()["status"] == "resolved"]
    [gone] = note["alerts"]
    assert gone["labels"]["sync"] == "web" and gone["status"] == "resolved"
    assert gone["startsAt"][:19] == started[:19] and gone["endsAt"][:19] >= started[:19], gone
    # a healthy run after that resolves nothing again
    again = cli(cluster, "--config", str(config))
    assert again.code == 0 and "alertmanager" not in again.err, again.err


def test_a_refused_credential_counts_a_failure_and_logs_one_line_naming_the_provider(
    cluster: Cluster, registry: Registry, recorder: Recorder, unique: str, tmp_path: Path
) -> None:
    """``serve``: the real Alertmanager refuses the password (its basic auth, 401) and the Teams
    stand-in refuses the workflow URL (401); neither is retried, each is counted once and logged
    once naming the provider, and neither credential reaches the log."""
    am = start_alertmanager(
        tmp_path / "am-auth", receiver_url=recorder.url + "/am-webhook", users={"lockgate": "right-password"}
    )
    teams = Recorder(status=401)
    try:
        runner_ns = f"{unique}-r"
        secret(cluster, runner_ns, "am", username="lockgate", password=AM_PASSWORD)
        secret(cluster, runner_ns, "teams", address=f"{teams.url}{TEAMS_PATH}?sig={TEAMS_SIG}")
        url = push_built_from(
            registry,
            f"{unique}/app",
            {"a.yaml": dump(namespace(unique), configmap("app", unique, {"bad key!": "x"}))},
        )
        notify = [
            {"type": "alertmanager", "address": am.url + "/api/v2/alerts", "secretRef": {"name": "am"}},
            {"type": "msteams", "secretRef": {"name": "teams"}},
        ]
        served = start_serve(
            cluster,
            tmp_path,
            [sync_doc("web", by_tag(url), runner_ns, notify=notify)],
            runner={"clusterName": "east"},
        )
        try:
            for provider in ("alertmanager", "msteams"):
                served.wait_event(given_up(provider), what=f"the {provider} notification given up")
            metrics = served.metrics()
            assert _failures(metrics, "alertmanager", "web") == 1, metrics
            assert _failures(metrics, "msteams", "web") == 1, metrics
            log = served.log.read_text()
            for provider in ("alertmanager", "msteams"):
                lines = [
                    line for line in log.splitlines() if f"notification to {provider} for sync web" in line
                ]
                assert len(lines) == 1, lines
                assert "HTTP 401 (not retried)" in lines[0], lines
            assert AM_PASSWORD not in log and TEAMS_SIG not in log and TEAMS_PATH not in log
            assert len(teams.requests()) == 1
            assert am.alerts() == []  # refused: nothing reached Alertmanager
        finally:
            served.stop()
    finally:
        teams.stop()
        am.stop()
