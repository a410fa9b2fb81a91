"""`reconcile --context`: the kubeconfig context to use, as kubectl's flag."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.integration.reconcile_support import cli, configmap, dump, get, namespace, push_tree
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def test_context_picks_the_cluster(cluster: Cluster, registry: Registry, unique: str, tmp_path: Path) -> None:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    good = config["current-context"]
    config["clusters"].append({"name": "gone", "cluster": {"server": "https://127.0.0.1:9"}})
    config["contexts"].append(
        {"name": "gone", "context": {"cluster": "gone", "user": config["users"][0]["name"]}}
    )
    config["current-context"] = "gone"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    url = push_tree(
        registry, unique, {"a.yaml": dump(namespace(unique), configmap("cfg", unique, {"k": "1"}))}
    )
    args = [url, "--name", unique, "-n", f"{unique}-r", "--insecure-skip-verify"]
    refused = cli(cluster, *args, kubeconfig=kubeconfig)
    assert refused.code == 11, refused.err  # the current context's cluster is not there
    done = cli(cluster, *args, "--context", good, kubeconfig=kubeconfig)
    assert done.code == 0, done.err
    assert get(cluster, "configmap", "cfg", unique) is not None
    unknown = cli(cluster, *args, "--context", "nope", kubeconfig=kubeconfig)
    assert unknown.code == 2 and "no context named 'nope'" in unknown.err, unknown.err
