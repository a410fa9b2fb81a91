"""Kind ordering and staging follow Flux: what others depend on first, webhooks last."""

from __future__ import annotations

import pytest

from lockgate.manifests import ObjectKey
from runner.plan import kinds


def k(kind: str, name: str = "x", ns: str = "", group: str = "") -> ObjectKey:
    return ObjectKey(group=group, kind=kind, namespace=ns, name=name)


@pytest.mark.parametrize(
    ("kind", "stage"),
    [
        ("CustomResourceDefinition", kinds.Stage.CLUSTER),
        ("Namespace", kinds.Stage.CLUSTER),
        ("ClusterRole", kinds.Stage.CLUSTER),
        ("StorageClass", kinds.Stage.CLASSES),
        ("IngressClass", kinds.Stage.CLASSES),
        ("Deployment", kinds.Stage.REST),
        ("ClusterRoleBinding", kinds.Stage.REST),
    ],
)
def test_stage_of(kind: str, stage: kinds.Stage) -> None:
    assert kinds.stage_of(k(kind)) is stage


def test_staged_orders_config_before_workloads_and_webhooks_last() -> None:
    keys = [
        k("ValidatingWebhookConfiguration", group="admissionregistration.k8s.io"),
        k("Deployment", "web", "app", "apps"),
        k("Widget", "w", "app", "example.com"),
        k("Service", "web", "app"),
        k("ConfigMap", "cfg", "app"),
        k("ServiceAccount", "sa", "app"),
        k("Namespace", "app"),
        k("CustomResourceDefinition", "widgets.example.com", group="apiextensions.k8s.io"),
        k("PriorityClass", "high", group="scheduling.k8s.io"),
    ]
    staged = kinds.staged(keys)
    assert [(stage, [key.kind for key in stage_keys]) for stage, stage_keys in staged] == [
        (kinds.Stage.CLUSTER, ["CustomResourceDefinition", "Namespace"]),
        (kinds.Stage.CLASSES, ["PriorityClass"]),
        (
            kinds.Stage.REST,
            [
                "ServiceAccount",
                "ConfigMap",
                "Service",
                "Deployment",
                "Widget",
                "ValidatingWebhookConfiguration",
            ],
        ),
    ]


def test_deletion_is_the_reverse_of_apply_order() -> None:
    keys = [k("Namespace", "app"), k("ConfigMap", "c", "app"), k("Deployment", "d", "app", "apps")]
    assert [key.kind for key in kinds.deletion_order(keys)] == ["Deployment", "ConfigMap", "Namespace"]


def test_waves_group_runs_of_one_kind() -> None:
    keys = sorted(
        [k("ConfigMap", "a", "n"), k("ConfigMap", "b", "n"), k("Service", "s", "n")], key=kinds.sort_key
    )
    assert [[key.name for key in wave] for wave in kinds.waves(keys)] == [["a", "b"], ["s"]]
