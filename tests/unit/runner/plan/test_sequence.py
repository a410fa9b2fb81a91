"""A pass's order: waves, hooks by phase, which hooks are due, what a wave needs first."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.errors import RenderError
from lockgate.manifests import K8sObject, ObjectKey
from runner.plan.desired import Desired, prepare
from runner.plan.ordering import Event, Phase
from runner.plan.sequence import marker, plan

DIGEST = "sha256:" + "a" * 64


def item(kind: str, name: str, namespace: str = "app", api: str = "v1", **annotations: str) -> Desired:
    metadata: dict[str, Any] = {"name": name, "annotations": dict(annotations)}
    if namespace:
        metadata["namespace"] = namespace
    body = {"apiVersion": api, "kind": kind, "metadata": metadata}
    return prepare(K8sObject(body, "a.yaml", 1), "set")


def job(name: str, hook: str, **annotations: str) -> Desired:
    return item("Job", name, api="batch/v1", **{"lockgate.dev/hook": hook, **annotations})


def key(kind: str, name: str, namespace: str = "app", group: str = "") -> ObjectKey:
    return ObjectKey(group, kind, namespace, name)


def test_objects_go_in_waves_by_ascending_number() -> None:
    objects = [
        item("ConfigMap", "late", **{"lockgate.dev/wave": "2"}),
        item("ConfigMap", "plain"),
        item("Service", "early", **{"argocd.argoproj.io/sync-wave": "-1"}),
    ]
    _, order = plan(objects, event=Event.INSTALL, digest=DIGEST, recorded={})
    assert order.waves == (
        (-1, (key("Service", "early"),)),
        (0, (key("ConfigMap", "plain"),)),
        (2, (key("ConfigMap", "late"),)),
    )
    assert not order.hooks and not order.due


def test_no_annotations_is_one_wave() -> None:
    _, order = plan(
        [item("ConfigMap", "a"), item("Service", "b")], event=Event.UPGRADE, digest=DIGEST, recorded={}
    )
    assert order.waves == ((0, (key("ConfigMap", "a"), key("Service", "b"))),)


def test_a_hook_runs_once_per_revision() -> None:
    migrate = job("migrate", "pre-apply")
    sent, order = plan([migrate], event=Event.UPGRADE, digest=DIGEST, recorded={})
    ran = marker(migrate.hash, DIGEST)
    assert sent[0].hash == ran
    assert order.due == {migrate.key: {Phase.PRE_APPLY}}
    assert order.hook_waves(Phase.PRE_APPLY) == ((0, (migrate.key,)),)
    # the inventory records the marker once it ran: a drift pass of the same digest runs nothing
    _, again = plan([migrate], event=Event.UPGRADE, digest=DIGEST, recorded={migrate.key: ran})
    assert again.due == {}
    # a person's request runs it again, and so does a new digest
    _, asked = plan(
        [migrate], event=Event.UPGRADE, digest=DIGEST, recorded={migrate.key: ran}, requested=True
    )
    assert asked.due == {migrate.key: {Phase.PRE_APPLY}}
    _, new = plan([migrate], event=Event.UPGRADE, digest="sha256:" + "b" * 64, recorded={migrate.key: ran})
    assert new.due == {migrate.key: {Phase.PRE_APPLY}}


def test_a_changed_hook_runs_again_in_the_same_revision() -> None:
    first = job("migrate", "pre-apply")
    changed = job("migrate", "pre-apply", note="substituted")
    recorded = {first.key: marker(first.hash, DIGEST)}
    _, order = plan([changed], event=Event.UPGRADE, digest=DIGEST, recorded=recorded)
    assert changed.key in order.due


def test_helm_hooks_run_on_their_events_and_rollbacks_run_only_rollback_hooks() -> None:
    install = item("Job", "once", api="batch/v1", **{"helm.sh/hook": "pre-install"})
    upgrade = item("Job", "each", api="batch/v1", **{"helm.sh/hook": "pre-upgrade"})
    back = item("Job", "back", api="batch/v1", **{"helm.sh/hook": "post-rollback"})
    ours = job("ours", "pre-apply")
    objects = [install, upgrade, back, ours]
    _, first = plan(objects, event=Event.INSTALL, digest=DIGEST, recorded={})
    assert set(first.due) == {install.key, ours.key}
    _, later = plan(objects, event=Event.UPGRADE, digest=DIGEST, recorded={})
    assert set(later.due) == {upgrade.key, ours.key}
    # a rollback runs its hooks whatever the inventory recorded
    recorded = {back.key: marker(back.hash, DIGEST)}
    _, rollback = plan(objects, event=Event.ROLLBACK, digest=DIGEST, recorded=recorded)
    assert rollback.due == {back.key: {Phase.POST_APPLY}}


def test_never_applied_objects_are_apart() -> None:
    skip = item("ConfigMap", "skip", **{"argocd.argoproj.io/hook": "Skip"})
    _, order = plan([skip, item("ConfigMap", "a")], event=Event.INSTALL, digest=DIGEST, recorded={})
    assert order.never == {skip.key: "argocd.argoproj.io/hook: Skip"}
    assert order.waves == ((0, (key("ConfigMap", "a"),)),)


def test_the_namespace_of_a_pre_apply_hook_comes_first() -> None:
    ns = item("Namespace", "app", namespace="")
    objects = [ns, item("ConfigMap", "a"), job("migrate", "pre-apply")]
    _, order = plan(objects, event=Event.INSTALL, digest=DIGEST, recorded={})
    assert order.first == (ns.key,)
    assert order.waves == ((0, (key("ConfigMap", "a"),)),)
    # not due: the Namespace stays in its wave
    recorded = {key("Job", "migrate", group="batch"): marker(objects[2].hash, DIGEST)}
    _, later = plan(objects, event=Event.UPGRADE, digest=DIGEST, recorded=recorded)
    assert later.first == () and ns.key in later.waves[0][1]


def test_a_wave_of_apply_hooks_alone_is_a_wave() -> None:
    sync = job("sync", "apply", **{"lockgate.dev/wave": "3"})
    _, order = plan([item("ConfigMap", "a"), sync], event=Event.INSTALL, digest=DIGEST, recorded={})
    assert order.waves == ((0, (key("ConfigMap", "a"),)), (3, ()))
    assert order.writes_after(0, pending=set())  # the hook of wave 3 is to run
    assert order.hooks_at(Phase.APPLY, 3) == (sync.key,)


def test_writes_after_looks_only_at_later_waves() -> None:
    objects = [item("ConfigMap", "a"), item("ConfigMap", "b", **{"lockgate.dev/wave": "1"})]
    _, order = plan(objects, event=Event.INSTALL, digest=DIGEST, recorded={})
    assert order.writes_after(0, pending={key("ConfigMap", "b")})
    assert not order.writes_after(0, pending={key("ConfigMap", "a")})
    assert not order.writes_after(1, pending={key("ConfigMap", "a"), key("ConfigMap", "b")})


def test_a_hook_settles_after_its_last_phase() -> None:
    both = job("both", "pre-apply,post-apply")
    _, order = plan([both], event=Event.INSTALL, digest=DIGEST, recorded={})
    assert not order.settles(both.key, Phase.PRE_APPLY)
    assert order.settles(both.key, Phase.POST_APPLY)
    assert order.post_apply_due


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        (
            [item("Namespace", "app", namespace="", **{"lockgate.dev/wave": "1"}), item("ConfigMap", "a")],
            r"ConfigMap/app/a \(a.yaml:1\) is in wave 0, before wave 1 of Namespace/app, which it needs",
        ),
        (
            [
                item(
                    "CustomResourceDefinition",
                    "widgets.example.com",
                    namespace="",
                    api="apiextensions.k8s.io/v1",
                    **{"lockgate.dev/wave": "2"},
                ),
                item("Widget", "w", api="example.com/v1", **{"lockgate.dev/wave": "1"}),
            ],
            r"Widget.example.com/app/w .* is in wave 1, before wave 2 of "
            r"CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com",
        ),
    ],
)
def test_an_object_before_what_it_needs_is_refused(objects: list[Desired], message: str) -> None:
    crd = next((o for o in objects if o.key.kind == "CustomResourceDefinition"), None)
    if crd is not None:
        crd.body["spec"] = {"group": "example.com", "names": {"kind": "Widget"}}
    with pytest.raises(RenderError, match=message):
        plan(objects, event=Event.INSTALL, digest=DIGEST, recorded={})
