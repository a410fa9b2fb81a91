"""Drift left by ``driftDetection.mode: warn`` in the metrics and in the notifications."""

from __future__ import annotations

import datetime as dt
import json

from lockgate.diff.changeset import Action, ChangeSet, Entry
from lockgate.manifests import ObjectKey
from runner.pipeline.result import Result
from runner.plan import drift
from runner.serve.metrics import Metrics
from runner.serve.notify import messages
from tests.unit.runner.serve.test_metrics import SYNC, value

DIGEST = "sha256:" + "a" * 64


def left(count: int) -> ChangeSet:
    return ChangeSet(
        [
            Entry(
                ObjectKey("", "ConfigMap", "apps", f"c{i}"),
                Action.UNCHANGED,
                drift.NOT_CORRECTED,
                drifted=True,
            )
            for i in range(count)
        ]
    )


def test_each_pass_counts_the_objects_it_left_drifted_and_corrects_none() -> None:
    metrics = Metrics()
    sync = {"name": "web", "namespace": "lockgate"}
    for _ in range(2):
        result = Result(name="web", namespace="lockgate", digest=DIGEST, changeset=left(2))
        metrics.observe_pass(SYNC, result, "unchanged")
    assert value(metrics, "lockgate_drift_detected_total", **sync) == 4
    assert value(metrics, "lockgate_drift_corrections_total", **sync) in (None, 0)
    assert value(metrics, "lockgate_managed_objects", **sync) == 2
    metrics.forget("web", "lockgate")
    assert value(metrics, "lockgate_drift_detected_total", **sync) is None


def test_the_drift_event_is_flux_s_event_json_with_the_whole_report() -> None:
    report = drift.message(left(1).entries, revision=f"v1@{DIGEST}")
    result = Result(
        name="web", namespace="lockgate", digest=DIGEST, revision=f"v1@{DIGEST}", drift_reported=report
    )
    now = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    event = json.loads(messages.drift_event(result, now=now, instance="pod-1"))
    assert event["involvedObject"] == {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "name": "web",
        "namespace": "lockgate",
    }
    assert (event["severity"], event["reason"], event["message"]) == ("error", "DriftDetected", report)
    assert event["timestamp"] == "2026-01-02T03:04:05Z" and event["metadata"]["revision"] == f"v1@{DIGEST}"
    assert event["reportingInstance"] == "pod-1"
    text = json.loads(messages.slack_drift(result, cluster="east"))["text"]
    assert text == f":warning: lockgate/web on east: DriftDetected\n{report}"
