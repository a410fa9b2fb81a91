"""The notification bodies and the notify configuration: pure, no world needed."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
from pathlib import Path

import pytest

from lockgate.diff.changeset import Action, ChangeSet, Entry
from lockgate.errors import ApplyError, HealthError, UsageError
from lockgate.forge import remote
from lockgate.manifests import ObjectKey
from runner.pipeline import config
from runner.pipeline.result import Result
from runner.serve.notify import messages

SHA = "6d1e0c3b9f2a4e5d8c7b6a5f4e3d2c1b0a9f8e7d"


@pytest.mark.parametrize(
    ("source", "revision", "expected"),
    [
        ("https://github.com/acme/app", f"main@sha1:{SHA}", ("acme", "app", SHA)),
        ("https://github.com/acme/app.git", f"v1.2.0@sha1:{SHA}", ("acme", "app", SHA)),
        ("https://ghe.example.com/team/svc/", f"sha1:{SHA}", ("team", "svc", SHA)),
        ("git@github.com:acme/app.git", SHA, ("acme", "app", SHA)),
        ("ssh://git@github.com/acme/app", f"main/{SHA}", ("acme", "app", SHA)),
        ("https://github.com/acme/app", f"main@sha1:{SHA.upper()}", ("acme", "app", SHA)),
    ],
)
def test_the_commit_comes_from_the_source_and_revision_annotations(
    source: str, revision: str, expected: tuple[str, str, str]
) -> None:
    commit = remote.commit(source, revision, "github")
    assert commit is not None
    assert (commit.repository.owner, commit.repository.name, commit.sha) == expected


@pytest.mark.parametrize(
    ("source", "revision"),
    [
        ("", f"main@sha1:{SHA}"),
        ("https://github.com/acme/app", ""),
        ("https://github.com/acme/app", "main@sha1:0"),
        ("https://github.com/acme", f"main@sha1:{SHA}"),
    ],
)
def test_no_commit_without_both_annotations(source: str, revision: str) -> None:
    assert remote.commit(source, revision, "github") is None


def _result(**fields: object) -> Result:
    result = Result(name="web", namespace="lockgate-system", digest="sha256:" + "a" * 64, **fields)  # type: ignore[arg-type]
    result.revision = f"v1@{result.digest}"
    return result


def test_a_failure_description_is_the_reason_in_at_most_140_characters() -> None:
    result = _result()
    result.error = HealthError(
        "timed out after 2s waiting for 1 object(s):\n  Deployment/x/stuck: " + "y" * 300
    )
    state, description = messages.outcome(result)
    assert state == "failure" and len(description) == 140
    # the object and its reason, shortened: a summary, never a dangling colon
    assert description.startswith(
        "health check failed: timed out after 2s waiting for 1 object(s): Deployment/x/stuck (yyy"
    )
    assert description.endswith("…)")


def test_a_failure_naming_several_objects_is_summarised_with_a_count() -> None:
    result = _result()
    result.error = ApplyError(
        "3 objects failed to apply",
        details=[
            f"ConfigMap/web/c{i}: ConfigMap is invalid: data[bad key!]: Invalid value" for i in range(3)
        ],
    )
    _, description = messages.outcome(result)
    assert len(description) <= 140 and description.endswith("ConfigMap is…), +1 more"), description
    assert description.startswith("3 objects failed to apply: ConfigMap/web/c0 (ConfigMap is invalid")
    slack = json.loads(messages.slack_message(result, cluster="prod"))["text"]
    assert all(f"ConfigMap/web/c{i}: ConfigMap is invalid" in slack for i in range(3)), slack
    event = json.loads(messages.flux_event(result, now=dt.datetime(2030, 1, 1, tzinfo=dt.UTC)))
    assert event["message"] == result.error.message


def test_the_flux_event_and_its_signature() -> None:
    changes = ChangeSet()
    changes.entries.append(Entry(ObjectKey("", "ConfigMap", "app", "a"), Action.CREATED))
    result = _result(changeset=changes, source_revision=f"main@sha1:{SHA}")
    body = messages.flux_event(result, now=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC))
    event = json.loads(body)
    assert event == {
        "involvedObject": {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Sync",
            "name": "web",
            "namespace": "lockgate-system",
        },
        "severity": "info",
        "timestamp": "2026-01-02T03:04:05Z",
        "message": "ConfigMap/app/a created",
        "reason": "ReconciliationSucceeded",
        "metadata": {
            "revision": result.revision,
            "digest": result.digest,
            "originRevision": f"main@sha1:{SHA}",
        },
        "reportingController": "lockgate",
    }
    expected = hmac.new(b"key", body, hashlib.sha256).hexdigest()
    assert messages.signature(b"key", body) == f"sha256={expected}"


def _config(tmp_path: Path, notify: str, runner: str = "") -> Path:
    path = tmp_path / "lockgate.yaml"
    path.write_text(
        runner + "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
        "spec:\n  url: oci://127.0.0.1:5000/web\n  interval: 5m\n  verify: {insecureSkip: true}\n"
        f"  notify:\n{notify}"
    )
    return path


def test_contexts_carry_the_cluster_name_and_runner_providers_follow_the_syncs(tmp_path: Path) -> None:
    runner = (
        "apiVersion: lockgate.dev/v1alpha1\nkind: Runner\n"
        "spec:\n  clusterName: east\n  namespace: ops\n"
        "  notify: [{type: slack, secretRef: {name: slack}}]\n---\n"
    )
    notify = (
        "  - {type: github, secretRef: {name: gh}, apiURL: 'https://ghe.example/api/v3/'}\n"
        "  - {type: github, secretRef: {name: gh}, context: 'ci/{cluster}/{sync}/deploy'}\n"
    )
    [web] = config.load(_config(tmp_path, notify, runner)).syncs
    first, second, slack = web.notify
    assert first.pin is not None and second.pin is not None and slack.pin is None
    assert (first.context, first.pin.api_root, first.secret_namespace) == (
        "lockgate/east/web",
        "https://ghe.example/api/v3",
        None,
    )
    assert (second.context, second.pin.api_root) == ("ci/east/web/deploy", "https://api.github.com")
    assert (first.where, slack.where) == ("spec.notify[0]", "Runner: spec.notify[0]")
    assert (slack.type, slack.secret_ref, slack.secret_namespace) == ("slack", "slack", "ops")


@pytest.mark.parametrize(
    ("notify", "message"),
    [
        ("  - {type: github}\n", "spec.notify[0]: a github provider needs secretRef"),
        ("  - {type: generic}\n", "spec.notify[0]: a generic provider needs address, or secretRef"),
        ("  - {type: teams, address: 'https://x'}\n", "spec.notify[0].type"),
        ("  - {type: slack, address: 'hooks.slack.com/x'}\n", "spec.notify[0].address"),
        (
            "  - {type: gitea, secretRef: {name: t}, apiURL: 'http://git.example/api/v1'}\n",
            "spec.notify[0]: apiURL: http://git.example/api/v1 is plain http",
        ),
        (
            "  - {type: gitlab, secretRef: {name: t}, address: 'https://gitlab.example/group'}\n",
            "spec.notify[0]: address: 'https://gitlab.example/group': a GitLab project URL",
        ),
    ],
)
def test_bad_providers_name_the_file_document_and_field(tmp_path: Path, notify: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        config.load(_config(tmp_path, notify))
    assert f"{tmp_path / 'lockgate.yaml'}:" in caught.value.message
    assert "Sync/web" in caught.value.message and message in caught.value.message, caught.value.message
