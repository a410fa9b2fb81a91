"""Drift lockgate must not fight (``spec.ignore``) and drift it only reports (``spec.driftDetection``).

Every writer here is real: the HPA is kube-controller-manager's controller (an HPA whose
``minReplicas`` is above the Deployment's replicas scales it without metrics, through the
scale subresource, as it does under load), the webhook is a MutatingAdmissionPolicy (the API
server's own mutating admission, GA in Kubernetes 1.36), hand edits are ``kubectl``. The
syncs come from Sync documents, as ``--config`` files hold them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.kube.client import Kube
from runner.pipeline import config, status
from runner.pipeline import reconcile as pipeline
from runner.pipeline.reconcile import SyncOptions
from runner.pipeline.result import Result
from tests.integration.reconcile_support import (
    actions,
    configmap,
    deployment,
    dump,
    events_of,
    get,
    namespace,
    push_tree,
)
from tests.integration.serve_support import start_serve, sync_doc
from tests.world.kube import Cluster
from tests.world.recorder import Recorder
from tests.world.registry import Registry

pytestmark = pytest.mark.world

IGNORE_REPLICAS = [{"paths": ["/spec/replicas"], "target": {"kind": "Deployment"}}]


def options(url: str, name: str, runner_ns: str, **spec: Any) -> SyncOptions:
    """The sync as a Sync document in a ``--config`` file declares it."""
    text = yaml.safe_dump(sync_doc(name, url, runner_ns, **spec), sort_keys=False)
    return config.parse(text.encode(), "lockgate.yaml").syncs[0]


def run(cluster: Cluster, sync: SyncOptions) -> Result:
    result = pipeline.reconcile(sync, kube=Kube.from_kubeconfig(cluster.kubeconfig))
    assert result.error is None, result.error
    return result


def entry(result: Result, name: str) -> Any:
    return next(e for e in result.changeset.entries if e.key.name == name)


def changes(result: Result, name: str) -> list[str]:
    return [str(c) for c in entry(result, name).changes]


def live(cluster: Cluster, kind: str, name: str, ns: str) -> dict[str, Any]:
    found = get(cluster, kind, name, ns)
    assert found is not None, f"{kind}/{ns}/{name} is missing"
    return found


def wait_until(what: str, check: Any, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g}s: {what}")
        time.sleep(0.5)


def hpa(name: str, ns: str, target: str, *, minimum: int, maximum: int) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": minimum,
            "maxReplicas": maximum,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
        },
    }


def test_an_hpa_scales_a_deployment_and_no_pass_takes_its_replicas_back(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner_ns = f"{unique}-r"
    web = deployment("web", unique, replicas=1)
    v1 = {"app.yaml": dump(namespace(unique), web, hpa("web", unique, "web", minimum=3, maximum=5))}
    sync = options(push_tree(registry, unique, v1, "v1"), unique, runner_ns, ignore=IGNORE_REPLICAS)
    assert actions(run(full_cluster, sync))[f"Deployment.apps/{unique}/web"] == "created"
    # the HPA controller raises the Deployment to minReplicas through the scale subresource
    wait_until(
        "the HPA scales web to 3",
        lambda: live(full_cluster, "deploy", "web", unique)["spec"]["replicas"] == 3,
    )
    scaled = live(full_cluster, "deploy", "web", unique)
    owners = {(m["manager"], m.get("subresource", "")): m for m in scaled["metadata"]["managedFields"]}
    assert "f:replicas" in owners[("kube-controller-manager", "scale")]["fieldsV1"]["f:spec"]

    # drift passes: nothing to correct, nothing to report, no request for the Deployment
    for _ in range(2):
        again = run(full_cluster, sync)
        assert entry(again, "web").action.value == "unchanged" and not again.changeset.drifted
    after = live(full_cluster, "deploy", "web", unique)
    assert after["spec"]["replicas"] == 3
    assert after["metadata"]["resourceVersion"] == scaled["metadata"]["resourceVersion"]

    # a new revision changing the image keeps the HPA's replicas: replicas is not sent
    web["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example/app:2.0"
    v2 = {"app.yaml": dump(namespace(unique), web, hpa("web", unique, "web", minimum=3, maximum=5))}
    sync = options(push_tree(registry, unique, v2, "v2"), unique, runner_ns, ignore=IGNORE_REPLICAS)
    updated = run(full_cluster, sync)
    assert changes(updated, "web") == [
        "spec.template.spec.containers[name=app].image: "
        '"registry.example/app:1.0" -> "registry.example/app:2.0"'
    ]
    after = live(full_cluster, "deploy", "web", unique)
    assert after["spec"]["replicas"] == 3
    assert after["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/app:2.0"
    ours = next(m for m in after["metadata"]["managedFields"] if m["manager"] == "lockgate")
    assert "f:replicas" not in ours["fieldsV1"]["f:spec"]

    # the control: without the rule the same drift pass takes the HPA's replicas back
    fight = run(full_cluster, options(sync.source.url, unique, runner_ns))
    assert changes(fight, "web") == ["spec.replicas: 3 -> 1"]


@pytest.fixture
def stamping_policy(cluster: Cluster, unique: str) -> Iterator[str]:
    """A MutatingAdmissionPolicy that sets ``policy.example/tier: gold`` on every ConfigMap
    created in the test's namespace, as a defaulting webhook would (on CREATE only)."""
    cluster.kubectl("create", "namespace", unique)
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": unique},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["configmaps"],
                    }
                ]
            },
            "matchConditions": [{"name": "ns", "expression": f"object.metadata.namespace == '{unique}'"}],
            "failurePolicy": "Fail",
            "reinvocationPolicy": "Never",
            "mutations": [
                {
                    "patchType": "ApplyConfiguration",
                    "applyConfiguration": {
                        "expression": "Object{metadata: Object.metadata{"
                        'annotations: {"policy.example/tier": "gold"}}}'
                    },
                }
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": unique},
        "spec": {"policyName": unique},
    }
    cluster.kubectl("apply", "-f", "-", input=dump(policy, binding))

    def active() -> bool:
        probe = cluster.kubectl(
            "create", "configmap", "probe", "-n", unique, "--dry-run=server", "-o", "json", check=False
        )
        return probe.returncode == 0 and "gold" in probe.stdout

    try:
        wait_until("the admission policy acts", active, timeout=60)
        yield "/metadata/annotations/policy.example~1tier"
    finally:
        cluster.kubectl(
            "delete", "mutatingadmissionpolicybinding,mutatingadmissionpolicy", unique, check=False
        )


def test_a_field_a_mutating_admission_policy_sets_is_left_to_it(
    cluster: Cluster, registry: Registry, unique: str, stamping_policy: str
) -> None:
    runner_ns = f"{unique}-r"
    cfg = configmap("cfg", unique, {"k": "1"}, annotations={"policy.example/tier": "standard"})
    ignore = [{"paths": [stamping_policy]}]  # no target: every object of the sync
    sync = options(push_tree(registry, unique, {"a.yaml": dump(cfg)}, "v1"), unique, runner_ns, ignore=ignore)
    run(cluster, sync)
    created = live(cluster, "configmap", "cfg", unique)
    assert created["metadata"]["annotations"]["policy.example/tier"] == "gold"  # the admission's value

    again = run(cluster, sync)
    assert entry(again, "cfg").action.value == "unchanged" and not again.changeset.drifted
    after = live(cluster, "configmap", "cfg", unique)
    assert after["metadata"]["annotations"]["policy.example/tier"] == "gold"
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    cfg["data"]["k"] = "2"
    sync = options(push_tree(registry, unique, {"a.yaml": dump(cfg)}, "v2"), unique, runner_ns, ignore=ignore)
    updated = run(cluster, sync)
    assert changes(updated, "cfg") == ['data.k: "1" -> "2"']
    after = live(cluster, "configmap", "cfg", unique)
    assert after["metadata"]["annotations"]["policy.example/tier"] == "gold" and after["data"] == {"k": "2"}


def test_targets_select_objects_by_kind_name_and_label_and_annotation_selectors(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner_ns = f"{unique}-r"
    data = {"k": "1", "j": "1"}
    objects = [
        configmap("keep-1", unique, dict(data), labels={"team": "a"}),
        configmap("keep-2", unique, dict(data), labels={"team": "b"}, annotations={"owner": "ops"}),
        configmap("other-1", unique, dict(data), labels={"team": "a"}),
    ]
    ignore = [
        {
            "paths": ["/data/k"],
            "target": {"kind": "Config.*", "name": "keep-[0-9]+", "labelSelector": "team=a"},
        },
        {"paths": ["/data/j"], "target": {"namespace": unique, "annotationSelector": "owner in (ops, sre)"}},
    ]
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(unique), *objects)})
    sync = options(url, unique, runner_ns, ignore=ignore)
    run(cluster, sync)
    for name in ("keep-1", "keep-2", "other-1"):
        cluster.kubectl(
            "patch",
            "configmap",
            name,
            "-n",
            unique,
            "--type=merge",
            "-p",
            '{"data":{"k":"edited","j":"edited"}}',
        )
    drifted = run(cluster, sync)
    assert changes(drifted, "keep-1") == ['data.j: "edited" -> "1"']  # kind, name and label match k
    assert changes(drifted, "keep-2") == [
        'data.k: "edited" -> "1"'
    ]  # its label does not; its annotation matches j
    assert changes(drifted, "other-1") == ['data.j: "edited" -> "1"', 'data.k: "edited" -> "1"']
    assert live(cluster, "configmap", "keep-1", unique)["data"] == {"k": "edited", "j": "1"}
    assert live(cluster, "configmap", "keep-2", unique)["data"] == {"k": "1", "j": "edited"}
    assert live(cluster, "configmap", "other-1", unique)["data"] == data
    quiet = run(cluster, sync)
    assert set(actions(quiet).values()) == {"unchanged"} and not quiet.changeset.drifted


def test_disabled_neither_reports_nor_corrects_and_a_changed_object_is_still_applied(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner_ns = f"{unique}-r"
    files = {
        "a.yaml": dump(
            namespace(unique), configmap("a", unique, {"k": "1"}), configmap("b", unique, {"k": "1"})
        )
    }
    mode = {"driftDetection": {"mode": "disabled"}}
    sync = options(push_tree(registry, unique, files, "v1"), unique, runner_ns, **mode)
    run(cluster, sync)
    cluster.kubectl("patch", "configmap", "a", "-n", unique, "--type=merge", "-p", '{"data":{"k":"edited"}}')
    cluster.kubectl("delete", "configmap", "b", "-n", unique)
    edited = live(cluster, "configmap", "a", unique)
    left = run(cluster, sync)
    assert set(actions(left).values()) == {"unchanged"} and not left.changeset.drifted
    after = live(cluster, "configmap", "a", unique)
    assert after["data"] == {"k": "edited"}
    assert after["metadata"]["resourceVersion"] == edited["metadata"]["resourceVersion"]
    assert get(cluster, "configmap", "b", unique) is None
    assert not [e for e in events_of(cluster, unique, runner_ns) if e["reason"] == "DriftDetected"]
    assert (
        status.to_json(status.read(namespace=runner_ns, name=unique, kube=_kube(cluster)).inventories[0])[
            "drifted"
        ]
        is None
    )

    # the artifact changes a: applied whole (the edit goes with it); b is unchanged there: left deleted
    files = {
        "a.yaml": dump(
            namespace(unique), configmap("a", unique, {"k": "2"}), configmap("b", unique, {"k": "1"})
        )
    }
    sync = options(push_tree(registry, unique, files, "v2"), unique, runner_ns, **mode)
    changed = run(cluster, sync)
    assert changes(changed, "a") == ['data.k: "edited" -> "2"']
    assert get(cluster, "configmap", "b", unique) is None

    # enabled (the default) corrects what disabled left
    corrected = run(cluster, options(sync.source.url, unique, runner_ns))
    assert actions(corrected)[f"ConfigMap/{unique}/b"] == "created"


def test_an_object_annotated_drift_detection_disabled_is_left_alone_in_enabled_mode(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner_ns = f"{unique}-r"
    kept = configmap("kept", unique, {"k": "1"}, annotations={"lockgate.dev/driftDetection": "disabled"})
    helm = configmap("helm", unique, {"k": "1"}, labels={"helm.toolkit.fluxcd.io/driftDetection": "disabled"})
    watched = configmap("watched", unique, {"k": "1"})
    sync = options(
        push_tree(registry, unique, {"a.yaml": dump(namespace(unique), kept, helm, watched)}),
        unique,
        runner_ns,
    )
    run(cluster, sync)
    for name in ("kept", "helm", "watched"):
        cluster.kubectl(
            "patch", "configmap", name, "-n", unique, "--type=merge", "-p", '{"data":{"k":"edited"}}'
        )
    result = run(cluster, sync)
    assert actions(result)[f"ConfigMap/{unique}/watched"] == "configured"
    assert actions(result)[f"ConfigMap/{unique}/kept"] == "unchanged"
    assert live(cluster, "configmap", "kept", unique)["data"] == {"k": "edited"}
    assert live(cluster, "configmap", "helm", unique)["data"] == {"k": "edited"}
    assert live(cluster, "configmap", "watched", unique)["data"] == {"k": "1"}


def _kube(cluster: Cluster) -> Kube:
    return Kube.from_kubeconfig(cluster.kubeconfig)


def _metric(exposition: str, what: str) -> float:
    """``lockgate_drift_<what>_total`` of the sync ``web`` (0 when not exported yet)."""
    for line in exposition.splitlines():
        if line.startswith(f"lockgate_drift_{what}_total{{") and 'name="web"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_warn_reports_drift_once_by_event_status_metric_and_notification_and_changes_nothing(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns = f"{unique}-r"
    recorder = Recorder()
    files = {
        "a.yaml": dump(
            namespace(unique), configmap("a", unique, {"k": "1"}), configmap("b", unique, {"k": "1"})
        )
    }
    url = push_tree(registry, unique, files, "v1")
    doc = sync_doc(
        "web",
        url.split("@")[0],  # by tag: the revision is v1@sha256:...
        runner_ns,
        interval="1s",
        driftInterval="1s",
        driftDetection={"mode": "warn"},
        notify=[{"type": "generic", "address": recorder.url + "/flux"}],
    )
    served = start_serve(cluster, tmp_path, [doc])
    try:
        served.wait_sync_ready("web")
        cluster.kubectl(
            "patch", "configmap", "a", "-n", unique, "--type=merge", "-p", '{"data":{"k":"edited"}}'
        )
        cluster.kubectl("delete", "configmap", "b", "-n", unique)
        # two objects at every drift pass: three passes at least have found them
        wait_until("three drift passes report the drift", lambda: _metric(served.metrics(), "detected") >= 6)
        assert live(cluster, "configmap", "a", unique)["data"] == {"k": "edited"}
        assert get(cluster, "configmap", "b", unique) is None
        assert _metric(served.metrics(), "corrections") == 0

        [event] = [e for e in events_of(cluster, "web", runner_ns) if e["reason"] == "DriftDetected"]
        assert event["type"] == "Warning"
        assert event["message"].startswith(f"2 objects drifted from v1@{url.split('@')[1]}; not corrected")
        assert f'ConfigMap/{unique}/a:\n  data.k: "edited" -> "1"' in event["message"]
        assert f"ConfigMap/{unique}/b: deleted from the cluster" in event["message"]

        recorder.wait_for(lambda seen: any(json.loads(r.body)["reason"] == "DriftDetected" for r in seen))
        [sent] = [r.json() for r in recorder.requests("/flux") if r.json()["reason"] == "DriftDetected"]
        assert sent["severity"] == "error" and sent["message"] == event["message"]

        inventory = status.read(namespace=runner_ns, name="web", kube=_kube(cluster)).inventories[0]
        shown = status.to_json(inventory)
        assert shown["ready"]["status"] == "True"  # drift is its own condition, as HelmRelease's Drifted
        assert shown["drifted"]["objects"] == 2 and shown["drifted"]["message"] == event["message"]
        assert "drifted:" in status.detail(inventory)
    finally:
        served.stop()
        recorder.stop()
    # a pass in enabled mode corrects the drift and drops the record
    corrected = run(cluster, options(url, "web", runner_ns))
    assert actions(corrected)[f"ConfigMap/{unique}/b"] == "created" and not corrected.changeset.drifted
    inventory = status.read(namespace=runner_ns, name="web", kube=_kube(cluster)).inventories[0]
    assert inventory.drift is None
