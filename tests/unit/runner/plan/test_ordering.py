"""Ordering annotations: lockgate's, Argo CD's and Helm's keys, their precedence, bad values."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.errors import RenderError
from runner.plan.health import HealthStatus
from runner.plan.ordering import (
    APPLYING,
    Deletion,
    Event,
    Hook,
    Ordering,
    Phase,
    hook_health,
    ordering_of,
)

BEFORE = frozenset({Deletion.BEFORE_CREATION})


def hook(*phases: Phase, deletion: frozenset[Deletion] = BEFORE) -> Hook:
    return Hook(runs=frozenset((p, e) for p in phases for e in APPLYING), deletion=deletion)


def body(annotations: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "x", "annotations": annotations}}


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, Ordering()),
        ({"lockgate.dev/wave": "5"}, Ordering(wave=5)),
        ({"lockgate.dev/wave": " -2 "}, Ordering(wave=-2)),
        ({"argocd.argoproj.io/sync-wave": "+3"}, Ordering(wave=3)),
        ({"helm.sh/hook-weight": "-5"}, Ordering(wave=-5)),
        # lockgate's key wins over Argo CD's, Argo CD's over Helm's
        (
            {"lockgate.dev/wave": "1", "argocd.argoproj.io/sync-wave": "2", "helm.sh/hook-weight": "3"},
            Ordering(1),
        ),
        ({"argocd.argoproj.io/sync-wave": "2", "helm.sh/hook-weight": "3"}, Ordering(wave=2)),
        ({"lockgate.dev/hook": "pre-apply"}, Ordering(hook=hook(Phase.PRE_APPLY))),
        (
            {"lockgate.dev/hook": "Post-Apply, on-failure"},
            Ordering(hook=hook(Phase.POST_APPLY, Phase.ON_FAILURE)),
        ),
        (
            {
                "lockgate.dev/hook": "pre-apply",
                "lockgate.dev/hook-delete-policy": "on-success,before-creation",
            },
            Ordering(
                hook=hook(
                    Phase.PRE_APPLY, deletion=frozenset({Deletion.ON_SUCCESS, Deletion.BEFORE_CREATION})
                )
            ),
        ),
        ({"argocd.argoproj.io/hook": "PreSync"}, Ordering(hook=hook(Phase.PRE_APPLY))),
        ({"argocd.argoproj.io/hook": "Sync"}, Ordering(hook=hook(Phase.APPLY))),
        (
            {"argocd.argoproj.io/hook": "PostSync,SyncFail"},
            Ordering(hook=hook(Phase.POST_APPLY, Phase.ON_FAILURE)),
        ),
        (
            {"argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/hook-delete-policy": "HookSucceeded"},
            Ordering(hook=hook(Phase.PRE_APPLY, deletion=frozenset({Deletion.ON_SUCCESS}))),
        ),
        ({"argocd.argoproj.io/hook": "Skip"}, Ordering(never="argocd.argoproj.io/hook: Skip")),
        (
            {"argocd.argoproj.io/hook": "PreDelete"},
            Ordering(never="argocd.argoproj.io/hook: PreDelete (runs only on deletion)"),
        ),
        # an Argo CD hook hides the Helm hook, as Argo CD does
        (
            {"argocd.argoproj.io/hook": "PostSync", "helm.sh/hook": "pre-install"},
            Ordering(hook=hook(Phase.POST_APPLY)),
        ),
        (
            {"helm.sh/hook": "pre-install,pre-upgrade", "helm.sh/hook-weight": "-1"},
            Ordering(wave=-1, hook=hook(Phase.PRE_APPLY)),
        ),
        (
            {"helm.sh/hook": "post-install", "helm.sh/hook-delete-policy": "hook-succeeded,hook-failed"},
            Ordering(
                hook=Hook(
                    runs=frozenset({(Phase.POST_APPLY, Event.INSTALL)}),
                    deletion=frozenset({Deletion.ON_SUCCESS, Deletion.ON_FAILURE}),
                )
            ),
        ),
        (
            {"helm.sh/hook": "pre-rollback, crd-install"},  # unknown Helm names are ignored, as Helm does
            Ordering(hook=Hook(runs=frozenset({(Phase.PRE_APPLY, Event.ROLLBACK)}), deletion=BEFORE)),
        ),
        (
            {"helm.sh/hook": "pre-delete"},
            Ordering(never="helm.sh/hook: pre-delete (no install, upgrade or rollback)"),
        ),
        ({"helm.sh/hook": "test"}, Ordering(never="helm.sh/hook: test (no install, upgrade or rollback)")),
        # lockgate's delete policy wins over Helm's
        (
            {
                "helm.sh/hook": "pre-upgrade",
                "helm.sh/hook-delete-policy": "hook-succeeded",
                "lockgate.dev/hook-delete-policy": "on-failure",
            },
            Ordering(
                hook=Hook(
                    runs=frozenset({(Phase.PRE_APPLY, Event.UPGRADE)}),
                    deletion=frozenset({Deletion.ON_FAILURE}),
                )
            ),
        ),
    ],
)
def test_ordering_of(annotations: dict[str, str], expected: Ordering) -> None:
    assert ordering_of(body(annotations)) == expected


def test_a_helm_hook_runs_only_on_its_events() -> None:
    found = ordering_of(body({"helm.sh/hook": "pre-install,post-upgrade"})).hook
    assert found is not None
    assert found.phases(Event.INSTALL) == {Phase.PRE_APPLY}
    assert found.phases(Event.UPGRADE) == {Phase.POST_APPLY}
    assert found.phases(Event.ROLLBACK) == frozenset()


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({"lockgate.dev/wave": "first"}, r"Job/x: annotation lockgate.dev/wave: 'first' is not an integer"),
        (
            {"argocd.argoproj.io/sync-wave": "1.5"},
            r"annotation argocd.argoproj.io/sync-wave: '1.5' is not an integer",
        ),
        ({"helm.sh/hook-weight": ""}, r"annotation helm.sh/hook-weight: '' is not an integer"),
        ({"lockgate.dev/wave": "1_000"}, r"'1_000' is not an integer"),
        ({"lockgate.dev/wave": "9" * 30}, r"is not an integer"),
        ({"lockgate.dev/hook": "before"}, r"lockgate.dev/hook: 'before' is not a hook \(pre-apply, apply, "),
        ({"argocd.argoproj.io/hook": "PreSnyc"}, r"'PreSnyc' is not an Argo CD hook \(PreSync, Sync"),
        (
            {"lockgate.dev/hook": "pre-apply", "lockgate.dev/hook-delete-policy": "always"},
            r"lockgate.dev/hook-delete-policy: 'always' is not a delete policy \(before-creation, on-success",
        ),
        (
            {"argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/hook-delete-policy": "OnSuccess"},
            r"'OnSuccess' is not a delete policy \(BeforeHookCreation, HookSucceeded, HookFailed\)",
        ),
        (
            {"lockgate.dev/hook-delete-policy": "on-success"},
            r"lockgate.dev/hook-delete-policy needs lockgate.dev/hook",
        ),
    ],
)
def test_bad_annotations_name_the_object_and_the_annotation(
    annotations: dict[str, str], message: str
) -> None:
    with pytest.raises(RenderError, match=message):
        ordering_of(body(annotations), where="Job/x")


def _pod(phase: str, **terminated: Any) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if terminated:
        status["containerStatuses"] = [{"name": "c", "state": {"terminated": terminated}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": status}


def test_a_pod_hook_is_done_only_when_it_succeeded() -> None:
    assert hook_health(_pod("Succeeded"), 0).status is HealthStatus.CURRENT
    assert hook_health(_pod("Running"), 0).status is HealthStatus.IN_PROGRESS
    failed = hook_health(_pod("Failed", exitCode=3, reason="Error", message="no database"), 0)
    assert failed.status is HealthStatus.FAILED
    assert failed.message == "Pod p: container c exited with 3 (Error: no database)"


def test_a_job_hook_follows_the_job_rule() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "status": {}}
    assert hook_health(job, 0).status is HealthStatus.IN_PROGRESS
    job["status"] = {"conditions": [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]}
    assert hook_health(job, 0).status is HealthStatus.FAILED
    assert hook_health(None, 0).status is HealthStatus.NOT_FOUND
