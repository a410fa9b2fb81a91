"""Per-object apply modes (``ssa: Merge | IfNotPresent | Ignore``), ours and Flux's annotations alike."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.reconcile_support import (
    actions,
    cli,
    configmap,
    dump,
    get,
    namespace,
    push_tree,
    run_pass,
)
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

PREFIXES = ["lockgate.dev", "kustomize.toolkit.fluxcd.io"]


def _cm(name: str, ns: str, data: dict[str, str], prefix: str, mode: str | None) -> dict[str, Any]:
    annotations = {f"{prefix}/ssa": mode} if mode else {}
    return configmap(name, ns, data, annotations=annotations)


@pytest.mark.parametrize("prefix", PREFIXES)
def test_merge_keeps_fields_other_managers_own(
    cluster: Cluster, registry: Registry, unique: str, prefix: str
) -> None:
    runner = f"{unique}-r"
    files = {
        "a.yaml": dump(
            namespace(unique),
            _cm("override", unique, {"k": "1"}, prefix, None),
            _cm("merge", unique, {"k": "1"}, prefix, "Merge"),
        )
    }
    url = push_tree(registry, unique, files)
    assert run_pass(cluster, url, unique, runner).error is None
    for name in ("override", "merge"):
        cluster.kubectl(
            "patch", "configmap", name, "-n", unique, "--type=merge", "-p", '{"data":{"extra":"x"}}'
        )
    result = run_pass(cluster, url, unique, runner)
    assert result.error is None, result.error
    assert actions(result)[f"ConfigMap/{unique}/override"] == "configured"  # kubectl's field taken over
    assert actions(result)[f"ConfigMap/{unique}/merge"] == "unchanged"
    assert get(cluster, "configmap", "override", unique)["data"] == {"k": "1"}  # type: ignore[index]
    assert get(cluster, "configmap", "merge", unique)["data"] == {"k": "1", "extra": "x"}  # type: ignore[index]
    # a field we own is still corrected under Merge
    cluster.kubectl(
        "patch", "configmap", "merge", "-n", unique, "--type=merge", "-p", '{"data":{"k":"edited"}}'
    )
    fixed = run_pass(cluster, url, unique, runner)
    assert actions(fixed)[f"ConfigMap/{unique}/merge"] == "configured"
    assert get(cluster, "configmap", "merge", unique)["data"] == {"k": "1", "extra": "x"}  # type: ignore[index]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_if_not_present_creates_once_and_never_updates(
    cluster: Cluster, registry: Registry, unique: str, prefix: str
) -> None:
    runner = f"{unique}-r"
    v1 = {"a.yaml": dump(namespace(unique), _cm("seed", unique, {"k": "1"}, prefix, "IfNotPresent"))}
    first = run_pass(cluster, push_tree(registry, unique, v1, "v1"), unique, runner)
    assert first.error is None, first.error
    assert actions(first)[f"ConfigMap/{unique}/seed"] == "created"
    cluster.kubectl("patch", "configmap", "seed", "-n", unique, "--type=merge", "-p", '{"data":{"k":"mine"}}')
    v2 = {"a.yaml": dump(namespace(unique), _cm("seed", unique, {"k": "2"}, prefix, "IfNotPresent"))}
    second = run_pass(cluster, push_tree(registry, unique, v2, "v2"), unique, runner)
    assert second.error is None, second.error
    entry = next(e for e in second.changeset.entries if e.key.name == "seed")
    assert (entry.action.value, entry.reason) == ("skipped", "exists; ssa: IfNotPresent")
    assert get(cluster, "configmap", "seed", unique)["data"] == {"k": "mine"}  # type: ignore[index]
    # deleted by someone: created again
    cluster.kubectl("delete", "configmap", "seed", "-n", unique)
    third = run_pass(cluster, push_tree(registry, unique, v2, "v2"), unique, runner)
    assert actions(third)[f"ConfigMap/{unique}/seed"] == "created"
    assert get(cluster, "configmap", "seed", unique)["data"] == {"k": "2"}  # type: ignore[index]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_ignore_never_applies_and_never_prunes(
    cluster: Cluster, registry: Registry, unique: str, prefix: str
) -> None:
    runner = f"{unique}-r"
    cluster.kubectl("create", "namespace", unique)
    cluster.kubectl("create", "configmap", "theirs", "-n", unique, "--from-literal=k=theirs")
    files = {
        "a.yaml": dump(
            configmap("ours", unique, {"k": "1"}),
            _cm("theirs", unique, {"k": "desired"}, prefix, "Ignore"),
            _cm("absent", unique, {"k": "1"}, prefix, "ignore"),  # values match case-insensitively
        )
    }
    result = run_pass(cluster, push_tree(registry, unique, files), unique, runner, prune=True)
    assert result.error is None, result.error
    assert actions(result) == {
        f"ConfigMap/{unique}/ours": "created",
        f"ConfigMap/{unique}/theirs": "skipped",
        f"ConfigMap/{unique}/absent": "skipped",
    }
    assert get(cluster, "configmap", "theirs", unique)["data"] == {"k": "theirs"}  # type: ignore[index]
    assert get(cluster, "configmap", "absent", unique) is None
    # ignored objects are not members: a later artifact without them prunes nothing of theirs
    only = {"a.yaml": dump(configmap("ours", unique, {"k": "1"}))}
    after = run_pass(cluster, push_tree(registry, unique, only, "v2"), unique, runner, prune=True)
    assert actions(after) == {f"ConfigMap/{unique}/ours": "unchanged"}
    assert get(cluster, "configmap", "theirs", unique) is not None


def test_an_unknown_mode_is_a_render_error_naming_the_object(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    files = {"a.yaml": dump(_cm("odd", unique, {"k": "1"}, "lockgate.dev", "Sometimes"))}
    run = cli(
        cluster, push_tree(registry, unique, files), "--name", unique, "-n", unique, "--insecure-skip-verify"
    )
    assert run.code == 8, run.err
    assert f"ConfigMap/{unique}/odd (a.yaml:1): unknown ssa annotation 'sometimes'" in run.err
    assert get(cluster, "configmap", "odd", unique) is None  # nothing of the artifact is applied
    # only the runner's record of the failure, for lockgate status: a parent without members
    parent = get(cluster, "secret", f"lockgate-{unique}", unique)
    assert parent is not None and parent["metadata"]["annotations"]["lockgate.dev/members"] == "0"
