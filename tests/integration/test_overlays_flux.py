"""The pinned ``flux build kustomization`` is the oracle for a Sync's overlay: the same artifact and
the same spec fields (patches, images, namePrefix, nameSuffix, components, commonMetadata,
postBuild.substitute, targetNamespace), written once as a Flux Kustomization and once as a
lockgate Sync, give the same objects.

lockgate's side is the runner's own steps in the runner's order: the Sync document read by
``config.parse``, ``source.build`` on a copy of the tree (the kustomization edited or generated,
the real kustomize), postBuild substitution, commonMetadata, then ``placement.place`` for
targetNamespace. Flux's own labels (``kustomize.toolkit.fluxcd.io/name``, ``/namespace``) are
the only thing taken out of its output.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate import manifests
from lockgate.errors import RenderError
from runner.pipeline import config, source, substitute
from runner.plan import overlay, placement
from tests.integration.reconcile_support import configmap, deployment, dump, namespace
from tests.world.binaries import binary

pytestmark = pytest.mark.world

FLUX_LABELS = ("kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace")
#: offline: the Kustomization from the file, nothing read from a cluster, nothing written to disk
FLUX_FLAGS = ("--kustomization-file", "../ks.yaml", "--dry-run", "--in-memory-build")
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


class FluxFailed(Exception):
    pass


def _flux(tree: Path, path: str, spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    work = tree.parent / "flux-copy"
    shutil.copytree(tree, work)
    document = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "app", "namespace": "flux-system"},
        "spec": {"interval": "5m", "path": f"./{path}", "sourceRef": {"kind": "OCIRepository", "name": "app"}}
        | {"prune": True, **spec},
    }
    (work.parent / "ks.yaml").write_text(yaml.safe_dump(document))
    done = subprocess.run(
        [str(binary("flux")), "build", "kustomization", "app", "--path", f"./{path}", *FLUX_FLAGS],
        cwd=work,  # flux build reads nothing outside the working directory (its root)
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise FluxFailed(done.stderr)
    found = {}
    for obj in manifests.load_text(done.stdout, "flux build"):
        labels = obj.body["metadata"].get("labels") or {}
        for key in FLUX_LABELS:
            labels.pop(key, None)
        if not labels:
            obj.body["metadata"].pop("labels", None)
        found[str(obj.key)] = obj.body
    return found


def _lockgate(
    tree: Path, path: str, spec: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, dict[str, Any]], tuple[str, ...]]:
    monkeypatch.setenv("LOCKGATE_KUSTOMIZE", str(binary("kustomize")))
    sync = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": "app"},
        "spec": {"url": "oci://127.0.0.1:5000/app", "interval": "5m", "verify": {"insecureSkip": True}}
        | {"path": path, **spec},
    }
    (options,) = config.parse(yaml.safe_dump(sync).encode(), "syncs.yaml").syncs
    work = tree.parent / "lockgate-copy"  # the runner builds a temporary copy of the artifact
    shutil.copytree(tree, work)
    built = source.build(work, path, overlay=options.source.overlay)
    objects = built.objects
    assert options.post_build is not None
    variables = substitute.Variables(dict(options.post_build.substitute))
    objects = substitute.apply(objects, variables)
    if options.common_metadata is not None:
        objects = overlay.with_common_metadata(objects, options.common_metadata)
    placed = placement.place(
        objects,
        target_namespace=options.target_namespace,
        cluster_scope=lambda _version, kind: kind not in CLUSTER_SCOPED,
    )
    return {str(obj.key): obj.body for obj in placed}, built.notes


KUSTOMIZED = {
    "app/kustomization.yaml": (
        "resources: [web.yaml, settings.yaml]\n"
        "namePrefix: file-\n"
        "images:\n- {name: registry.example/app, newName: mirror.example/app, newTag: '1.0'}\n"
        "patches:\n- patch: |\n    - {op: add, path: /metadata/labels, value: {from: file}}\n"
        "  target: {kind: ConfigMap}\n"
    ),
    "app/web.yaml": dump(deployment("web", "apps")),
    "app/settings.yaml": dump(configmap("settings", "apps", {"mode": "${mode}"}, labels={"team": "file"})),
    "components/extra/kustomization.yaml": (
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [extra.yaml]\n"
        "patches:\n- patch: |\n    - {op: add, path: /data/component, value: 'yes'}\n"
        "  target: {kind: ConfigMap, name: settings}\n"
    ),
    "components/extra/extra.yaml": dump(configmap("extra", "apps", {"a": "b"})),
}

OVERLAY: dict[str, Any] = {
    "targetNamespace": "staging",
    "namePrefix": "stg-",
    "nameSuffix": "-eu",
    "components": ["../components/extra"],
    "images": [
        {"name": "registry.example/app", "newTag": "2.0"},
        {"name": "registry.example/sidecar", "digest": "sha256:" + "ab" * 32},
    ],
    "patches": [
        {
            "patch": (
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: any}\n"
                "spec:\n  replicas: ${replicas}\n"
            ),
            "target": {"kind": "Deployment", "name": "web"},
        },
        {
            "patch": (
                "- op: add\n  path: /spec/template/spec/containers/0/env\n"
                "  value: [{name: MODE, value: stg}]\n"
            ),
            "target": {"group": "apps", "version": "v1", "kind": "Deployment"},
        },
        {
            "patch": "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\ndata: {}\n",
            "target": {"kind": "Secret"},
        },
    ],
    "commonMetadata": {"labels": {"team": "platform"}, "annotations": {"owner": "${owner}"}},
    "postBuild": {"substitute": {"replicas": "3", "mode": "fast", "owner": "nobody"}},
}


def test_a_kustomized_artifact_with_every_overlay_field_builds_as_flux_builds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "artifact"
    _write(tree, KUSTOMIZED)
    ours, notes = _lockgate(tree, "app", OVERLAY, monkeypatch)
    theirs = _flux(tree, "app", OVERLAY)
    assert ours == theirs
    web = ours["Deployment.apps/staging/stg-web-eu"]  # the Sync's namePrefix replaces the file's
    assert web["spec"]["replicas"] == 3
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "mirror.example/app:2.0"
    assert ours["ConfigMap/staging/stg-settings-eu"]["data"] == {"mode": "fast", "component": "yes"}
    assert web["metadata"]["annotations"] == {"owner": "${owner}"}
    assert notes == (
        "spec.patches[2]: its target {kind: Secret} selects no object, so it patched nothing (not an "
        "error, as in Flux and kustomize)",
    )


def test_a_directory_of_plain_manifests_gets_a_generated_kustomization_as_in_flux(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "artifact"
    _write(
        tree,
        {
            "deploy/a.yaml": dump(namespace("apps"), deployment("web", "apps")),
            "deploy/more/b.yml": dump(configmap("b", "apps", {"k": "v"})),
            "deploy/built/kustomization.yaml": "resources: [c.yaml]\nnameSuffix: -built\n",
            "deploy/built/c.yaml": dump(configmap("c", "apps", {"k": "v"})),
            "deploy/notes.txt": "not a manifest\n",
        },
    )
    spec: dict[str, Any] = {
        "namePrefix": "prod-",
        "images": [{"name": "registry.example/app", "newName": "mirror.example/app", "newTag": "9.9"}],
        "patches": [
            {"patch": "- {op: replace, path: /spec/replicas, value: 5}\n", "target": {"kind": "Deployment"}}
        ],
    }
    ours, notes = _lockgate(tree, "deploy", spec, monkeypatch)
    assert ours == _flux(tree, "deploy", spec)
    assert sorted(ours) == [
        "ConfigMap/apps/prod-b",
        "ConfigMap/apps/prod-c-built",
        "Deployment.apps/apps/prod-web",
        "Namespace/apps",  # kustomize prefixes no Namespace
    ]
    assert ours["Deployment.apps/apps/prod-web"]["spec"]["replicas"] == 5
    assert notes == ()
    assert not (tree / "deploy" / "kustomization.yaml").exists()  # only the copy was written


def test_images_merge_by_name_into_the_files_newtag_and_digest_replaced_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    web = deployment("web", "apps")
    web["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "registry.example/side:1"})
    tree = tmp_path / "artifact"
    _write(
        tree,
        {
            "app/kustomization.yaml": yaml.safe_dump(
                {
                    "resources": ["web.yaml"],
                    "images": [
                        {"name": "registry.example/app", "newName": "mirror.example/app", "newTag": "1.1"}
                        | {"digest": "sha256:" + "00" * 32},
                        {"name": "registry.example/side", "newName": "mirror.example/side", "newTag": "7"},
                    ],
                }
            ),
            "app/web.yaml": dump(web),
        },
    )
    spec: dict[str, Any] = {
        "images": [
            {"name": "registry.example/app", "newTag": "2.0"},
            {"name": "registry.example/side", "digest": "sha256:" + "11" * 32},
        ]
    }
    ours, _ = _lockgate(tree, "app", spec, monkeypatch)
    assert ours == _flux(tree, "app", spec)
    containers = ours["Deployment.apps/apps/web"]["spec"]["template"]["spec"]["containers"]
    assert [c["image"] for c in containers] == [
        "mirror.example/app:2.0",  # the file's digest went with its tag
        "mirror.example/side@sha256:" + "11" * 32,
    ]


def test_a_strategic_merge_patch_without_target_whose_object_is_missing_fails_as_in_flux(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "artifact"
    _write(tree, {"app/web.yaml": dump(deployment("web", "apps"))})
    spec = {
        "patches": [
            {"patch": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\nspec: {replicas: 2}\n"}
        ]
    }
    missing = "no resource matches strategic merge patch"
    with pytest.raises(RenderError) as ours:
        _lockgate(tree, "app", spec, monkeypatch)
    assert (
        ours.value.message.startswith("kustomize build app failed (exit 1):")
        and missing in ours.value.message
    )
    with pytest.raises(FluxFailed) as theirs:
        _flux(tree, "app", spec)
    assert missing in str(theirs.value)
