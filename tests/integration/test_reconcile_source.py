"""The source half of a pass against the real registry: semver resolution and kustomize rendering."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.integration.reconcile_support import cli, configmap, dump, get, namespace, push_tree
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

TAGS = ("1.0.0", "v1.2.0", "1.3.0-rc.1", "2.0.0", "latest", "not-semver")


def _push_versions(registry: Registry, unique: str) -> dict[str, str]:
    """One artifact per tag; the ConfigMap's data names the tag it came from."""
    digests: dict[str, str] = {}
    for tag in TAGS:
        files = {"a.yaml": dump(namespace(unique), configmap("version", unique, {"tag": tag}))}
        digests[tag] = push_tree(registry, unique, files, tag).rsplit("@", 1)[1]
    return digests


def test_the_url_is_the_same_with_or_without_oci_and_the_error_says_both(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    """As every command reads a reference, ``oci://`` may be left out; the error for a missing
    URL says so instead of asking for an ``oci://`` URL (issue 36, Low)."""
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(unique), configmap("c", unique, {}))})
    bare = url.removeprefix("oci://")
    args = ("--name", unique, "-n", f"{unique}-r", "--insecure-skip-verify", "--dry-run", "-o", "json")
    with_scheme, without = cli(cluster, url, *args), cli(cluster, bare, *args)
    assert with_scheme.code == 0 and without.code == 0, without.err
    assert without.json()["url"] == with_scheme.json()["url"]
    assert without.json()["digest"] == with_scheme.json()["digest"] == url.rsplit("@", 1)[1]
    missing = cli(cluster, "--name", unique)
    assert missing.code == 2
    assert "reconcile needs a URL (oci://REGISTRY/REPO:TAG, where oci:// may be left out" in missing.err


@pytest.mark.parametrize(
    ("semver", "expected"),
    [
        (">=1.0.0 <2.0.0", "v1.2.0"),  # the release candidate is not a release
        ("~1.0", "1.0.0"),
        ("*", "2.0.0"),
        (">=1.3.0-0 <2.0.0", "1.3.0-rc.1"),  # a range with a pre-release admits pre-releases
    ],
)
def test_semver_picks_the_highest_matching_tag(
    cluster: Cluster, registry: Registry, unique: str, semver: str, expected: str
) -> None:
    digests = _push_versions(registry, unique)
    run = cli(
        cluster,
        registry.oci(unique),
        "--name",
        unique,
        "-n",
        f"{unique}-r",
        "--semver",
        semver,
        "--insecure-skip-verify",
        "-o",
        "json",
    )
    assert run.code == 0, run.err
    doc = run.json()
    assert doc["revision"] == f"{expected}@{digests[expected]}"
    assert doc["url"] == f"oci://{registry.host}/{unique}@{digests[expected]}"
    assert get(cluster, "configmap", "version", unique)["data"] == {"tag": expected}  # type: ignore[index]


def test_semver_without_a_match_is_a_resolve_error_that_changes_nothing(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    _push_versions(registry, unique)
    args = ("--name", unique, "-n", f"{unique}-r", "--insecure-skip-verify")
    run = cli(cluster, registry.oci(unique), "--semver", "~3.0", *args)
    assert run.code == 7, run.err
    assert "no tag matches the semver range '~3.0' (6 tags listed)" in run.err
    assert get(cluster, "namespace", unique) is None
    bad = cli(cluster, registry.oci(unique), "--semver", "not a range", *args)
    assert bad.code == 2 and "--semver 'not a range'" in bad.err


BASE = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {ns}
resources: [cm.yaml]
configMapGenerator:
- name: generated
  literals: [mode=base]
"""
OVERLAY = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {ns}
namePrefix: prod-
resources: [../../base, ns.yaml]
configMapGenerator:
- name: generated
  behavior: merge
  literals: [mode=prod]
"""


def _kustomize_tree(unique: str) -> dict[str, str]:
    return {
        "base/kustomization.yaml": BASE.format(ns=unique),
        "base/cm.yaml": dump(configmap("plain", "ignored", {"k": "1"})),
        "overlays/prod/kustomization.yaml": OVERLAY.format(ns=unique),
        "overlays/prod/ns.yaml": dump(namespace(unique)),
    }


def test_renders_a_kustomization_in_the_artifact(cluster: Cluster, registry: Registry, unique: str) -> None:
    url = push_tree(registry, unique, _kustomize_tree(unique))
    args = ("--name", unique, "-n", f"{unique}-r", "--insecure-skip-verify", "-o", "json")
    run = cli(cluster, url, "--path", "overlays/prod", *args)
    assert run.code == 0, run.err
    created = {o["object"] for o in run.json()["objects"] if o["action"] == "created"}
    generated = next(name for name in created if "prod-generated-" in name)
    assert created == {f"Namespace/{unique}", f"ConfigMap/{unique}/prod-plain", generated}
    name = generated.rsplit("/", 1)[1]
    assert get(cluster, "configmap", name, unique)["data"] == {"mode": "prod"}  # type: ignore[index]
    # a second pass renders the same bytes: nothing to do
    again = cli(cluster, url, "--path", "overlays/prod", *args)
    assert again.code == 0 and again.json()["counts"]["unchanged"] == 3


def test_a_failing_kustomize_build_is_a_render_error(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    files = {"kustomization.yaml": "resources: [missing.yaml]\n"}
    url = push_tree(registry, unique, files)
    run = cli(cluster, url, "--name", unique, "-n", unique, "--insecure-skip-verify")
    assert run.code == 8, run.err
    assert "kustomize build . failed" in run.err and "missing.yaml" in run.err


@pytest.mark.parametrize("how", ["not on PATH", "LOCKGATE_KUSTOMIZE names no program"])
def test_missing_kustomize_is_a_clear_render_error(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, how: str
) -> None:
    url = push_tree(registry, unique, _kustomize_tree(unique))
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "LOCKGATE_KUSTOMIZE"}
    env["PATH"] = str(empty)
    if how != "not on PATH":
        env["PATH"] = f"{binaries.binary('kustomize').parent}{os.pathsep}{empty}"
        env["LOCKGATE_KUSTOMIZE"] = str(tmp_path / "no-such-kustomize")
    args = ("--path", "overlays/prod", "--name", unique, "-n", f"{unique}-r", "--insecure-skip-verify")
    run = cli(cluster, url, *args, env=env)
    assert run.code == 8, run.err
    if how == "not on PATH":
        assert "building it needs kustomize, which is not on PATH: install kustomize or set" in run.err
    else:
        assert f"LOCKGATE_KUSTOMIZE={tmp_path / 'no-such-kustomize'} is not an executable" in run.err
    assert get(cluster, "namespace", unique) is None  # nothing of the artifact is applied
    # only the runner's record of the failure, for lockgate status: a parent without members
    parent = get(cluster, "secret", f"lockgate-{unique}", f"{unique}-r")
    assert parent is not None and parent["metadata"]["annotations"]["lockgate.dev/members"] == "0"
