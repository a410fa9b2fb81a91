"""``oci-layout://`` is no way into another tenant's files (issue 30, item 6).

The runner reads every directory its Pod mounts: the mirrors of every team. A Sync may read a
layout only under a root its Runner allows for the sync's namespace (``spec.layoutRoots``;
by default the config file's own directory for the Runner's namespace, nothing for a
tenant's), reached without following a symlink out of that root, and the attestation
``spec.attest`` stores beside the artifact is written there or nowhere.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.errors import ExitCode, UsageError
from lockgate.registry import copy as copying
from lockgate.registry import parse
from lockgate.registry.client import RegistryClient
from lockgate.signing import keys
from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from tests.integration.reconcile_support import configmap, dump, get, push_tree
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

PASSWORD = b"runner-pw"


def _mirror(registry: Registry, unique: str, directory: Path, app: str) -> None:
    """team-b's mirror: an artifact (its database URL included) copied into a layout directory."""
    push_tree(
        registry,
        unique,
        {"db.yaml": dump(configmap("db", app, {"url": "postgres://b:secret@db-b"}))},
        "1.0.0",
    )
    src, dst = parse(registry.oci(unique, ":1.0.0")), parse(f"oci-layout://{directory}")
    copying.copy(RegistryClient.for_reference(src), src, copying.destination_client(dst), dst, None)


def _config(path: Path, url: str, *, namespace: str, app: str, runner: dict[str, Any], **spec: Any) -> Path:
    docs = [
        {"apiVersion": "lockgate.dev/v1alpha1", "kind": "Runner", "metadata": {"name": "r"}, "spec": runner},
        {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Sync",
            "metadata": {"name": "team-a"},
            "spec": {
                "url": url,
                "interval": "5m",
                "namespace": namespace,
                "targetNamespace": app,
                "verify": {"insecureSkip": True},
                **spec,
            },
        },
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _files(directory: Path) -> set[str]:
    return {str(p.relative_to(directory)) for p in directory.rglob("*")}


def test_a_tenant_sync_reads_no_layout_outside_the_roots_its_runner_allows(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns, tenant_ns, app = f"{unique}-r", f"{unique}-a", f"{unique}-app"
    for ns in (runner_ns, tenant_ns, app):
        cluster.kubectl("create", "namespace", ns)
    team_b = tmp_path / "mirrors" / "team-b"
    _mirror(registry, unique, team_b, app)
    kube = Kube.from_kubeconfig(cluster.kubeconfig)

    # team-a's sync names team-b's mirror: refused when the file is loaded
    path = _config(
        tmp_path / "config" / "syncs.yaml", f"oci-layout://{team_b}:1.0.0", namespace=tenant_ns, app=app,
        runner={"namespace": runner_ns},
    )  # fmt: skip
    with pytest.raises(UsageError) as refused:
        for sync in config.load(path).syncs:
            pipeline.reconcile(sync, kube=kube)
    said = refused.value.message
    assert f"{path}:" in said and f"oci-layout://{team_b}" in said, said
    assert "spec.layoutRoots" in said and tenant_ns in said, said
    assert get(cluster, "configmap", "db", app) is None

    # a root for team-a, holding a symlink to team-b's mirror: refused when the pass reads it
    team_a = tmp_path / "mirrors" / "team-a"
    team_a.mkdir()
    (team_a / "app").symlink_to("../team-b")
    roots = {"namespace": runner_ns, "layoutRoots": [{"namespace": tenant_ns, "paths": [str(team_a)]}]}
    url = f"oci-layout://{team_a / 'app'}:1.0.0"
    path = _config(tmp_path / "config" / "syncs.yaml", url, namespace=tenant_ns, app=app, runner=roots)
    [sync] = config.load(path).syncs
    result = pipeline.reconcile(sync, kube=kube)
    assert result.error is not None and result.error.exit_code == ExitCode.USAGE, result.error
    said = result.error.message
    assert f"the symlink {team_a / 'app'} points to ../team-b" in said and str(team_a) in said, said
    assert "spec.layoutRoots" in said, said
    assert get(cluster, "configmap", "db", app) is None

    # its own mirror, under its root, is applied
    (team_a / "app").unlink()
    shutil.copytree(team_b, team_a / "app")
    assert pipeline.reconcile(sync, kube=kube).error is None
    assert get(cluster, "configmap", "db", app) is not None


def test_an_attestation_is_never_written_outside_the_allowed_root(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns, app = f"{unique}-r", f"{unique}-app"
    for ns in (runner_ns, app):
        cluster.kubectl("create", "namespace", ns)
    pair = keys.generate_key_pair(PASSWORD)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "attest-key", "namespace": runner_ns},
        "data": {"cosign.key": base64.b64encode(pair.private_pem).decode(),
                 "cosign.password": base64.b64encode(PASSWORD).decode()},
    }  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(secret))
    team_b = tmp_path / "mirrors" / "team-b"
    _mirror(registry, unique, team_b, app)
    before = _files(team_b)
    # a platform sync: its layout beside its config file (the default root), whose blobs are a
    # symlink to team-b's
    layout = tmp_path / "config" / "mirror"
    layout.mkdir(parents=True)
    for name in ("oci-layout", "index.json"):
        shutil.copy(team_b / name, layout / name)
    (layout / "blobs").symlink_to(team_b / "blobs")
    path = _config(
        tmp_path / "config" / "syncs.yaml", f"oci-layout://{layout}:1.0.0", namespace=runner_ns, app=app,
        runner={"namespace": runner_ns}, wait=True, attest={"secretRef": {"name": "attest-key"}},
    )  # fmt: skip
    [sync] = config.load(path).syncs
    result = pipeline.reconcile(sync, kube=Kube.from_kubeconfig(cluster.kubeconfig))
    assert result.error is not None and result.error.exit_code == ExitCode.USAGE, (
        result.error,
        result.attested,
    )
    assert f"the symlink {layout / 'blobs'} points to {team_b / 'blobs'}" in result.error.message
    assert _files(team_b) == before  # nothing written there
    assert get(cluster, "configmap", "db", app) is None


def test_serve_gives_each_layout_sync_its_own_store(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    # serve keeps one client per registry host and its Secrets; every layout has the same "host"
    from runner.serve.registries import Registries

    mirrors = tmp_path / "mirrors"
    runner = {"apiVersion": "lockgate.dev/v1alpha1", "kind": "Runner", "spec": {"namespace": f"{unique}-r"}}
    syncs = []
    for team in ("team-a", "team-b"):
        _mirror(registry, f"{unique}-{team}", mirrors / team, "default")
        spec = {
            "url": f"oci-layout://{mirrors / team}:1.0.0",
            "interval": "5m",
            "verify": {"insecureSkip": True},
        }
        syncs.append(
            {"apiVersion": "lockgate.dev/v1alpha1", "kind": "Sync", "metadata": {"name": team}, "spec": spec}
        )
    path = tmp_path / "syncs.yaml"
    path.write_text(yaml.safe_dump_all([runner, *syncs]))
    kept = Registries(Kube.from_kubeconfig(cluster.kubeconfig))
    first, second = (kept.client(sync) for sync in config.load(path).syncs)
    assert (first.host, second.host) == (
        f"oci-layout://{mirrors / 'team-a'}",
        f"oci-layout://{mirrors / 'team-b'}",
    )
