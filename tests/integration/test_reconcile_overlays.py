"""Per-cluster overlays on a Sync, against the real world (issue 23 item 5): one artifact serves
staging and production with their own replicas and image; JSON 6902 patches, namePrefix and
nameSuffix (and prune after a rename), commonMetadata, components of the artifact, a directory of
plain manifests (a kustomization generated, as Flux); postBuild substitution runs after the
overlay and before commonMetadata; a patch whose target selects nothing is not an error (as in
Flux) but a note, printed by reconcile and logged by serve; serve applies a changed overlay at the
same digest; a component that leaves the artifact is refused with nothing applied.

Each pass is the library the CLI calls, with the Sync document read by ``config.load``; kustomize
is the pinned binary (``LOCKGATE_KUSTOMIZE``). ``test_overlays_flux.py`` checks the same fields
against ``flux build``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from runner.pipeline.documents import API_VERSION
from runner.pipeline.result import Result
from tests.integration.reconcile_support import actions, cli, configmap, deployment, dump, get, push_tree
from tests.integration.serve_support import start_serve, sync_doc, write_config
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

IMAGE = "registry.example/app"
DIGEST = "sha256:" + "3c" * 32


@pytest.fixture(autouse=True)
def _kustomize(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCKGATE_KUSTOMIZE", str(binaries.binary("kustomize")))


def _sync(file: Path, name: str, url: str, runner: str, spec: dict[str, Any]) -> Path:
    """A config file of one unsigned Sync; ``spec`` is written as given (``path`` is the Sync's)."""
    document = {"url": url, "interval": "5m", "namespace": runner, "verify": {"insecureSkip": True}, **spec}
    file.write_text(
        yaml.safe_dump(
            {"apiVersion": API_VERSION, "kind": "Sync", "metadata": {"name": name}, "spec": document}
        )
    )
    return file


def _pass(cluster: Cluster, tmp_path: Path, name: str, url: str, runner: str, **spec: Any) -> Result:
    (options,) = config.load(_sync(tmp_path / f"{name}.yaml", name, url, runner, spec)).syncs
    return pipeline.reconcile(options, kube=Kube.from_kubeconfig(cluster.kubeconfig))


def _namespaces(cluster: Cluster, *names: str) -> None:
    for name in names:
        cluster.kubectl("create", "namespace", name)


def _app(namespace: str = "apps") -> dict[str, str]:
    """An artifact whose app/ holds a kustomization of a Deployment and a ConfigMap."""
    return {
        "app/kustomization.yaml": "resources: [web.yaml, settings.yaml]\n",
        "app/web.yaml": dump(deployment("web", namespace)),
        "app/settings.yaml": dump(
            configmap("settings", namespace, {"mode": "plain"}, labels={"team": "app"})
        ),
    }


def _replicas(count: int | str) -> dict[str, Any]:
    """A strategic merge patch of the Deployment's replicas, with a target (Flux's usual form)."""
    return {
        "patch": f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: any\n"
        f"spec:\n  replicas: {count}\n",
        "target": {"kind": "Deployment", "name": "web"},
    }


def _image(live: dict[str, Any] | None) -> str:
    assert live is not None
    return str(live["spec"]["template"]["spec"]["containers"][0]["image"])


def test_staging_and_production_syncs_of_one_artifact_get_their_own_replicas_and_image(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner, staging, production = f"{unique}-r", f"{unique}-stg", f"{unique}-prod"
    _namespaces(cluster, staging, production)
    url = push_tree(registry, unique, _app())
    common: dict[str, Any] = {"path": "app", "prune": True}
    stg = {
        "targetNamespace": staging,
        "patches": [_replicas(2)],
        "images": [{"name": IMAGE, "newTag": "1.1-rc"}],
    }
    prod = {
        "targetNamespace": production,
        "patches": [_replicas(5)],
        "images": [{"name": IMAGE, "digest": DIGEST}],
    }
    for name, spec in ((f"{unique}-s", stg), (f"{unique}-p", prod)):
        result = _pass(cluster, tmp_path, name, url, runner, **common, **spec)
        assert result.error is None, result.error.message
    in_staging, in_production = (
        get(cluster, "deployment", "web", staging),
        get(cluster, "deployment", "web", production),
    )
    assert in_staging is not None and in_staging["spec"]["replicas"] == 2
    assert _image(in_staging) == f"{IMAGE}:1.1-rc"
    assert in_production is not None and in_production["spec"]["replicas"] == 5
    assert _image(in_production) == f"{IMAGE}@{DIGEST}"
    # the overlay is as stable as the artifact: a second pass finds nothing to change
    again = _pass(cluster, tmp_path, f"{unique}-p", url, runner, **common, **prod)
    assert again.error is None and set(actions(again).values()) == {"unchanged"}, actions(again)


def test_a_json_6902_patch_applies_to_what_its_target_selects(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    _namespaces(cluster, unique)
    url = push_tree(registry, unique, _app(unique))
    operations = (
        "- op: add\n  path: /spec/template/spec/containers/0/env\n  value:\n  - {name: MODE, value: fast}\n"
        "- op: replace\n  path: /spec/replicas\n  value: 4\n"
    )
    patch = {"patch": operations, "target": {"group": "apps", "version": "v1", "kind": "Deployment"}}
    result = _pass(cluster, tmp_path, unique, url, f"{unique}-r", path="app", patches=[patch])
    assert result.error is None, result.error.message
    live = get(cluster, "deployment", "web", unique)
    assert live is not None and live["spec"]["replicas"] == 4
    assert live["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "MODE", "value": "fast"}]


def test_name_prefix_and_suffix_rename_every_object_and_prune_removes_the_old_names(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    _namespaces(cluster, unique)
    runner = f"{unique}-r"
    url = push_tree(registry, unique, _app(unique))
    first = _pass(cluster, tmp_path, unique, url, runner, path="app", prune=True)
    assert first.error is None, first.error.message
    renaming: dict[str, Any] = {"path": "app", "prune": True, "namePrefix": "eu-", "nameSuffix": "-1"}
    # every old name would go: the mass-prune guard stops the pass before anything is written
    guarded = _pass(cluster, tmp_path, unique, url, runner, **renaming)
    assert guarded.error is not None and "refusing to prune every object" in guarded.error.message
    assert get(cluster, "deployment", "web", unique) is not None
    assert get(cluster, "deployment", "eu-web-1", unique) is None
    renamed = _pass(cluster, tmp_path, unique, url, runner, **renaming, allowMassPrune=True)
    assert renamed.error is None, renamed.error.message
    assert actions(renamed) == {
        f"Deployment.apps/{unique}/eu-web-1": "created",
        f"ConfigMap/{unique}/eu-settings-1": "created",
        f"Deployment.apps/{unique}/web": "deleted",
        f"ConfigMap/{unique}/settings": "deleted",
    }
    assert get(cluster, "deployment", "web", unique) is None
    assert get(cluster, "configmap", "settings", unique) is None
    assert get(cluster, "configmap", "eu-settings-1", unique) is not None
    again = _pass(cluster, tmp_path, unique, url, runner, **renaming)
    assert again.error is None and set(actions(again).values()) == {"unchanged"}, actions(again)


def test_common_metadata_overwrites_labels_and_annotations_of_every_object(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    _namespaces(cluster, unique)
    url = push_tree(registry, unique, _app(unique))
    common = {"labels": {"team": "platform", "env": "eu"}, "annotations": {"owner": "ops@example.com"}}
    result = _pass(cluster, tmp_path, unique, url, f"{unique}-r", path="app", commonMetadata=common)
    assert result.error is None, result.error.message
    settings, web = get(cluster, "configmap", "settings", unique), get(cluster, "deployment", "web", unique)
    for live in (settings, web):
        assert live is not None
        labels = live["metadata"]["labels"]
        assert (labels["team"], labels["env"]) == ("platform", "eu")  # the file's team: app overwritten
        assert live["metadata"]["annotations"]["owner"] == "ops@example.com"
    assert web is not None  # metadata only, as Flux: not the selector or the Pod template
    assert web["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    assert web["spec"]["template"]["metadata"]["labels"] == {"app": "web"}


def test_a_patch_is_substituted_after_the_build_and_common_metadata_is_not(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    _namespaces(cluster, unique)
    url = push_tree(registry, unique, _app(unique))
    result = _pass(
        cluster,
        tmp_path,
        unique,
        url,
        f"{unique}-r",
        path="app",
        patches=[_replicas("${replicas}")],
        commonMetadata={"annotations": {"replicas": "${replicas}"}},
        postBuild={"substitute": {"replicas": "3"}},
    )
    assert result.error is None, result.error.message
    live = get(cluster, "deployment", "web", unique)
    assert live is not None
    assert live["spec"]["replicas"] == 3  # substituted, and a number again, as in Flux
    assert live["metadata"]["annotations"]["replicas"] == "${replicas}"  # set after substitution


def test_components_of_the_artifact_are_added(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    _namespaces(cluster, unique)
    files = {
        **_app(unique),
        "components/cache/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [cache.yaml]\n"
            "patches:\n- patch: |\n    - {op: add, path: /data/cache, value: 'on'}\n"
            "  target: {kind: ConfigMap, name: settings}\n"
        ),
        "components/cache/cache.yaml": dump(configmap("cache", unique, {"size": "1Gi"})),
    }
    url = push_tree(registry, unique, files)
    result = _pass(
        cluster,
        tmp_path,
        unique,
        url,
        f"{unique}-r",
        path="app",
        components=["../components/cache", "../components/absent"],
        ignoreMissingComponents=True,
    )
    assert result.error is None, result.error.message
    cache, settings = (
        get(cluster, "configmap", "cache", unique),
        get(cluster, "configmap", "settings", unique),
    )
    assert cache is not None and cache["data"] == {"size": "1Gi"}
    assert settings is not None and settings["data"] == {"mode": "plain", "cache": "on"}


def test_a_directory_of_plain_manifests_gets_a_generated_kustomization(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    _namespaces(cluster, unique)
    files = {
        "web.yaml": dump(deployment("web", unique)),
        "config/settings.yaml": dump(configmap("settings", unique, {"mode": "plain"})),
    }
    url = push_tree(registry, unique, files)
    result = _pass(
        cluster,
        tmp_path,
        unique,
        url,
        f"{unique}-r",
        patches=[_replicas(6)],
        images=[{"name": IMAGE, "newTag": "2"}],
    )
    assert result.error is None, result.error.message
    assert set(actions(result)) == {f"Deployment.apps/{unique}/web", f"ConfigMap/{unique}/settings"}
    live = get(cluster, "deployment", "web", unique)
    assert live is not None and live["spec"]["replicas"] == 6 and _image(live) == f"{IMAGE}:2"


def test_a_patch_whose_target_selects_nothing_patches_nothing_as_in_flux_and_says_so(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    _namespaces(cluster, unique)
    url = push_tree(registry, unique, _app(unique))
    nothing = {**_replicas(9), "target": {"kind": "Deployment", "name": "api"}}
    spec = {"path": "app", "patches": [nothing]}
    run = cli(cluster, "--config", str(_sync(tmp_path / "syncs.yaml", unique, url, f"{unique}-r", spec)))
    assert run.code == 0, run.err
    assert (
        "note: spec.patches[0]: its target {kind: Deployment, name: api} selects no object, so it patched "
        "nothing (not an error, as in Flux and kustomize)"
    ) in run.out
    live = get(cluster, "deployment", "web", unique)
    assert live is not None and live["spec"]["replicas"] == 1  # as the artifact has it
    assert not any("overlay-patch" in key for key in live["metadata"].get("annotations") or {})


def test_a_component_that_leaves_the_artifact_is_refused_and_nothing_is_applied(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    _namespaces(cluster, unique)
    url = push_tree(registry, unique, _app(unique))
    result = _pass(cluster, tmp_path, unique, url, f"{unique}-r", path="app", components=["../../etc"])
    assert result.error is not None
    assert result.error.exit_code == 8
    assert result.error.message == (
        "spec.components[0]: ../../etc leaves the artifact; components must be directories inside it"
    )
    assert get(cluster, "deployment", "web", unique) is None
    assert get(cluster, "secret", f"lockgate-{unique}", f"{unique}-r") is not None  # the failure is recorded


def test_serve_applies_a_changed_overlay_at_the_same_digest_and_logs_the_note(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    _namespaces(cluster, unique)
    runner = f"{unique}-r"
    url = push_tree(registry, unique, _app(unique))
    nothing = {**_replicas(9), "target": {"kind": "Deployment", "name": "api"}}
    served = start_serve(cluster, tmp_path, [sync_doc("web", url, runner, path="app", patches=[nothing])])
    try:
        finished = served.wait_event(lambda e: e.get("msg") == "pass finished", what="the first pass")
        assert finished["outcome"] == "applied", served.tail()
        assert (
            "spec.patches[0]: its target {kind: Deployment, name: api} selects no object" in finished["notes"]
        )
        # the cluster's overlay changes, the artifact does not: a changed sync gets a full pass
        docs = [d for d in yaml.safe_load_all(served.config.read_text()) if d]
        docs[-1]["spec"]["patches"] = [_replicas(4)]
        write_config(served.config, docs)
        served.wait_event(lambda e: e.get("msg") == "configuration reloaded", what="the reload")
        deadline = time.monotonic() + 60
        while (get(cluster, "deployment", "web", unique) or {}).get("spec", {}).get("replicas") != 4:
            assert time.monotonic() < deadline, served.tail()
            time.sleep(0.2)
    finally:
        assert served.stop() == 0, served.tail()
