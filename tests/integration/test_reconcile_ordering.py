"""Waves and hooks inside a sync, with the world's controllers: a migration Job runs to
completion before the Deployment changes; a failing or endless one stops the pass there."""

from __future__ import annotations

import copy
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.diff.changeset import Action
from runner.inventory import store
from runner.kube.client import Kube
from runner.pipeline.result import Result
from tests.integration.artifacts_support import lockgate
from tests.integration.ordering_support import Timeline, complete, healthy, image
from tests.integration.reconcile_support import (
    LOCKGATE,
    cli,
    configmap,
    deployment,
    dump,
    get,
    namespace,
    push_tree,
    run_pass,
)
from tests.world.binaries import binary
from tests.world.kube import FAIL_POD_LABEL, Cluster
from tests.world.registry import Registry

pytestmark = [pytest.mark.world, pytest.mark.full]

KINDS = [("batch/v1", "Job"), ("apps/v1", "Deployment"), ("v1", "ConfigMap")]


def job(
    name: str, ns: str, tag: str = "1", *, fail: bool = False, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    labels = {FAIL_POD_LABEL: "true"} if fail else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations or {}},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "migrate", "image": f"registry.example/migrate:{tag}"}],
                },
            },
        },
    }


def web(ns: str, tag: str) -> dict[str, Any]:
    found = deployment("web", ns)
    found["spec"]["template"]["spec"]["containers"][0]["image"] = f"registry.example/app:{tag}"
    return found


def reasons(result: Result) -> dict[str, str]:
    return {str(e.key): f"{e.action.value}: {e.reason}" for e in result.changeset.entries}


def uid(cluster: Cluster, kind: str, name: str, ns: str) -> str:
    found = get(cluster, kind, name, ns)
    assert found is not None, f"{kind}/{name} is not in {ns}"
    return str(found["metadata"]["uid"])


def test_a_migration_job_runs_to_completion_before_the_deployment_changes(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    ns, runner_ns = unique, f"{unique}-r"
    pre = {"lockgate.dev/hook": "pre-apply"}
    post = {"lockgate.dev/hook": "post-apply", "lockgate.dev/hook-delete-policy": "on-success"}

    def revision(tag: str) -> dict[str, str]:
        objects = [namespace(ns), configmap("cfg", ns, {"v": tag}), web(ns, tag)]
        return {
            "a.yaml": dump(
                *objects, job("migrate", ns, tag, annotations=pre), job("smoke", ns, tag, annotations=post)
            )
        }

    first = push_tree(registry, unique, revision("1"), tag="v1")
    # a dry run says which hooks would run, and runs none
    dry = run_pass(full_cluster, first, unique, runner_ns, dry_run=True)
    assert dry.error is None, dry.error
    assert reasons(dry)[f"Job.batch/{ns}/migrate"] == "created: pre-apply hook: would run"
    assert reasons(dry)[f"Job.batch/{ns}/smoke"] == "created: post-apply hook: would run"
    assert get(full_cluster, "namespace", ns) is None
    with Timeline(full_cluster, ns, KINDS) as seen:
        result = run_pass(full_cluster, first, unique, runner_ns, wait=True, timeout="90s")
    assert result.error is None, result.error
    migrate, smoke = f"Job.batch/{ns}/migrate", f"Job.batch/{ns}/smoke"
    assert reasons(result)[migrate] == "created: pre-apply hook: ran to completion"
    assert reasons(result)[smoke] == (
        "created: post-apply hook: ran to completion; deleted (hook-delete-policy on-success)"
    )
    # the Job controller completed the migration before the Deployment existed, and the
    # post-apply hook started only once the Deployment was healthy
    assert seen.first("Job", "migrate", complete) < seen.first("Deployment", "web")
    assert seen.first("Deployment", "web", healthy) < seen.first("Job", "smoke")
    assert get(full_cluster, "job", "smoke", ns) is None
    # hooks are members of the set: a pass killed while they run leaves nothing unknown
    inventory = store.read(Kube.from_kubeconfig(full_cluster.kubeconfig), unique, runner_ns)
    assert {str(k) for k in inventory.members} >= {migrate, smoke}

    # a drift pass of the same digest does not run the hooks again
    before = uid(full_cluster, "job", "migrate", ns)
    again = run_pass(full_cluster, first, unique, runner_ns, wait=True, timeout="90s")
    assert again.error is None, again.error
    assert reasons(again)[migrate] == "skipped: hook: ran for this revision already"
    assert uid(full_cluster, "job", "migrate", ns) == before
    assert get(full_cluster, "job", "smoke", ns) is None
    assert not again.changeset.changed

    # a new revision: the Job (its template is immutable) is replaced and runs again, first
    second = push_tree(registry, unique, revision("2"), tag="v2")
    with Timeline(full_cluster, ns, KINDS) as seen:
        result = run_pass(full_cluster, second, unique, runner_ns, wait=True, timeout="90s")
    assert result.error is None, result.error
    assert reasons(result)[migrate] == "created: pre-apply hook: replaced the previous run, ran to completion"
    assert uid(full_cluster, "job", "migrate", ns) != before
    migrated = seen.first("Job", "migrate", lambda s: image("migrate:2")(s) and complete(s))
    assert migrated < seen.first("Deployment", "web", image("app:2"))
    assert migrated < seen.first("ConfigMap", "cfg", lambda s: s.object.get("data") == {"v": "2"})


def test_a_failing_migration_stops_the_pass_before_anything_else_is_written(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    ns, runner_ns = unique, f"{unique}-r"
    pre = {"lockgate.dev/hook": "pre-apply"}
    page = job("page", ns, annotations={"lockgate.dev/hook": "on-failure"})
    good = push_tree(
        registry, unique, {"a.yaml": dump(namespace(ns), web(ns, "1"), job("migrate", ns, annotations=pre))}
    )
    result = run_pass(full_cluster, good, unique, runner_ns, wait=True, timeout="90s")
    assert result.error is None, result.error
    assert get(full_cluster, "job", "page", ns) is None  # nothing failed: the on-failure hook did not run

    objects = [namespace(ns), web(ns, "2"), configmap("added", ns, {"k": "v"})]
    bad = job("migrate", ns, "2", fail=True, annotations=pre)
    broken = push_tree(registry, unique, {"a.yaml": dump(*objects, bad, page)}, tag="v2")
    result = run_pass(full_cluster, broken, unique, runner_ns, wait=True, timeout="90s")
    assert result.error is not None and int(result.error.exit_code) == 6, result.error
    message = result.error.message
    assert f"pre-apply hook Job.batch/{ns}/migrate failed" in message, message
    # the hook's reason, and the Pods' underneath it, as the health wait reports them
    assert f"Job.batch/{ns}/migrate: Failed:" in message, message
    assert "exited with 1 (containerFailed: container failed)" in message, message
    # nothing after the hook was written
    deployed = get(full_cluster, "deployment", "web", ns)
    assert deployed is not None
    assert deployed["spec"]["template"]["spec"]["containers"][0]["image"].endswith("app:1")
    assert get(full_cluster, "configmap", "added", ns) is None
    # the on-failure hook ran, to completion
    paged = get(full_cluster, "job", "page", ns)
    assert paged is not None and complete_job(paged), paged
    assert reasons(result)[f"Job.batch/{ns}/page"] == "created: on-failure hook: ran to completion"
    inventory = store.read(Kube.from_kubeconfig(full_cluster.kubeconfig), unique, runner_ns)
    assert inventory.last_result["status"] == "Failed"

    # fixed: the migration runs again (its failed run replaced) and the rollout follows
    fixed = push_tree(
        registry, unique, {"a.yaml": dump(*objects, job("migrate", ns, "3", annotations=pre), page)}, tag="v3"
    )
    result = run_pass(full_cluster, fixed, unique, runner_ns, wait=True, timeout="90s")
    assert result.error is None, result.error
    deployed = get(full_cluster, "deployment", "web", ns)
    assert deployed is not None
    assert deployed["spec"]["template"]["spec"]["containers"][0]["image"].endswith("app:2")
    assert get(full_cluster, "configmap", "added", ns) is not None


def complete_job(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Complete" and c.get("status") == "True" for c in conditions)


def test_a_hook_that_never_finishes_times_out_naming_it(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    ns = unique
    stuck = job("migrate", ns, annotations={"lockgate.dev/hook": "pre-apply"})
    stuck["spec"]["template"]["spec"]["nodeSelector"] = {"no-such-node": "true"}
    files = {"a.yaml": dump(namespace(ns), configmap("cfg", ns, {"k": "v"}), web(ns, "1"), stuck)}
    url = push_tree(registry, unique, files)
    result = run_pass(full_cluster, url, unique, f"{unique}-r", wait=True, timeout="6s")
    assert result.error is not None and int(result.error.exit_code) == 6, result.error
    message = result.error.message
    assert f"pre-apply hook Job.batch/{ns}/migrate did not finish in 6s" in message, message
    assert f"Job.batch/{ns}/migrate: InProgress: Job in progress" in message, message
    assert "Unschedulable: 0/" in message, message
    # nothing after it was applied (its Namespace came first: the hook runs in it)
    assert get(full_cluster, "namespace", ns) is not None
    assert get(full_cluster, "configmap", "cfg", ns) is None
    assert get(full_cluster, "deployment", "web", ns) is None
    assert reasons(result)[f"Job.batch/{ns}/migrate"] == "created: pre-apply hook: did not finish"


def test_each_wave_is_healthy_before_the_next(full_cluster: Cluster, registry: Registry, unique: str) -> None:
    ns = unique
    database = deployment("db", ns)
    later = {"lockgate.dev/wave": "1"}
    app = web(ns, "1")
    app["metadata"]["annotations"] = dict(later)
    files = {
        "a.yaml": dump(namespace(ns), database, configmap("cfg", ns, {"k": "v"}, annotations=later), app)
    }
    url = push_tree(registry, unique, files)
    with Timeline(full_cluster, ns, KINDS) as seen:
        result = run_pass(full_cluster, url, unique, f"{unique}-r", timeout="90s")
    assert result.error is None, result.error
    # without waves the ConfigMap would go first (kind order); with them, after db is healthy
    assert seen.first("Deployment", "db", healthy) < seen.first("ConfigMap", "cfg")
    assert seen.first("Deployment", "db", healthy) < seen.first("Deployment", "web")
    assert result.health[f"Deployment.apps/{ns}/db"].status.value == "Current"
    # a pass that finds everything as it was waits for nothing (no watch at all)
    again = run_pass(full_cluster, url, unique, f"{unique}-r", timeout="90s")
    assert again.error is None and not again.changeset.changed
    assert again.requests.get("watch", 0) == 0, again.requests


def test_a_wave_that_does_not_become_healthy_stops_the_next(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    ns = unique
    stuck = deployment("db", ns, node_selector={"no-such-node": "true"})
    app = web(ns, "1")
    app["metadata"]["annotations"] = {"argocd.argoproj.io/sync-wave": "5"}
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(ns), stuck, app)})
    result = run_pass(full_cluster, url, unique, f"{unique}-r", timeout="5s")
    assert result.error is not None and int(result.error.exit_code) == 6, result.error
    message = result.error.message
    assert (
        "wave 0: timed out after 5s waiting for 1 object(s); the waves after it were not applied" in message
    )
    assert f"Deployment.apps/{ns}/db: InProgress" in message, message
    assert get(full_cluster, "deployment", "web", ns) is None


def test_argo_cd_annotations_move_over_unchanged(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    ns = unique
    presync = job(
        "schema",
        ns,
        annotations={
            "argocd.argoproj.io/hook": "PreSync",
            "argocd.argoproj.io/hook-delete-policy": "HookSucceeded",
            "argocd.argoproj.io/sync-wave": "-1",
        },
    )
    seed = job("seed", ns, annotations={"argocd.argoproj.io/hook": "PreSync"})
    skipped = configmap("never", ns, {"k": "v"}, annotations={"argocd.argoproj.io/hook": "Skip"})
    app = web(ns, "1")
    app["metadata"]["annotations"] = {"argocd.argoproj.io/sync-wave": "2"}
    files = {"a.yaml": dump(namespace(ns), configmap("cfg", ns, {"k": "v"}), app, presync, seed, skipped)}
    url = push_tree(registry, unique, files)
    with Timeline(full_cluster, ns, KINDS) as seen:
        result = run_pass(full_cluster, url, unique, f"{unique}-r", wait=True, timeout="90s")
    assert result.error is None, result.error
    # PreSync hooks by wave (-1 before 0), all before the objects; HookSucceeded deleted it
    assert seen.first("Job", "schema", complete) < seen.first("Job", "seed")
    assert seen.first("Job", "seed", complete) < seen.first("ConfigMap", "cfg")
    assert seen.first("ConfigMap", "cfg") < seen.first("Deployment", "web")
    assert get(full_cluster, "job", "schema", ns) is None
    assert get(full_cluster, "job", "seed", ns) is not None  # BeforeHookCreation, the default, keeps it
    assert get(full_cluster, "configmap", "never", ns) is None
    assert (
        reasons(result)[f"ConfigMap/{ns}/never"] == "skipped: never applied (argocd.argoproj.io/hook: Skip)"
    )


def test_a_hook_that_leaves_the_artifact_is_pruned(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    ns = unique
    hook = job("migrate", ns, annotations={"lockgate.dev/hook": "pre-apply"})
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(ns), configmap("cfg", ns, {}), hook)})
    result = run_pass(full_cluster, url, unique, f"{unique}-r", wait=True, timeout="90s")
    assert result.error is None, result.error
    assert get(full_cluster, "job", "migrate", ns) is not None
    later = copy.deepcopy([namespace(ns), configmap("cfg", ns, {"k": "2"})])
    url = push_tree(registry, unique, {"a.yaml": dump(*later)}, tag="v2")
    result = run_pass(full_cluster, url, unique, f"{unique}-r", prune=True, timeout="90s")
    assert result.error is None, result.error
    assert {str(e.key) for e in result.changeset.of(Action.DELETED)} == {f"Job.batch/{ns}/migrate"}
    assert get(full_cluster, "job", "migrate", ns) is None


def test_a_wave_that_is_not_an_integer_is_refused_before_anything_is_written(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    ns = unique
    odd = configmap("cfg", ns, {"k": "v"}, annotations={"lockgate.dev/wave": "first"})
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(ns), odd)})
    run = cli(full_cluster, url, "--name", unique, "-n", f"{unique}-r", "--insecure-skip-verify")
    assert run.code == 8, run.err
    assert (
        f"ConfigMap/{ns}/cfg (a.yaml:6): annotation lockgate.dev/wave: 'first' is not an integer; "
        'a wave is written "-1", "0", "5"'
    ) in run.err, run.err
    assert get(full_cluster, "namespace", ns) is None
    # the parent tells of the failure, and records no member: nothing was written
    inventory = store.read(Kube.from_kubeconfig(full_cluster.kubeconfig), unique, f"{unique}-r")
    assert inventory.members == {} and inventory.last_result["status"] == "Failed"


def _chart(root: Path) -> Path:
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: shop\nversion: 0.1.0\n")
    (root / "values.yaml").write_text("tag: '1'\n")
    meta = "metadata:\n  name: {name}\n  namespace: {{{{ .Release.Namespace }}}}\n"
    templates = {
        "namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ .Release.Namespace }}\n",
        "web.yaml": yaml.safe_dump(web("NS", "TAG")),
        "migrate.yaml": (
            "apiVersion: batch/v1\nkind: Job\n"
            + meta.format(name="migrate")
            + "  annotations:\n    helm.sh/hook: pre-install,pre-upgrade\n    helm.sh/hook-weight: '-5'\n"
            "    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded\n"
            "spec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n"
            "      containers: [{name: migrate, image: 'registry.example/migrate:{{ .Values.tag }}'}]\n"
        ),
        "seed.yaml": (
            "apiVersion: v1\nkind: ConfigMap\n"
            + meta.format(name="seed")
            + "  annotations:\n    helm.sh/hook: post-install\ndata: {}\n"
        ),
        "cleanup.yaml": (
            "apiVersion: v1\nkind: ConfigMap\n"
            + meta.format(name="cleanup")
            + "  annotations:\n    helm.sh/hook: pre-delete\ndata: {}\n"
        ),
    }
    for name, text in templates.items():
        text = text.replace("namespace: NS", "namespace: {{ .Release.Namespace }}")
        (root / "templates" / name).write_text(text.replace("app:TAG", "app:{{ .Values.tag }}"))
    return root


def test_helm_hooks_of_a_chart_rendered_by_push_run_in_their_phases(
    full_cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns = unique, f"{unique}-r"
    chart = _chart(tmp_path / "shop")
    env = {"LOCKGATE_HELM": str(binary("helm"))}

    def push(tag: str) -> str:
        ref = registry.oci(unique, f":v{tag}")
        flags = ["--render", "--release-name", "shop", "--namespace", ns, "--set", f"tag={tag}"]
        pushed = lockgate("push", str(chart), ref, *flags, env=env)
        assert pushed.code == 0, pushed.err
        # the notice says how the runner reads the hooks, and which it never applies
        assert "3 Helm hook object(s) keep their annotations" in pushed.err, pushed.err
        assert "never applied: ConfigMap/cleanup (pre-delete)" in pushed.err, pushed.err
        return ref

    with Timeline(full_cluster, ns, KINDS) as seen:
        result = run_pass(full_cluster, push("1"), unique, runner_ns, wait=True, timeout="90s")
    assert result.error is None, result.error
    assert seen.first("Job", "migrate", complete) < seen.first("Deployment", "web")
    assert seen.first("Deployment", "web", healthy) < seen.first("ConfigMap", "seed")
    assert get(full_cluster, "job", "migrate", ns) is None  # hook-succeeded
    assert get(full_cluster, "configmap", "cleanup", ns) is None
    assert reasons(result)[f"ConfigMap/{ns}/cleanup"] == (
        "skipped: never applied (helm.sh/hook: pre-delete (no install, upgrade or rollback))"
    )

    # an upgrade: pre-upgrade runs the migration again; the post-install hook does not run
    with Timeline(full_cluster, ns, KINDS) as seen:
        result = run_pass(full_cluster, push("2"), unique, runner_ns, wait=True, timeout="90s")
    assert result.error is None, result.error
    assert seen.first("Job", "migrate", complete) < seen.first("Deployment", "web", image("app:2"))
    assert reasons(result)[f"ConfigMap/{ns}/seed"] == "skipped: hook: does not run on upgrade"


def test_a_hook_that_cannot_run_again_is_refused_before_anything_is_written(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    ns = unique
    keep = {"lockgate.dev/hook": "pre-apply", "lockgate.dev/hook-delete-policy": "on-failure"}

    def revision(tag: str) -> str:
        hook = configmap("marker", ns, {"tag": tag}, annotations=keep)
        return push_tree(registry, unique, {"a.yaml": dump(namespace(ns), web(ns, tag), hook)}, tag=f"v{tag}")

    result = run_pass(full_cluster, revision("1"), unique, f"{unique}-r")
    assert result.error is None, result.error
    # a new revision: the hook is due, its previous object is there, and nothing may delete it
    result = run_pass(full_cluster, revision("2"), unique, f"{unique}-r")
    assert result.error is not None and int(result.error.exit_code) == 5, result.error
    assert f"ConfigMap/{ns}/marker (from a.yaml:" in result.error.message
    assert "its delete policy has no before-creation" in result.error.message
    deployed = get(full_cluster, "deployment", "web", ns)
    assert deployed is not None
    assert deployed["spec"]["template"]["spec"]["containers"][0]["image"].endswith("app:1")


def test_a_pass_killed_while_its_hook_runs_is_followed_by_one_that_converges(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    ns, runner_ns = unique, f"{unique}-r"
    pre = {"lockgate.dev/hook": "pre-apply"}
    old = [namespace(ns), configmap("gone", ns, {"k": "1"}), web(ns, "1")]
    first = run_pass(full_cluster, push_tree(registry, unique, {"a.yaml": dump(*old)}), unique, runner_ns)
    assert first.error is None, first.error
    stuck = job("migrate", ns, annotations=pre)
    stuck["spec"]["template"]["spec"]["nodeSelector"] = {"no-such-node": "true"}
    new = [namespace(ns), configmap("added", ns, {"k": "1"}), web(ns, "2")]
    hung = push_tree(registry, unique, {"a.yaml": dump(*new, stuck)}, tag="v2")
    argv = [*LOCKGATE, "reconcile", hung, "--name", unique, "-n", runner_ns, "--insecure-skip-verify"]
    proc = subprocess.Popen(
        [*argv, "--prune", "--wait", "--timeout", "5m", f"--kubeconfig={full_cluster.kubeconfig}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while get(full_cluster, "job", "migrate", ns) is None:
            assert proc.poll() is None, f"the pass ended (exit {proc.returncode}) before its hook ran"
            assert time.monotonic() < deadline, "the hook was not created in 60s"
            time.sleep(0.2)
    finally:
        proc.kill()
        proc.wait()
    # killed while the hook ran: the parent already names it and every new object, and
    # nothing after the hook was written
    inventory = store.read(Kube.from_kubeconfig(full_cluster.kubeconfig), unique, runner_ns)
    recorded = {str(k) for k in inventory.members}
    assert {f"Job.batch/{ns}/migrate", f"ConfigMap/{ns}/added", f"ConfigMap/{ns}/gone"} <= recorded
    assert get(full_cluster, "configmap", "added", ns) is None
    assert get(full_cluster, "configmap", "gone", ns) is not None

    fixed = push_tree(registry, unique, {"a.yaml": dump(*new, job("migrate", ns, annotations=pre))}, tag="v3")
    result = run_pass(full_cluster, fixed, unique, runner_ns, prune=True, wait=True, timeout="90s")
    assert result.error is None, result.error
    assert reasons(result)[f"Job.batch/{ns}/migrate"] == (
        "created: pre-apply hook: replaced the previous run, ran to completion"
    )
    assert get(full_cluster, "configmap", "gone", ns) is None
    assert get(full_cluster, "configmap", "added", ns) is not None
    again = run_pass(full_cluster, fixed, unique, runner_ns, prune=True, wait=True, timeout="90s")
    assert again.error is None and not again.changeset.changed, again.changeset.summary()
