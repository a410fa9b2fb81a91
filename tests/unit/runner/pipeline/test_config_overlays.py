"""A Sync's overlay fields are read with Flux's names and shapes; what kustomize would refuse later
is refused when the file is loaded, naming the file, line, Sync and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.errors import UsageError
from runner.pipeline import config
from runner.plan.overlay import CommonMetadata, Image, Overlay, Patch, Selector

HEAD = (
    "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
    "spec:\n  url: oci://127.0.0.1:5000/web\n  interval: 5m\n  verify: {insecureSkip: true}\n"
)


def _load(tmp_path: Path, spec: str) -> config.Config:
    path = tmp_path / "syncs.yaml"
    path.write_text(HEAD + spec)
    return config.load(path)


def test_the_overlay_fields_become_the_syncs_overlay_and_common_metadata(tmp_path: Path) -> None:
    (sync,) = _load(
        tmp_path,
        "  namePrefix: stg-\n  nameSuffix: -eu\n"
        "  components: [../components/tls]\n  ignoreMissingComponents: true\n"
        "  images:\n  - {name: web, newTag: '2.0'}\n  - {name: db, newName: mirror/db, digest: 'sha256:ab'}\n"
        "  patches:\n"
        "  - patch: |\n      - {op: replace, path: /spec/replicas, value: 3}\n"
        "    target: {group: apps, version: v1, kind: Deployment, name: web, namespace: apps,\n"
        "             labelSelector: tier=web, annotationSelector: a=b}\n"
        "  - patch: |\n      apiVersion: v1\n      kind: ConfigMap\n      metadata: {name: settings}\n"
        "      data:\n        mode: ${mode}\n"
        "  commonMetadata:\n    labels: {team: platform}\n    annotations: {owner: ops}\n",
    ).syncs
    assert sync.source.overlay == Overlay(
        patches=(
            Patch(
                "- {op: replace, path: /spec/replicas, value: 3}\n",
                Selector("apps", "v1", "Deployment", "web", "apps", "tier=web", "a=b"),
            ),
            Patch("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata:\n  mode: ${mode}\n"),
        ),
        images=(Image("web", new_tag="2.0"), Image("db", new_name="mirror/db", digest="sha256:ab")),
        name_prefix="stg-",
        name_suffix="-eu",
        components=("../components/tls",),
        ignore_missing_components=True,
    )
    assert sync.common_metadata == CommonMetadata({"team": "platform"}, {"owner": "ops"})


def test_without_overlay_fields_there_is_no_overlay(tmp_path: Path) -> None:
    (sync,) = _load(tmp_path, "").syncs
    assert (sync.source.overlay, sync.common_metadata) == (None, None)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            "  patches:\n  - patch: '[{op: replace, path: /spec/replicas, value: 2}]'\n",
            ":9: Sync/web: spec.patches[0]: a JSON 6902 patch (a list of operations) needs a target",
        ),
        (
            "  patches:\n  - {patch: '[{op: replace}]', target: {kind: Deployment}}\n",
            ":9: Sync/web: spec.patches[0]: every JSON 6902 operation needs op and path",
        ),
        (
            "  patches:\n  - patch: 'spec: {replicas: 2}'\n",
            ":9: Sync/web: spec.patches[0]: a strategic merge patch without target must name the object",
        ),
        (
            "  patches:\n  - {patch: just words, target: {kind: Deployment}}\n",
            ":9: Sync/web: spec.patches[0]: expected a strategic merge patch (a YAML object) or a JSON 6902",
        ),
        (
            "  patches:\n  - {patch: 'a: [', target: {kind: Deployment}}\n",
            ":9: Sync/web: spec.patches[0]: not YAML: spec.patches[0].patch",
        ),
        (
            "  patches:\n  - {target: {kind: Deployment}}\n",
            ":9: Sync/web: spec.patches[0].patch: required field is missing",
        ),
        (
            "  components: [https://github.com/org/repo//tls]\n",
            ":8: Sync/web: spec.components[0]: https://github.com/org/repo//tls is a remote reference",
        ),
        ("  components: [/srv/tls]\n", ":8: Sync/web: spec.components[0]: /srv/tls is an absolute path"),
        ("  images: [{newTag: '2'}]\n", ":8: Sync/web: spec.images[0].name: required field is missing"),
        (
            "  commonMetadata: {labels: {a: 1}}\n",
            ":8: Sync/web: spec.commonMetadata.labels.a: expected a string",
        ),
    ],
)
def test_what_kustomize_would_refuse_is_refused_naming_the_field(
    tmp_path: Path, spec: str, expected: str
) -> None:
    with pytest.raises(UsageError) as caught:
        _load(tmp_path, spec)
    assert f"syncs.yaml{expected}" in caught.value.message
