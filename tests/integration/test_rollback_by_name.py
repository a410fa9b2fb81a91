"""``lockgate rollback NAME`` as the README writes it: no ``--config``, and ``--to`` with the
short digest ``lockgate status`` shows.

The runner is installed as a user installs it: ``deploy/runner`` built by the pinned
kustomize with an overlay replacing its configuration (the quickstart's overlay), moved into
this test's runner namespace (the cluster is shared) and applied. No Pod needs to run: the
rollback reads the configuration the runner's Deployment mounts (its ConfigMap, hash suffix
and all), as the runner itself would, and takes the sync's Lease like every pass.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from runner.pipeline import installed
from tests.integration.history_support import lockgate
from tests.integration.reconcile_support import configmap, dump, get, namespace, push_tree
from tests.integration.test_deploy import apply, build, relocate, with_config
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def _config(name: str, url: str, runner: str) -> str:
    return yaml.safe_dump_all(
        [
            {"apiVersion": "lockgate.dev/v1alpha1", "kind": "Runner", "spec": {"namespace": runner}},
            {
                "apiVersion": "lockgate.dev/v1alpha1",
                "kind": "Sync",
                "metadata": {"name": name},
                "spec": {"url": url, "interval": "5m", "prune": True, "verify": {"insecureSkip": True}},
            },
        ]
    )


def test_rollback_finds_the_runners_configuration_and_takes_the_short_digest(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    versions = [
        push_tree(
            registry, unique, {"a.yaml": dump(namespace(unique), configmap("c", unique, {"v": str(i)}))}
        )
        for i in range(2)
    ]
    text = _config(unique, versions[0].rsplit("@", 1)[0], runner)
    docs = relocate(build(with_config(tmp_path, "runner", text)), {"lockgate-system": runner}, unique[-6:])
    apply(cluster, docs)
    (mounted,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert re.fullmatch(r"lockgate-config-[a-z0-9]+", mounted["metadata"]["name"]), mounted["metadata"]
    local = tmp_path / "lockgate.yaml"
    local.write_text(text)
    assert lockgate(cluster, "reconcile", "--config", str(local)).code == 0
    assert get(cluster, "configmap", "c", unique)["data"] == {"v": "1"}  # type: ignore[index]

    # as the README writes it (-n because this cluster is shared; the default is lockgate-system)
    back = lockgate(cluster, "rollback", unique, "-n", runner)
    assert back.code != 0 and "no revision before" in back.err, back.err  # one revision only so far
    first = versions[0].rsplit("@", 1)[1]
    status = lockgate(cluster, "status", unique, "-n", runner)
    assert status.code == 0, status.err
    assert first[:19] not in status.out  # not yet in the history: it was never applied

    # apply the first version by its whole digest, then go back with the short one status shows
    to_first = lockgate(cluster, "rollback", unique, "-n", runner, "--to", first)
    assert to_first.code == 0, to_first.err
    assert get(cluster, "configmap", "c", unique)["data"] == {"v": "0"}  # type: ignore[index]
    second = versions[1].rsplit("@", 1)[1]
    status = lockgate(cluster, "status", unique, "-n", runner)
    shown = re.findall(r"sha256:[0-9a-f]{7,}", status.out)
    short = next(s for s in shown if second.startswith(s) and s != second)
    again = lockgate(cluster, "rollback", unique, "-n", runner, "--to", short, "-o", "json")
    assert again.code == 0, again.err
    assert again.json()["rolledBackTo"] == f"latest@{second}"
    assert get(cluster, "configmap", "c", unique)["data"] == {"v": "1"}  # type: ignore[index]

    unknown = lockgate(cluster, "rollback", unique, "-n", runner, "--to", "sha256:0000000")
    assert unknown.code == 2 and "no digest in the history of sync" in unknown.err, unknown.err
    nowhere = lockgate(cluster, "rollback", unique, "-n", f"{unique}-none")
    assert nowhere.code == 2 and "pass --config FILE" in nowhere.err, nowhere.err
    both = lockgate(cluster, "rollback", unique, "-n", runner, "--config", str(local))
    assert both.code == 2 and "drop one of them" in both.err, both.err


def test_both_install_bases_are_found_by_their_config_mount(tmp_path: Path) -> None:
    """The Deployment (deploy/runner) and the CronJob (deploy/cronjob) as shipped: each runs
    lockgate with --config in the ConfigMap the generator made."""
    for base in ("runner", "cronjob"):
        docs = build(with_config(tmp_path, base, "{}\n"))
        (configmap_name,) = [d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap"]
        found = [
            m
            for kind, pod_path in ((k, p) for _, k, p in installed.WORKLOADS)
            for d in docs
            if d["kind"] == kind
            for m in installed.mounted(kind, d, pod_path)
        ]
        assert [(m.configmap, m.key) for m in found] == [(configmap_name, "config.yaml")], (base, found)
