"""Extraction limits against the world (issue 21 item 8, issue 26 item 10): every entry counts,
directories included; ``reconcile`` and a Sync take ``pull``'s limits; ``push`` refuses what
every runner would refuse on pull, naming the flag that changes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate import registry
from tests.integration.artifacts_support import lockgate
from tests.integration.reconcile_support import cli, dump, get, namespace, push_directory
from tests.integration.serve_support import runner_doc, sync_doc, write_config
from tests.world.kube import Cluster
from tests.world.process import free_port
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def _config(path: Path, name: str, url: str, runner_ns: str, **spec: object) -> Path:
    write_config(
        path, [runner_doc(free_port(), free_port()), sync_doc(name, url, runner_ns, prune=False, **spec)]
    )
    return path


def _head(reg: Registry, repo: str, tag: str) -> str | None:
    return registry.RegistryClient.for_reference(registry.parse(reg.oci(repo, f":{tag}"))).head_manifest(
        repo, tag
    )


def test_directories_count_against_the_entry_limit_in_pull_reconcile_and_a_sync(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "ns.yaml").write_text(dump(namespace(unique)))
    for i in range(20_000):
        (tree / f"d{i:05d}").mkdir()
    url = push_directory(registry, unique, tree)  # a layer of about 100 KB
    says = "more than 10000 entries, files and directories (limit); nothing was written"
    pulled = lockgate("pull", url, "-O", str(tmp_path / "out"), "--max-files", "10000")
    assert pulled.code == 8 and says in pulled.err, pulled.err
    assert not (tmp_path / "out").exists()
    args = ("--name", unique, "-n", f"{unique}-r", "--insecure-skip-verify")
    refused = cli(cluster, url, *args, "--max-files", "10000")
    assert refused.code == 8 and says in refused.err, refused.err
    config = _config(tmp_path / "sync.yaml", unique, url, f"{unique}-r", maxFiles=10_000)
    from_sync = cli(cluster, "--config", str(config))
    assert from_sync.code == 8 and says in from_sync.err, from_sync.err
    assert get(cluster, "namespace", unique) is None
    # within the default limit (100,000 entries) it is applied
    assert cli(cluster, url, *args).code == 0
    assert get(cluster, "namespace", unique) is not None


@pytest.mark.parametrize("name", ["back\\slash.yaml", "dir\\with\\backslashes"])
def test_push_refuses_a_name_every_runner_refuses(
    registry: Registry, unique: str, tmp_path: Path, name: str
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "ns.yaml").write_text(dump(namespace(unique)))
    if name.endswith(".yaml"):
        (tree / name).write_text(dump(namespace(unique)))
    else:
        (tree / name).mkdir()
    run = lockgate("push", str(tree), registry.oci(unique, ":v1"))
    assert run.code == 2, run.err
    assert f"{tree / name}: the name holds a backslash or a NUL, and every runner refuses" in run.err
    assert _head(registry, unique, "v1") is None


def _compressible(root: Path, ns: str) -> Path:
    root.mkdir()
    (root / "ns.yaml").write_text(dump(namespace(ns)))
    (root / "zeros.bin").write_bytes(bytes(24 << 20))  # compresses about a thousandfold
    return root


def test_push_refuses_a_layer_over_the_runners_ratio_and_reconcile_takes_the_same_flag(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = _compressible(tmp_path / "tree", unique)
    refused = lockgate("push", str(tree), registry.oci(unique, ":v1"))
    assert refused.code == 2, refused.err
    assert "compresses" in refused.err and ":1, over the 200:1 runners extract" in refused.err
    assert "pass a higher --max-ratio here and give the runners the same limit" in refused.err
    assert "nothing was pushed" in refused.err
    assert _head(registry, unique, "v1") is None
    # build refuses it too, and says what build does (it never pushes)
    built = lockgate("build", str(tree), "-O", str(tmp_path / "layer.tgz"))
    assert built.code == 2 and ":1, over the 200:1 runners extract" in built.err, built.err
    assert "pushed" not in built.err and "nothing was written" in built.err, built.err
    assert not (tmp_path / "layer.tgz").exists()
    pushed = lockgate("push", str(tree), registry.oci(unique, ":v1"), "--max-ratio", "5000")
    assert pushed.code == 0, pushed.err
    url = registry.oci(unique, ":v1")
    args = ("--name", unique, "-n", f"{unique}-r", "--insecure-skip-verify")
    by_default = cli(cluster, url, *args)
    assert by_default.code == 8 and "compression ratio above 200:1" in by_default.err, by_default.err
    assert get(cluster, "namespace", unique) is None
    assert cli(cluster, url, *args, "--max-ratio", "5000").code == 0
    assert get(cluster, "namespace", unique) is not None


def test_a_sync_takes_the_extraction_limits_as_fields(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    url = push_directory(registry, unique, _compressible(tmp_path / "tree", unique))
    strict = _config(tmp_path / "strict.yaml", unique, url, f"{unique}-r")
    run = cli(cluster, "--config", str(strict))
    assert run.code == 8 and "compression ratio above 200:1" in run.err, run.err
    assert get(cluster, "namespace", unique) is None
    relaxed = _config(tmp_path / "relaxed.yaml", unique, url, f"{unique}-r", maxRatio=5000, maxSize=1 << 30)
    run = cli(cluster, "--config", str(relaxed))
    assert run.code == 0, run.err
    assert get(cluster, "namespace", unique) is not None
    small = _config(tmp_path / "small.yaml", unique, url, f"{unique}-r", maxRatio=5000, maxSize=1 << 20)
    run = cli(cluster, "--config", str(small))
    assert run.code == 8 and "total size exceeds 1048576 bytes (limit)" in run.err, run.err
