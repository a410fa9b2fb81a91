"""``lockgate import`` and ``lockgate adopt`` against Flux's real controllers: a fleet that Flux
applied is taken over with nothing re-created, nothing rolled and Flux's ownership gone.

Flux is source-controller and kustomize-controller v1.9.5 with the flux CLI v2.9.5
(``tests.world.flux``); the artifacts are signed, and verified by both. Each test has its
own Flux namespace, workload namespaces and runner namespace (``flux_support.Fleet``).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.diff.normalize import normalise
from lockgate.manifests import ObjectKey
from runner.kube.client import Kube
from runner.pipeline import config, secretrefs, source
from runner.pipeline import reconcile as pipeline
from runner.plan import adoption, classify, inventory, placement
from runner.plan.inventory import member_id
from tests.integration.flux_support import Fleet, flux_owned, get_json, kubectl_apply, wait_for
from tests.integration.reconcile_support import dump
from tests.integration.sops_support import age_key, encrypt
from tests.world import binaries
from tests.world.flux import FluxControllers
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


@pytest.fixture
def fleet(
    flux: FluxControllers,
    full_cluster: Cluster,
    registry: Registry,
    unique: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Fleet]:
    # in-process renders (the parity checks) build kustomizations as the runner does
    monkeypatch.setenv("LOCKGATE_KUSTOMIZE", str(binaries.binary("kustomize")))
    yield Fleet(full_cluster, registry, flux, unique[-6:], tmp_path)


def deployment(name: str, *, env: dict[str, str], image: str = "registry.example/web:1.0") -> dict[str, Any]:
    """A Deployment of two Pods (no namespace: the Kustomization's targetNamespace places it)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": name,
                            "image": image,
                            "env": [{"name": k, "value": v} for k, v in env.items()],
                        }
                    ]
                },
            },
        },
    }


def cm(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def kustomization_yaml(*resources: str) -> str:
    return yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                           "resources": list(resources)})  # fmt: skip


# ---- what runs, before and after ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Running:
    """The workloads of some namespaces: Pod UIDs, and each Deployment's ReplicaSets and template hash."""

    pods: dict[str, str]
    replicasets: dict[str, str]

    @classmethod
    def of(cls, cluster: Cluster, *namespaces: str) -> Running:
        pods: dict[str, str] = {}
        sets: dict[str, str] = {}
        for ns in namespaces:
            for pod in json.loads(cluster.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]:
                pods[f"{ns}/{pod['metadata']['name']}"] = pod["metadata"]["uid"]
            for rs in json.loads(cluster.kubectl("get", "replicasets", "-n", ns, "-o", "json").stdout)[
                "items"
            ]:
                labels = rs["metadata"].get("labels") or {}
                sets[f"{ns}/{rs['metadata']['name']}"] = labels.get("pod-template-hash", "")
        return cls(pods, sets)


def inventory_objects(fleet: Fleet, ks: dict[str, Any]) -> dict[ObjectKey, dict[str, Any]]:
    """The live objects of a Flux inventory."""
    found: dict[ObjectKey, dict[str, Any]] = {}
    for key in adoption.inventory_of(ks):
        kind = f"{key.kind}.{key.group}" if key.group else key.kind
        live = get_json(fleet.cluster, kind, key.name, key.namespace or None)
        assert live is not None, f"{key} of Flux's inventory is not in the cluster"
        found[key] = live
    return found


def rendered(fleet: Fleet, config_path: Path, sync: str, digest: str) -> dict[ObjectKey, dict[str, Any]]:
    """What lockgate renders for ``sync`` at ``digest``: pulled, verified, built, decrypted,
    substituted and placed, as a pass applies it."""
    options = next(s for s in config.load(config_path).syncs if s.name == sync)
    options = dataclasses.replace(
        options,
        source=dataclasses.replace(
            options.source, url=adoption.pinned_url(options.source.url, digest), semver=None
        ),
    )
    kube = Kube.from_kubeconfig(fleet.cluster.kubeconfig)
    fetched = source.fetch(options.source, secrets=secretrefs.SecretReader(kube, fleet.runner_ns))
    objects = pipeline.prepare_fetched(fetched.objects, options, kube, fleet.runner_ns)
    placed = placement.place(
        objects, target_namespace=options.target_namespace, cluster_scope=kube.discovery.scope
    )
    return {obj.key: obj.body for obj in placed}


def assert_render_parity(fleet: Fleet, config_path: Path, sync: str, ks: dict[str, Any]) -> None:
    """lockgate's objects are Flux's inventory, and every field lockgate sets is live as Flux applied it."""
    digest = adoption.applied_digest(ks)
    assert digest is not None
    ours = rendered(fleet, config_path, sync, digest)
    theirs = inventory_objects(fleet, ks)
    assert sorted(map(str, ours)) == sorted(map(str, theirs))
    for key, body in ours.items():
        live = normalise(theirs[key])
        wanted = normalise(body)
        assert classify.is_subset(wanted.get("spec"), live.get("spec")), key
        assert classify.is_subset(wanted.get("data"), live.get("data")), key
        labels = (wanted["metadata"].get("labels") or {}).items()
        assert labels <= (live["metadata"].get("labels") or {}).items(), key


# ---- the fleet of three -------------------------------------------------------------------------


def three_apps(fleet: Fleet) -> dict[str, str]:
    """web (patches, images, components), secrets (postBuild and SOPS/age), api (depends on web),
    applied by Flux; returns each app's digest."""
    namespaces = {app: fleet.name(app) for app in ("web", "secrets", "api")}
    for ns in namespaces.values():
        fleet.cluster.kubectl("create", "namespace", ns)
    key = age_key()
    for ns in (fleet.flux_ns, fleet.runner_ns):  # lockgate's copy is what import's report asks for
        fleet.cluster.kubectl(
            "create", "secret", "generic", "age", "-n", ns, "--from-literal=key.agekey=" + key.identity
        )
        fleet.cluster.kubectl("create", "configmap", "vars", "-n", ns, "--from-literal=region=eu-1")
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db"},
        "stringData": {"password": "s3cr3t"},
    }
    encrypted = encrypt(
        fleet.work / "sops", "db.yaml", dump(secret), key, "--encrypted-regex", "^(data|stringData)$"
    )
    digests = {
        "web": fleet.push(
            "web",
            {
                "kustomization.yaml": kustomization_yaml("deploy.yaml", "config.yaml"),
                "deploy.yaml": dump(deployment("web", env={"MODE": "live", "DEBUG": "0"})),
                "config.yaml": dump(cm("web", {"color": "blue"})),
                "components/extra/kustomization.yaml": yaml.safe_dump(
                    {
                        "apiVersion": "kustomize.config.k8s.io/v1alpha1",
                        "kind": "Component",
                        "resources": ["extra.yaml"],
                    }
                ),
                "components/extra/extra.yaml": dump(cm("extra", {"from": "component"})),
            },
        ),
        "secrets": fleet.push(
            "secrets",
            {
                "worker.yaml": dump(
                    deployment("worker", env={"GREETING": "${greeting}", "REGION": "${region}"})
                ),
                "db.yaml": encrypted,
            },
        ),
        "api": fleet.push(
            "api", {"api.yaml": dump(deployment("api", env={"PORT": "8080"}), cm("api", {"k": "v"}))}
        ),
    }
    patch = "- op: add\n  path: /metadata/labels/tier\n  value: frontend\n"
    kubectl_apply(
        fleet.cluster,
        *(fleet.source(app) for app in namespaces),
        fleet.kustomization(
            "web",
            targetNamespace=namespaces["web"],
            patches=[{"patch": patch, "target": {"kind": "Deployment", "name": "web"}}],
            images=[{"name": "registry.example/web", "newTag": "1.1"}],
            components=["components/extra"],
        ),
        fleet.kustomization(
            "secrets",
            targetNamespace=namespaces["secrets"],
            postBuild={
                "substitute": {"greeting": "hello"},
                "substituteFrom": [{"kind": "ConfigMap", "name": "vars"}],
            },
            decryption={"provider": "sops", "secretRef": {"name": "age"}},
        ),
        fleet.kustomization(
            "api", targetNamespace=namespaces["api"], dependsOn=[{"name": fleet.name("web")}]
        ),
    )
    for app, digest in digests.items():
        fleet.wait_applied(app, digest)
    return digests


def test_a_fleet_flux_applied_is_adopted_with_nothing_recreated(fleet: Fleet) -> None:
    three_apps(fleet)
    apps = [fleet.name(a) for a in ("web", "secrets", "api")]
    before = Running.of(fleet.cluster, *apps)
    assert len(before.pods) == 6
    # what Flux rendered: the patch, the image and the component; the substitution and the decryption
    web = get_json(fleet.cluster, "deployment", "web", apps[0])
    assert web is not None and web["metadata"]["labels"]["tier"] == "frontend"
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/web:1.1"
    assert get_json(fleet.cluster, "configmap", "extra", apps[0]) is not None
    worker = get_json(fleet.cluster, "deployment", "worker", apps[1])
    assert worker is not None
    assert {e["name"]: e["value"] for e in worker["spec"]["template"]["spec"]["containers"][0]["env"]} == {
        "GREETING": "hello",
        "REGION": "eu-1",
    }
    db = get_json(fleet.cluster, "secret", "db", apps[1])
    assert db is not None and base64.b64decode(db["data"]["password"]) == b"s3cr3t"

    # import, from the cluster and from the same objects exported to a file: the same bytes
    args = ["--runner-namespace", fleet.runner_ns, "-o", "json"]
    from_cluster = fleet.lockgate(
        "import", "--from-cluster", "-n", fleet.flux_ns, "-O", "lockgate.yaml", *args, check=False
    )
    assert from_cluster.code == 10, from_cluster.err
    exported = fleet.cluster.kubectl(
        "get", "ocirepositories.source.toolkit.fluxcd.io,kustomizations.kustomize.toolkit.fluxcd.io",
        "-n", fleet.flux_ns, "-o", "yaml",
    ).stdout  # fmt: skip
    (fleet.work / "exported.yaml").write_text(exported)
    from_files = fleet.lockgate(
        "import", "--from-files", "exported.yaml", "-O", "files.yaml", *args, check=False
    )
    assert from_files.code == 10, from_files.err
    assert (fleet.work / "files.yaml").read_bytes() == (fleet.work / "lockgate.yaml").read_bytes()
    assert from_files.out == from_cluster.out
    again = fleet.lockgate(
        "import", "--from-cluster", "-n", fleet.flux_ns, "-O", "again.yaml", *args, check=False
    )
    assert (fleet.work / "again.yaml").read_bytes() == (fleet.work / "lockgate.yaml").read_bytes()
    assert again.out == from_cluster.out
    report = from_cluster.json()
    assert sorted(report["syncs"]) == sorted(apps)
    assert report["counts"]["unsupported"] == 0
    syncs = {
        d["metadata"]["name"]: d["spec"]
        for d in yaml.safe_load_all((fleet.work / "lockgate.yaml").read_text())
        if d["kind"] == "Sync"
    }
    assert syncs[apps[2]]["dependsOn"] == [apps[0]]

    # render parity: what lockgate renders is what the real kustomize-controller applied
    config_path = fleet.work / "lockgate.yaml"
    for app in ("web", "secrets", "api"):
        assert_render_parity(fleet, config_path, fleet.name(app), fleet.kustomization_of(app))

    # adopt refuses while Flux still runs the Kustomizations
    refused = fleet.lockgate("adopt", "--config", "lockgate.yaml", check=False)
    assert refused.code == 2 and "is not suspended" in refused.err, refused.err
    for name in apps:
        fleet.flux("suspend", "kustomization", name, "-n", fleet.flux_ns)
    dry = fleet.lockgate("adopt", "--config", "lockgate.yaml", "--dry-run", "-o", "json")
    assert all(a["ok"] and a["dryRun"] for a in dry.json())
    assert all(flux_owned(o) for o in inventory_objects(fleet, fleet.kustomization_of("web")).values())

    adopted = fleet.lockgate("adopt", "--config", "lockgate.yaml", "-o", "json", check=False)
    assert adopted.code == 0, adopted.out + adopted.err
    for done in adopted.json():
        actions = {e["action"] for e in done["result"]["objects"]}
        assert actions <= {"configured", "unchanged"}, done["result"]["objects"]
        assert done["seeded"] == done["fluxInventory"] > 0
    # nothing ran differently: the same Pods, the same ReplicaSets (no roll)
    assert Running.of(fleet.cluster, *apps) == before
    # and Flux owns nothing any more; lockgate's inventory is Flux's
    for app in ("web", "secrets", "api"):
        ks = fleet.kustomization_of(app)
        for key, live in inventory_objects(fleet, ks).items():
            assert flux_owned(live) == [], key
            assert live["metadata"]["labels"]["applyset.kubernetes.io/part-of"].startswith("applyset-"), key
        members = lockgate_members(fleet, fleet.name(app))
        assert members == sorted(member_id(k) for k in adoption.inventory_of(ks))

    # again: nothing left to do; and a plain pass finds nothing to change
    repeat = fleet.lockgate("adopt", "--config", "lockgate.yaml", "-o", "json")
    for done in repeat.json():
        assert done["seeded"] == 0
        assert {e["action"] for e in done["result"]["objects"]} == {"unchanged"}
    passed = fleet.lockgate("reconcile", "--config", "lockgate.yaml", "-o", "json")
    for result in passed.json():
        assert {e["action"] for e in result["objects"]} == {"unchanged"}, result["objects"]
    assert Running.of(fleet.cluster, *apps) == before


def lockgate_members(fleet: Fleet, sync: str) -> list[str]:
    """The member IDs of lockgate's inventory of ``sync``."""
    parent = get_json(fleet.cluster, "secret", f"lockgate-{sync}", fleet.runner_ns)
    assert parent is not None, f"no inventory for {sync}"
    return sorted(member_id(k) for k in inventory.from_secret(parent, sync, fleet.runner_ns).members)


# ---- one app at a time ----------------------------------------------------------------------------


def apply_app(fleet: Fleet, app: str, files: dict[str, str], **spec: Any) -> str:
    """Push ``files`` as ``app`` and have Flux apply it into the namespace ``app-<suffix>``."""
    fleet.cluster.kubectl("create", "namespace", fleet.name(app), check=False)
    digest = fleet.push(app, files)
    kubectl_apply(
        fleet.cluster, fleet.source(app), fleet.kustomization(app, targetNamespace=fleet.name(app), **spec)
    )
    fleet.wait_applied(app, digest)
    return digest


def hand_over(fleet: Fleet, *apps: str) -> Path:
    """The documented sequence: import from the cluster, suspend, adopt; returns the config."""
    imported = fleet.import_from_cluster()
    assert imported.code in (0, 10), imported.err
    for app in apps:
        fleet.flux("suspend", "kustomization", fleet.name(app), "-n", fleet.flux_ns)
    adopted = fleet.lockgate(
        "adopt", *(fleet.name(a) for a in apps), "--config", "lockgate.yaml", check=False
    )
    assert adopted.code == 0, adopted.out + adopted.err
    return fleet.work / "lockgate.yaml"


def configmaps(*names: str) -> str:
    return dump(*(cm(n, {"name": n}) for n in names))


def test_a_field_removed_from_the_artifact_after_adopt_is_removed(fleet: Fleet) -> None:
    """kustomize-controller's fields are lockgate's after adopt: what the artifact drops goes.
    (A plain first pass would leave them co-owned by Flux, and never remove them.)"""
    ns = fleet.name("web")
    files = {
        "app.yaml": dump(
            deployment("web", env={"KEEP": "1", "DROP": "2"}), cm("web", {"keep": "1", "drop": "2"})
        )
    }
    apply_app(fleet, "web", files)
    hand_over(fleet, "web")
    fleet.push("web", {"app.yaml": dump(deployment("web", env={"KEEP": "1"}), cm("web", {"keep": "1"}))})
    passed = fleet.lockgate("reconcile", "--config", "lockgate.yaml", "-o", "json")
    assert {e["action"] for e in passed.json()[0]["objects"]} == {"configured"}
    live = get_json(fleet.cluster, "deployment", "web", ns)
    assert live is not None
    assert live["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "KEEP", "value": "1"}]
    config_map = get_json(fleet.cluster, "configmap", "web", ns)
    assert config_map is not None and config_map["data"] == {"keep": "1"}
    managers = {m["manager"] for m in live["metadata"]["managedFields"] if m["operation"] == "Apply"}
    assert managers == {"lockgate"}


def test_what_flux_applied_and_the_artifact_dropped_is_pruned_by_the_first_pass(fleet: Fleet) -> None:
    """adopt applies the revision Flux applied and seeds lockgate's inventory with Flux's, so the
    first pass at the new revision prunes what left, under the mass-prune guard."""
    ns = fleet.name("cfg")
    flux_digest = apply_app(fleet, "cfg", {"cm.yaml": configmaps("a", "b", "c", "d")})
    fleet.flux("suspend", "kustomization", fleet.name("cfg"), "-n", fleet.flux_ns)
    # the artifact moves on while Flux is suspended: three of the four objects leave it
    fleet.push("cfg", {"cm.yaml": configmaps("a")})
    hand_over(fleet, "cfg")
    status = fleet.lockgate("status", fleet.name("cfg"), "-n", fleet.runner_ns, "-o", "json").json()
    assert status["digest"] == flux_digest  # adopt applied what Flux had applied, not the new tag
    assert lockgate_members(fleet, fleet.name("cfg")) == sorted(f"{ns}_{n}__ConfigMap" for n in "abcd")
    refused = fleet.lockgate("reconcile", "--config", "lockgate.yaml", check=False)
    assert refused.code == 5 and "refusing to prune 3 of 4 objects" in refused.out + refused.err
    assert all(get_json(fleet.cluster, "configmap", n, ns) is not None for n in "abcd")
    fleet.push("cfg", {"cm.yaml": configmaps("a", "b", "c")})  # one of four: within the guard
    pruned = fleet.lockgate("reconcile", "--config", "lockgate.yaml", "-o", "json")
    deleted = [e["name"] for e in pruned.json()[0]["objects"] if e["action"] == "deleted"]
    assert deleted == ["d"]
    assert get_json(fleet.cluster, "configmap", "d", ns) is None
    assert all(get_json(fleet.cluster, "configmap", n, ns) is not None for n in "abc")


def test_retiring_the_flux_objects_deletes_no_workload(fleet: Fleet) -> None:
    """Flux's finalizer runs on both: on a suspended Kustomization it deletes nothing; on a
    resumed one it prunes only objects that still carry Flux's owner labels, and adopt removed them."""
    for app in ("one", "two"):
        apply_app(fleet, app, {"app.yaml": dump(deployment(app, env={"A": "1"}), cm(app, {"k": "v"}))})
    hand_over(fleet, "one", "two")
    before = Running.of(fleet.cluster, fleet.name("one"), fleet.name("two"))
    kinds = "kustomizations.kustomize.toolkit.fluxcd.io"
    # the documented way: delete the suspended Kustomization and its OCIRepository
    fleet.cluster.kubectl(
        "delete", "-n", fleet.flux_ns, f"{kinds}/{fleet.name('one')}", f"ocirepository/{fleet.name('one')}"
    )
    # and the careless one: the source first, then the Kustomization resumed (prune: true) and
    # deleted; its ConfigMap gets Flux's owner labels back, the control that the finalizer prunes
    two = fleet.name("two")
    fleet.cluster.kubectl(
        "label", "configmap", "two", "-n", two,
        f"kustomize.toolkit.fluxcd.io/name={two}", f"kustomize.toolkit.fluxcd.io/namespace={fleet.flux_ns}",
    )  # fmt: skip
    fleet.cluster.kubectl("delete", "-n", fleet.flux_ns, f"ocirepository/{two}")
    fleet.flux("resume", "kustomization", two, "-n", fleet.flux_ns, "--wait=false")
    fleet.cluster.kubectl("delete", "-n", fleet.flux_ns, f"{kinds}/{two}", "--timeout=120s")

    def gone(app: str) -> bool:
        return get_json(fleet.cluster, kinds, fleet.name(app), fleet.flux_ns) is None

    for app in ("one", "two"):
        wait_for(f"Kustomization {fleet.name(app)} gone (its finalizer ran)", functools.partial(gone, app))
        assert get_json(fleet.cluster, "deployment", app, fleet.name(app)) is not None
    assert get_json(fleet.cluster, "configmap", "one", fleet.name("one")) is not None
    assert get_json(fleet.cluster, "configmap", "two", two) is None  # the finalizer did prune
    assert Running.of(fleet.cluster, fleet.name("one"), two) == before


def test_resuming_flux_after_adopt_re_owns_without_recreating(fleet: Fleet) -> None:
    """The way back: flux resume; Flux applies again, labels its objects, re-creates nothing."""
    digest = apply_app(
        fleet, "web", {"app.yaml": dump(deployment("web", env={"A": "1"}), cm("web", {"k": "v"}))}
    )
    hand_over(fleet, "web")
    before = Running.of(fleet.cluster, fleet.name("web"))
    live = get_json(fleet.cluster, "deployment", "web", fleet.name("web"))
    assert live is not None and flux_owned(live) == []
    uid = live["metadata"]["uid"]
    fleet.flux("resume", "kustomization", fleet.name("web"), "-n", fleet.flux_ns)
    fleet.wait_applied("web", digest)
    again = get_json(fleet.cluster, "deployment", "web", fleet.name("web"))
    assert again is not None and again["metadata"]["uid"] == uid
    assert "label kustomize.toolkit.fluxcd.io/name" in flux_owned(again)
    assert "managedFields kustomize-controller (Apply)" in flux_owned(again)
    assert Running.of(fleet.cluster, fleet.name("web")) == before
    # and forward again: suspend, adopt; Flux's normalised fields (strategy: {}) change nothing
    fleet.flux("suspend", "kustomization", fleet.name("web"), "-n", fleet.flux_ns)
    adopted = fleet.lockgate("adopt", "--config", "lockgate.yaml", "-o", "json", check=False)
    assert adopted.code == 0, adopted.out + adopted.err
    assert {e["action"] for e in adopted.json()[0]["result"]["objects"]} <= {"configured", "unchanged"}
    final = get_json(fleet.cluster, "deployment", "web", fleet.name("web"))
    assert final is not None and flux_owned(final) == [] and final["metadata"]["uid"] == uid
    assert Running.of(fleet.cluster, fleet.name("web")) == before


def test_lockgate_delete_with_orphan_leaves_everything(fleet: Fleet) -> None:
    """Flux's deletionPolicy is imported; Orphan leaves every object when the sync is deleted."""
    apply_app(
        fleet, "web", {"app.yaml": dump(deployment("web", env={"A": "1"}), cm("web", {"k": "v"}))},
        deletionPolicy="Orphan",
    )  # fmt: skip
    config_path = hand_over(fleet, "web")
    spec = next(d for d in yaml.safe_load_all(config_path.read_text()) if d["kind"] == "Sync")["spec"]
    assert spec["deletionPolicy"] == "Orphan"
    before = Running.of(fleet.cluster, fleet.name("web"))
    deleted = fleet.lockgate("delete", fleet.name("web"), "-n", fleet.runner_ns, "-o", "json")
    assert {e["action"] for e in deleted.json()["objects"]} <= {"skipped", "unchanged"}
    assert get_json(fleet.cluster, "secret", f"lockgate-{fleet.name('web')}", fleet.runner_ns) is None
    assert get_json(fleet.cluster, "deployment", "web", fleet.name("web")) is not None
    assert get_json(fleet.cluster, "configmap", "web", fleet.name("web")) is not None
    assert Running.of(fleet.cluster, fleet.name("web")) == before


def test_the_parent_kustomization_is_suspended_first_or_adopt_refuses(fleet: Fleet) -> None:
    """A bootstrap's shape: a root Kustomization applies the app's OCIRepository and
    Kustomization. Adopting the app while the root runs is refused, naming the root; the
    documented order (suspend both, adopt, delete the app's Flux objects, then drop them from
    the root's source and resume it) deletes no workload."""
    app, ns = fleet.name("web"), fleet.name("web")
    fleet.cluster.kubectl("create", "namespace", ns)
    web_digest = fleet.push(
        "web", {"app.yaml": dump(deployment("web", env={"A": "1"}), cm("web", {"k": "v"}))}
    )
    marker = cm("root-marker", {"k": "v"})
    marker["metadata"]["namespace"] = fleet.flux_ns
    child = [fleet.source("web"), fleet.kustomization("web", targetNamespace=ns)]
    root_digest = fleet.push("root", {"flux.yaml": dump(marker, *child)})
    kubectl_apply(fleet.cluster, fleet.source("root"), fleet.kustomization("root"))
    fleet.wait_applied("root", root_digest)
    fleet.wait_applied("web", web_digest)
    before = Running.of(fleet.cluster, ns)
    assert fleet.import_from_cluster().code == 10

    # the wrong order: only the app suspended, the root still running
    fleet.flux("suspend", "kustomization", app, "-n", fleet.flux_ns)
    refused = fleet.lockgate("adopt", app, "--config", "lockgate.yaml", check=False)
    assert refused.code == 2, refused.out + refused.err
    root = f"Kustomization {fleet.flux_ns}/{fleet.name('root')}"
    assert f"{root}, which applies Kustomization {fleet.flux_ns}/{app}, is not suspended" in refused.err
    assert f"flux suspend kustomization {fleet.name('root')} -n {fleet.flux_ns}" in refused.err
    assert get_json(fleet.cluster, "secret", f"lockgate-{app}", fleet.runner_ns) is None  # nothing written
    live = get_json(fleet.cluster, "deployment", "web", ns)
    assert live is not None and flux_owned(live) != []

    # the documented order: suspend the root too, adopt; drop the app's Flux objects from the
    # root's source and wait until its OCIRepository has that revision (resumed on the old one,
    # the root would bring them back, unsuspended, and a later prune would run their finalizer);
    # then delete them, and resume the root
    fleet.flux("suspend", "kustomization", fleet.name("root"), "-n", fleet.flux_ns)
    adopted = fleet.lockgate("adopt", app, "--config", "lockgate.yaml", check=False)
    assert adopted.code == 0, adopted.out + adopted.err
    assert f"{root} applies Kustomization {fleet.flux_ns}/{app}" in adopted.out
    new_root = fleet.push("root", {"flux.yaml": dump(marker)})
    fleet.reconcile("ocirepository", "root")

    def fetched() -> bool:
        source = get_json(fleet.cluster, "ocirepository", fleet.name("root"), fleet.flux_ns)
        revision = str(((source or {}).get("status") or {}).get("artifact", {}).get("revision", ""))
        return revision.endswith(new_root)

    wait_for("the root's OCIRepository at the new revision", fetched)
    kinds = "kustomizations.kustomize.toolkit.fluxcd.io"
    fleet.cluster.kubectl(
        "delete", "-n", fleet.flux_ns, f"{kinds}/{app}", f"ocirepository/{app}", "--timeout=120s"
    )
    fleet.flux("resume", "kustomization", fleet.name("root"), "-n", fleet.flux_ns)
    fleet.wait_applied("root", new_root)
    assert get_json(fleet.cluster, kinds, app, fleet.flux_ns) is None
    assert get_json(fleet.cluster, "deployment", "web", ns) is not None
    assert get_json(fleet.cluster, "configmap", "web", ns) is not None
    assert Running.of(fleet.cluster, ns) == before
