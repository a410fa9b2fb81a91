"""runner.serve.metrics: names, labels and Flux's buckets, read back from the exposition text."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from lockgate.diff.changeset import Action, ChangeSet, Entry
from lockgate.manifests import ObjectKey
from runner.pipeline import source
from runner.pipeline.reconcile import SyncOptions
from runner.pipeline.result import Result
from runner.serve.metrics import FLUX_BUCKETS, Metrics

SYNC = SyncOptions(name="web", source=source.SourceSpec(url="oci://registry.example/web:v1"))


def samples(metrics: Metrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    body, content_type = metrics.exposition()
    assert content_type.startswith("text/plain; version=0.0.4")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def value(metrics: Metrics, metric: str, /, **labels: str) -> float | None:
    return samples(metrics).get((metric, frozenset(labels.items())))


def changes(**actions: int) -> ChangeSet:
    result = ChangeSet()
    for action, count in actions.items():
        for i in range(count):
            result.add(Entry(ObjectKey("", "ConfigMap", "apps", f"{action}-{i}"), Action(action)))
    return result


def passed(digest: str = "sha256:" + "a" * 64, seconds: float = 1.5, **actions: int) -> Result:
    return Result(
        name="web", namespace="lockgate", digest=digest, seconds=seconds, changeset=changes(**actions)
    )


def test_buckets_are_fluxs_exponential_range_from_10ms_to_30min() -> None:
    assert len(FLUX_BUCKETS) == 10
    assert FLUX_BUCKETS[0] == pytest.approx(0.01)
    assert FLUX_BUCKETS[-1] == pytest.approx(1800)
    assert FLUX_BUCKETS[1] == pytest.approx(0.0383636, rel=1e-5)


def test_a_pass_is_observed_under_fluxs_name_and_counted_by_outcome() -> None:
    metrics = Metrics()
    metrics.observe_pass(SYNC, passed(created=2, unchanged=3), "applied")
    labels = {"kind": "Sync", "name": "web", "namespace": "lockgate"}
    assert value(metrics, "gotk_reconcile_duration_seconds_count", **labels) == 1
    assert value(metrics, "gotk_reconcile_duration_seconds_sum", **labels) == 1.5
    assert value(metrics, "gotk_reconcile_duration_seconds_bucket", **labels, le=repr(FLUX_BUCKETS[4])) == 1
    assert value(metrics, "gotk_reconcile_duration_seconds_bucket", **labels, le=repr(FLUX_BUCKETS[3])) == 0
    sync = {"name": "web", "namespace": "lockgate"}
    assert value(metrics, "lockgate_passes_total", **sync, outcome="applied") == 1
    assert value(metrics, "lockgate_managed_objects", **sync) == 5


def test_unknown_outcome_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown pass outcome 'done'"):
        Metrics().observe_pass(SYNC, passed(), "done")


def test_failed_and_skipped_passes_keep_the_managed_count() -> None:
    metrics = Metrics()
    metrics.observe_pass(SYNC, passed(unchanged=4), "unchanged")
    metrics.observe_pass(SYNC, passed(created=1), "failed")
    metrics.observe_pass(SYNC, passed(), "skipped")
    assert value(metrics, "lockgate_managed_objects", name="web", namespace="lockgate") == 4
    assert value(metrics, "lockgate_passes_total", name="web", namespace="lockgate", outcome="failed") == 1


def test_drift_is_objects_corrected_at_an_unchanged_digest() -> None:
    metrics = Metrics()
    metrics.observe_pass(SYNC, passed(created=3), "applied")  # first apply of this digest: not drift
    assert value(metrics, "lockgate_drift_corrections_total", name="web", namespace="lockgate") is None
    metrics.observe_pass(SYNC, passed(configured=1, unchanged=2), "applied")
    metrics.observe_pass(SYNC, passed(digest="sha256:" + "b" * 64, configured=3), "applied")  # new digest
    assert value(metrics, "lockgate_drift_corrections_total", name="web", namespace="lockgate") == 1


def test_sync_info_replaces_its_series_when_a_label_changes_and_forget_drops_all() -> None:
    metrics = Metrics()
    common = {"name": "web", "namespace": "lockgate", "url": "oci://r/web:v1"}
    metrics.set_sync_info(**common, revision="v1@sha1:1", digest="sha256:1", ready=False, suspended=False)
    metrics.set_sync_info(**common, revision="v2@sha1:2", digest="sha256:2", ready=True, suspended=True)
    infos = {k: v for k, v in samples(metrics).items() if k[0] == "lockgate_sync_info"}
    assert infos == {
        (
            "lockgate_sync_info",
            frozenset(
                {
                    **common,
                    "revision": "v2@sha1:2",
                    "digest": "sha256:2",
                    "ready": "True",
                    "suspended": "true",
                }.items()
            ),
        ): 1.0
    }
    metrics.observe_pass(SYNC, passed(created=1), "applied")
    metrics.forget("web", "lockgate")
    left = [name for name, labels in samples(metrics) if ("name", "web") in labels]
    assert left == []


def test_requests_and_reloads_are_counted() -> None:
    metrics = Metrics()
    metrics.count_api({"get": 3, "patch": 1, "list": 0})
    metrics.count_api({"get": 2})
    metrics.count_registry("HEAD")
    metrics.count_registry("get", 4)
    metrics.reload(True)
    metrics.reload(False)
    metrics.reload(False)
    assert value(metrics, "lockgate_api_requests_total", verb="get") == 5
    assert value(metrics, "lockgate_api_requests_total", verb="patch") == 1
    assert value(metrics, "lockgate_api_requests_total", verb="list") is None
    assert value(metrics, "lockgate_registry_requests_total", verb="head") == 1
    assert value(metrics, "lockgate_registry_requests_total", verb="get") == 4
    assert value(metrics, "lockgate_config_reloads_total", result="success") == 1
    assert value(metrics, "lockgate_config_reloads_total", result="failure") == 2


def test_two_metrics_values_do_not_share_state() -> None:
    first, second = Metrics(), Metrics()
    first.reload(True)
    assert value(first, "lockgate_config_reloads_total", result="success") == 1
    assert value(second, "lockgate_config_reloads_total", result="success") == 0
