"""An object protected from pruning leaves the set explicitly: orphaned, so no ApplySet tool prunes it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from runner.plan import applyset
from tests.integration.reconcile_support import actions, configmap, dump, get, push_tree, run_pass
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def _labels(cluster: Cluster, name: str, ns: str) -> dict[str, str]:
    live = get(cluster, "configmap", name, ns)
    assert live is not None, f"{name} was deleted"
    return dict(live["metadata"].get("labels") or {})


def test_a_protected_object_that_leaves_the_set_is_orphaned(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    # the parent lives with its members: kubectl wants them in the namespace it is given
    runner = unique
    cluster.kubectl("create", "namespace", unique)
    set_id = applyset.applyset_id(f"lockgate-{unique}", runner)
    protected = {
        "keep": {"lockgate.dev/prune": "disabled"},
        "keep-flux": {"kustomize.toolkit.fluxcd.io/prune": "Disabled"},
    }
    v1 = {
        "a.yaml": dump(
            *(configmap(n, unique, {"k": "1"}) for n in ("a", "b", "c", "d", "later-ignored")),
            *(configmap(n, unique, {"k": "1"}, annotations=a) for n, a in protected.items()),
        )
    }
    assert run_pass(cluster, push_tree(registry, unique, v1, "v1"), unique, runner, prune=True).error is None
    assert _labels(cluster, "keep", unique)[applyset.PART_OF_LABEL] == set_id
    v2_url = push_tree(
        registry,
        unique,
        {
            "a.yaml": dump(
                *(configmap(n, unique, {"k": "1"}) for n in ("a", "c", "d")),
                # still in the artifact, but no longer applied: it leaves the set, orphaned
                configmap("later-ignored", unique, {"k": "2"}, annotations={"lockgate.dev/ssa": "Ignore"}),
            )
        },
        "v2",
    )
    # a dry run reports the orphaning and changes nothing
    dry = run_pass(cluster, v2_url, unique, runner, prune=True, dry_run=True)
    assert dry.error is None, dry.error
    assert _labels(cluster, "keep", unique)[applyset.PART_OF_LABEL] == set_id
    result = run_pass(cluster, v2_url, unique, runner, prune=True)
    assert result.error is None, result.error
    assert {k: v for k, v in actions(result).items() if v != "unchanged"} == {
        f"ConfigMap/{unique}/b": "deleted",
        f"ConfigMap/{unique}/keep": "skipped",
        f"ConfigMap/{unique}/keep-flux": "skipped",
        f"ConfigMap/{unique}/later-ignored": "skipped",
    }
    reasons = {e.key.name: e.reason for e in result.changeset.entries if e.action.value == "skipped"}
    assert reasons["keep"] == "not pruned: pruning disabled by annotation; orphaned (set label removed)"
    for name in [*protected, "later-ignored"]:
        assert applyset.PART_OF_LABEL not in _labels(cluster, name, unique)
    assert get(cluster, "configmap", "later-ignored", unique)["data"] == {"k": "1"}  # type: ignore[index]
    # kubectl, handed the set, prunes what is still a member and leaves the orphans alone
    cluster.kubectl(
        "annotate",
        "secret",
        f"lockgate-{unique}",
        "-n",
        runner,
        "--overwrite",
        f"{applyset.TOOLING_ANNOTATION}=kubectl/v1.36.3",
    )
    manifest = tmp_path / "a.yaml"
    manifest.write_text(dump(configmap("a", unique, {"k": "1"})))
    handed = subprocess.run(
        [
            str(binaries.binary("kubectl")),
            f"--kubeconfig={cluster.kubeconfig}",
            "apply",
            "--server-side",
            "--force-conflicts",
            "--prune",
            f"--applyset=secret/lockgate-{unique}",
            "-n",
            runner,
            "-f",
            str(manifest),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "KUBECTL_APPLYSET": "true"},
    )
    assert handed.returncode == 0, handed.stderr
    assert "configmap/c pruned" in handed.stdout and "configmap/d pruned" in handed.stdout
    for name in [*protected, "later-ignored"]:
        assert _labels(cluster, name, unique) is not None
