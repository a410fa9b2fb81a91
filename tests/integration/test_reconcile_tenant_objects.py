"""One sync cannot overwrite another's inventory or delete another's objects (issue 30, items 4, 5).

Two tenants' syncs share a runner namespace, each as its own ServiceAccount, and each may write
Secrets there (its inventory), as ``deploy/rbac/tenant`` and Flux's multi-tenancy give them.
What one tenant's signed artifact holds is applied with its own rights, so RBAC does not stop
it writing a Secret named like the other's inventory: lockgate must. Each refusal happens in
the pre-flight, before the first write, so nothing of the refused pass is applied.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lockgate.errors import ExitCode
from runner.inventory import store
from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from runner.plan import applyset
from tests.integration.history_support import sync_file
from tests.integration.reconcile_support import configmap, dump, get, push_tree, run_pass
from tests.integration.tenants_support import role, tenant
from tests.world.kube import Cluster
from tests.world.registry import Registry

#: a tenant's inventory and Events in the shared runner namespace, and listing Secrets there, as
#: deploy/rbac's apply roles allow (the pass lists the Secrets of an artifact's namespaces)
RUNNER_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "create", "patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
]


def _secret(name: str, namespace: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, **({"labels": labels} if labels else {})},
        "stringData": {"inventory.json.gz": "forged"},
    }


def _run(kube: Kube, path: Path, name: str, url: str, runner_ns: str, **spec: Any) -> Result:
    [sync] = config.load(sync_file(path, name, url, runner_ns, **spec)).syncs
    return pipeline.reconcile(sync, kube=kube)


def _refused(result: Result) -> str:
    assert result.error is not None and result.error.exit_code == ExitCode.APPLY, result.error
    return result.error.message


def test_an_artifact_holding_another_syncs_inventory_is_refused_before_anything_is_applied(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns, mine, theirs = f"{unique}-r", f"{unique}-a", f"{unique}-b"
    for ns in (runner_ns, mine, theirs):
        cluster.kubectl("create", "namespace", ns)
    tenant(cluster, runner_ns, mine, "team-a", runner_rules=RUNNER_RULES)
    tenant(cluster, runner_ns, theirs, "team-b", runner_rules=RUNNER_RULES)
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    victim_url = push_tree(
        registry, f"{unique}/victim", {"cm.yaml": dump(configmap("web", mine, {"v": "1"}))}
    )
    assert (
        _run(kube, tmp_path / "v.yaml", "victim", victim_url, runner_ns, serviceAccountName="team-a").error
        is None
    )
    before = get(cluster, "secret", "lockgate-victim", runner_ns)
    assert before is not None

    # team-b's artifact: its own ConfigMap, and a Secret named like team-a's inventory
    forged = _secret("lockgate-victim", runner_ns)
    url = push_tree(
        registry, f"{unique}/attacker", {"all.yaml": dump(configmap("app", theirs, {"v": "1"}), forged)}
    )
    result = _run(kube, tmp_path / "a.yaml", "attacker", url, runner_ns, serviceAccountName="team-b")
    message = _refused(result)
    assert f"Secret/{runner_ns}/lockgate-victim" in message, message
    assert "Sync attacker" in message and "Sync victim" in message, message
    # refused in the pre-flight: nothing of the attacker's pass is in the cluster
    assert get(cluster, "configmap", "app", theirs) is None
    after = get(cluster, "secret", "lockgate-victim", runner_ns)
    assert after is not None and after["data"] == before["data"]
    assert after["metadata"]["labels"] == before["metadata"]["labels"]

    # the victim's next pass is fine and still records its member
    again = pipeline.reconcile(
        config.load(
            sync_file(tmp_path / "v.yaml", "victim", victim_url, runner_ns, serviceAccountName="team-a")
        ).syncs[0],
        kube=kube,
    )
    assert again.error is None, again.error
    members = {str(k) for k in store.read(kube, "victim", runner_ns).members}
    assert members == {f"ConfigMap/{mine}/web"}


def test_an_inventory_in_a_namespace_the_configuration_does_not_know_is_refused_by_its_labels(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    # the victim runs elsewhere (a CronJob's own runner namespace), where team-b may write Secrets
    runner_ns, elsewhere, theirs = f"{unique}-r", f"{unique}-cron", f"{unique}-b"
    for ns in (runner_ns, elsewhere, theirs):
        cluster.kubectl("create", "namespace", ns)
    tenant(cluster, runner_ns, theirs, "team-b", runner_rules=RUNNER_RULES)
    subject = {"kind": "ServiceAccount", "name": "team-b", "namespace": runner_ns}
    cluster.kubectl("apply", "-f", "-", input=dump(*role("team-b", elsewhere, RUNNER_RULES, subject)))
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    victim_url = push_tree(
        registry, f"{unique}/victim", {"cm.yaml": dump(configmap("web", elsewhere, {"v": "1"}))}
    )
    assert _run(kube, tmp_path / "v.yaml", "victim", victim_url, elsewhere).error is None
    before = get(cluster, "secret", "lockgate-victim", elsewhere)
    assert before is not None

    url = push_tree(
        registry, f"{unique}/attacker",
        {"all.yaml": dump(configmap("app", theirs, {"v": "1"}), _secret("lockgate-victim", elsewhere))},
    )  # fmt: skip
    message = _refused(
        _run(kube, tmp_path / "a.yaml", "attacker", url, runner_ns, serviceAccountName="team-b")
    )
    assert f"Secret/{elsewhere}/lockgate-victim" in message and "Sync victim" in message, message
    assert get(cluster, "configmap", "app", theirs) is None
    after = get(cluster, "secret", "lockgate-victim", elsewhere)
    assert after is not None and after["data"] == before["data"]


def test_the_names_lockgate_writes_are_reserved_and_no_object_may_pose_as_a_parent(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns, theirs = f"{unique}-r", f"{unique}-b"
    for ns in (runner_ns, theirs):
        cluster.kubectl("create", "namespace", ns)
    tenant(cluster, runner_ns, theirs, "team-b", runner_rules=RUNNER_RULES)
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    # a sync that has not run yet: its inventory would be found taken, and read as forged
    future = _secret("lockgate-later", runner_ns)
    # an object carrying the id label of a set: kubectl and lockgate would take it for its parent
    posing = configmap(
        "posing",
        theirs,
        {"v": "1"},
        labels={applyset.ID_LABEL: applyset.applyset_id("lockgate-later", runner_ns)},
    )
    for number, obj in enumerate((future, posing)):
        url = push_tree(
            registry,
            f"{unique}/attacker{number}",
            {"all.yaml": dump(configmap("app", theirs, {"v": "1"}), obj)},
        )
        message = _refused(
            _run(kube, tmp_path / f"{number}.yaml", "attacker", url, runner_ns, serviceAccountName="team-b")
        )
        assert "Sync attacker" in message, message
        assert get(cluster, "configmap", "app", theirs) is None
    assert get(cluster, "secret", "lockgate-later", runner_ns) is None
    assert get(cluster, "configmap", "posing", theirs) is None


def _hook(name: str, namespace: str, data: dict[str, str], **annotations: str) -> dict[str, Any]:
    return configmap(name, namespace, data, annotations={"lockgate.dev/hook": "pre-apply", **annotations})


def test_a_hook_deletes_only_its_own_previous_run(cluster: Cluster, registry: Registry, unique: str) -> None:
    runner_ns, app = f"{unique}-r", f"{unique}-app"
    for ns in (runner_ns, app):
        cluster.kubectl("create", "namespace", ns)
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    # a person's ConfigMap, and another sync's object and inventory
    cluster.kubectl("apply", "-f", "-", input=dump(configmap("settings", app, {"db": "precious"})))
    other = push_tree(registry, f"{unique}/other", {"cm.yaml": dump(configmap("theirs", app, {"v": "1"}))})
    assert run_pass(cluster, other, "other", runner_ns).error is None

    web = configmap("web", app, {"v": "1"})
    for number, (hook, owner) in enumerate(
        [
            (_hook("settings", app, {"db": "mine"}), "not lockgate's"),
            (_hook("theirs", app, {"v": "2"}, **{"lockgate.dev/adopt": "enabled"}), "held by Sync other"),
            (
                {
                    **_secret("lockgate-other", runner_ns),
                    "metadata": {
                        "name": "lockgate-other",
                        "namespace": runner_ns,
                        "annotations": {"lockgate.dev/hook": "pre-apply"},
                    },
                },
                "Sync other",
            ),
        ]
    ):
        url = push_tree(registry, f"{unique}/hooked{number}", {"all.yaml": dump(web, hook)})
        message = _refused(run_pass(cluster, url, "hooked", runner_ns))
        key = f"{hook['kind']}/{hook['metadata']['namespace']}/{hook['metadata']['name']}"
        assert key in message and owner in message and "Sync hooked" in message, message
        assert get(cluster, "configmap", "web", app) is None  # refused before anything was applied
    person = get(cluster, "configmap", "settings", app)
    assert person is not None and person["data"] == {"db": "precious"}
    theirs = get(cluster, "configmap", "theirs", app)
    assert theirs is not None and theirs["data"] == {"v": "1"}
    assert store.read(kube, "other", runner_ns).exists
    assert run_pass(cluster, other, "other", runner_ns).error is None

    # its own previous run is replaced as before, for each new revision
    for version in ("1", "2"):
        url = push_tree(
            registry, f"{unique}/own", {"all.yaml": dump(web, _hook("seed", app, {"v": version}))}
        )
        done = run_pass(cluster, url, "hooked", runner_ns)
        assert done.error is None, done.error
        seed = get(cluster, "configmap", "seed", app)
        assert seed is not None and seed["data"] == {"v": version}
    assert (
        "replaced the previous run"
        in {str(e.key): e.reason for e in done.changeset.entries}[f"ConfigMap/{app}/seed"]
    )
