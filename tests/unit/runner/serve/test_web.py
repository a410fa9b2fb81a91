"""The status page's pure parts: commit links, loopback checks, and what the page may show."""

from __future__ import annotations

import pytest

from lockgate.diff.changeset import Action
from lockgate.diff.changeset import Entry as ChangeEntry
from lockgate.errors import UsageError
from lockgate.manifests import ObjectKey
from lockgate.signing.options import VerifyOptions
from runner.pipeline import config
from runner.pipeline.result import Result
from runner.pipeline.runnerdoc import StatusPageSettings
from runner.plan import history
from runner.plan.health import Health, HealthStatus
from runner.plan.inventory import Inventory
from runner.serve.scheduler import APPLIED, FAILED, UNCHANGED, Outcome, SyncState
from runner.serve.web import app, served, view
from runner.serve.web.live import Recorder
from runner.serve.web.view import LiveSync, Provenance


@pytest.mark.parametrize(
    ("source", "revision", "url"),
    [
        (
            "https://github.com/org/app",
            "main@sha1:" + "a" * 40,
            "https://github.com/org/app/commit/" + "a" * 40,
        ),
        ("https://gitlab.example/g/app.git", "sha1:abc1234", "https://gitlab.example/g/app/commit/abc1234"),
        ("https://github.com/org/app/", "b" * 40, "https://github.com/org/app/commit/" + "b" * 40),
        ("git@github.com:org/app.git", "main@sha1:" + "a" * 40, ""),
        ("https://github.com/org/app", "", ""),
        ("https://github.com/org/app", "main", ""),
        ("javascript:alert(1)", "sha1:abc1234", ""),
    ],
)
def test_commit_links(source: str, revision: str, url: str) -> None:
    assert view.commit_url(Provenance(source=source, revision=revision)) == url


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1:9090", True),
        ("127.1.2.3:9090", True),
        ("[::1]:9090", True),
        ("localhost:9090", True),
        (":9090", False),
        ("0.0.0.0:9090", False),
        ("10.0.0.5:9090", False),
        ("status.example:9090", False),
    ],
)
def test_loopback_addresses(address: str, loopback: bool) -> None:
    assert app.is_loopback(address) is loopback


def test_a_page_beyond_loopback_without_a_token_is_refused() -> None:
    served.check(StatusPageSettings(), where="f.yaml")  # off
    served.check(StatusPageSettings(address="127.0.0.1:9090"), where="f.yaml")
    served.check(StatusPageSettings(address=":9090", secret_ref="page"), where="f.yaml")
    with pytest.raises(UsageError, match=r"f.yaml: Runner spec.statusPage.address ':9090' listens beyond"):
        served.check(StatusPageSettings(address=":9090"), where="f.yaml")
    with pytest.raises(UsageError, match=r"uses the port of ':8080'"):
        served.check(StatusPageSettings(address="127.0.0.1:8080"), where="f.yaml", taken=[":8080", ":9292"])


def test_the_session_cookie_is_not_the_token() -> None:
    token = b"t0ken"
    assert token.decode() not in app.session_value(token)
    assert app.session_value(token) != app.session_value(b"other")


def test_without_serve_the_live_parts_are_unknown_not_empty() -> None:
    inventory = Inventory(name="web", namespace="ns", digest="sha256:1", revision="v1@sha256:1", exists=True)
    inventory.last_result = {"status": "Succeeded", "summary": "1 created"}
    inventory.history = [
        history.Entry(
            "sha256:1",
            "v1@sha256:1",
            "ci@example",
            history.Outcome.SUCCEEDED,
            history.Summary.HEALTHY,
            "2030-01-01T00:00:00Z",
        )
    ]
    local = view.detail(inventory, events=[])
    assert local["ready"]["status"] == "True" and local["verifiedBy"] == "ci@example"
    assert local["live"] is False and local["unhealthy"] is None and local["lastChange"] is None
    # an older runner's parent has no last attempt: its last result stands for it
    assert local["nextPass"] is None and local["lastAttempt"]["time"] == "2030-01-01T00:00:00Z"
    assert local["lastAttempt"]["result"] == "Succeeded"
    live = LiveSync(
        ready=False,
        reason="waiting for 'db' to be ready",
        reason_word="DependencyNotReady",
        next_pass="2030-01-01T00:05:00Z",
    )
    running = view.detail(inventory, events=[], live=live)
    assert running["ready"] == {
        "status": "False",
        "reason": "DependencyNotReady",
        "message": "waiting for 'db' to be ready",
        "summary": "waiting for 'db' to be ready",
    }
    assert running["unhealthy"] == [] and running["nextPass"] == live.next_pass


def test_events_newest_first_and_bounded() -> None:
    events = [
        {"type": "Normal", "reason": "R", "message": str(i), "lastTimestamp": f"2030-01-01T00:00:{i:02d}Z"}
        for i in range(30)
    ]
    shown = view.detail(Inventory(name="web", namespace="ns"), events=events)["events"]
    assert len(shown) == view.MAX_EVENTS and shown[0]["message"] == "29"


def _outcome(state: SyncState, outcome: str, digest: str, *changes: Action, **health: Health) -> Outcome:
    result = Result(name=state.name, digest=digest, revision=f"v@{digest}")
    for i, action in enumerate(changes):
        result.changeset.add(ChangeEntry(ObjectKey("", "ConfigMap", "ns", f"c{i}"), action))
    result.health = dict(health)
    return Outcome(state, outcome, result)


def test_the_recorder_keeps_the_last_change_unhealthy_objects_and_drift() -> None:
    options = config.sync_options(
        name="web", url="oci://r.example/app:v1", verify=VerifyOptions(insecure_skip=True)
    )
    state = SyncState(options, due=0.0)
    recorder = Recorder()
    recorder.observe(_outcome(state, APPLIED, "sha256:1", Action.CREATED))
    recorder.observe(_outcome(state, UNCHANGED, "sha256:1", Action.UNCHANGED))
    live = recorder.live([state])["web"]
    assert live.drift == [] and live.last_change is not None
    assert [o["action"] for o in live.last_change["objects"]] == ["created"]
    # the same digest applied again and something changed: a drift correction
    recorder.observe(_outcome(state, APPLIED, "sha256:1", Action.CONFIGURED, Action.UNCHANGED))
    live = recorder.live([state])["web"]
    assert [d["objects"][0]["object"] for d in live.drift] == ["ConfigMap/ns/c0"]
    # a new digest is not drift; its unhealthy object is kept with its reason
    stuck = Health(HealthStatus.FAILED, "progress deadline exceeded")
    recorder.observe(
        _outcome(state, FAILED, "sha256:2", Action.CONFIGURED, **{"Deployment.apps/ns/web": stuck})
    )
    live = recorder.live([state])["web"]
    assert len(live.drift) == 1
    assert live.unhealthy == [
        {"object": "Deployment.apps/ns/web", "status": "Failed", "message": "progress deadline exceeded"}
    ]
    assert recorder.generation == 4
