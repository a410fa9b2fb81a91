"""``lockgate preview`` against the world: real registry, real runners attesting, then the real passes.

Staging and production (two runner configurations on the world's cluster, ``preview_support``)
have different overlays and postBuild values and run different releases: both applied 1.0.0,
then staging applied 1.1.0 and attested it, production did not take it yet. A pull request
changes PATH; the preview must say, per cluster, which digest runs there (the attested one,
verified with the sync's release key and the runner's attestation key) and exactly what the
next pass creates, configures and prunes. That is checked by publishing PATH and running those
passes: what each did is what the preview said. Without an attester key a cluster falls back to
its tag and says so; with the wrong key its attestation is not trusted, and named. A forced
RoleBinding whose roleRef changes is a recreate hazard, a shrink above the mass-prune guard is
refused by the preview as by the pass, and a change of the sync's verify key against ``--base``
is a verify-policy hazard.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.preview_support import (
    GitOps,
    configmap,
    dump,
    role_binding,
    what_a_pass_did,
    what_the_preview_said,
    write_tree,
)
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

LOCKGATE = [sys.executable, "-m", "lockgate"]
FORCE = {"lockgate.dev/force": "enabled"}


def release(
    version: str, *, extra: bool, obsolete: bool, frozen: str = "1", fresh: bool = False
) -> dict[str, str]:
    objects = [
        configmap("settings", {"color": "${COLOR}", "version": version}),
        configmap("keep", {"x": "y"}),
        configmap("frozen", {"v": frozen}, immutable=True, **FORCE),
        role_binding("access", "view"),
    ]
    if obsolete:
        objects.append(configmap("obsolete", {"a": "b"}))
    if extra:
        objects.append(configmap("extra", {"e": "1"}))
    if fresh:
        objects.append(configmap("fresh", {"f": "1"}))
    return {"app.yaml": dump(*objects)}


def preview(cwd: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    env = {**os.environ, "LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize"))}
    proc = subprocess.run(
        [*LOCKGATE, "preview", *args, "-o", "json"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )
    try:
        document = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}") from None
    return proc.returncode, document, proc.stderr


def by_cluster(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["cluster"]: t for t in document["targets"]}


def same_as_the_pass(said: dict[str, Any], did: dict[str, tuple[str, tuple[str, ...]]]) -> None:
    """The preview's objects and actions are the pass's; so are the changed fields, except for
    a recreated object (a pass reports the recreation, not its fields)."""
    predicted = what_the_preview_said(said)
    assert {k: v[0] for k, v in predicted.items()} == {k: v[0] for k, v in did.items()}, (predicted, did)
    for name, (action, paths) in did.items():
        if action == "configured" and paths:
            assert predicted[name][1] == paths, (name, predicted[name], paths)


@pytest.fixture
def gitops(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> GitOps:
    monkeypatch.setenv("LOCKGATE_KUSTOMIZE", str(binaries.binary("kustomize")))
    return GitOps(cluster, registry, unique, tmp_path)


def test_the_preview_is_what_each_clusters_next_pass_does(gitops: GitOps, tmp_path: Path) -> None:
    world = gitops
    patch = json.dumps(
        [
            {"op": "add", "path": "/data/replicas", "value": "3"},
            {"op": "add", "path": "/data/tier", "value": "gold"},
        ]
    )
    staging = world.config(
        "staging", commonMetadata={"labels": {"env": "staging"}}, postBuild={"substitute": {"COLOR": "green"}}
    )
    production = world.config(
        "production",
        patches=[{"patch": patch, "target": {"kind": "ConfigMap", "name": "settings"}}],
        postBuild={"substitute": {"COLOR": "red"}},
    )
    v1 = world.publish(write_tree(tmp_path / "v1", release("1", extra=False, obsolete=True)), "1.0.0")
    world.run(staging)
    assert world.run(production).digest == v1
    v2 = world.publish(write_tree(tmp_path / "v2", release("2", extra=True, obsolete=True)), "1.1.0")
    assert world.run(staging).digest == v2  # production has not taken it yet: it still runs v1

    path = write_tree(tmp_path / "pr", release("3", extra=True, obsolete=False, frozen="2", fresh=True))
    keys = [
        "--attester-key",
        f"staging={tmp_path / 'staging.pub'}",
        "--attester-key",
        f"production={tmp_path / 'production.pub'}",
    ]
    code, document, err = preview(
        tmp_path,
        str(path),
        "--cluster",
        str(staging),
        "--cluster",
        str(production),
        "--url",
        world.url,
        *keys,
    )
    assert code == 1, err  # changes
    targets = by_cluster(document)
    stg, prd = targets["staging"], targets["production"]
    assert (stg["running"]["basis"], stg["running"]["digest"]) == ("attestation", v2)
    assert (prd["running"]["basis"], prd["running"]["digest"]) == ("attestation", v1)
    assert stg["running"]["verifiedBy"].startswith("key ") and "release.pub" in stg["running"]["verifiedBy"]
    assert "staging.pub" in stg["running"]["attestedBy"] and "production.pub" in prd["running"]["attestedBy"]
    # the overlays and values of each cluster: production's patch and red, staging's label and green
    assert ("ConfigMap/" + world.ns("staging") + "/fresh") in what_the_preview_said(stg)
    assert ("ConfigMap/" + world.ns("production") + "/extra", ("created", ())) in what_the_preview_said(
        prd
    ).items()
    assert {h["kind"] for h in stg["hazards"]} >= {"recreate"}
    assert "applied there only once" in " ".join(prd["notes"])

    world.publish(path, "1.2.0")
    same_as_the_pass(stg, what_a_pass_did(world.run(staging)))
    same_as_the_pass(prd, what_a_pass_did(world.run(production)))
    settings = json.loads(
        world.cluster.kubectl(
            "get", "configmap", "settings", "-n", world.ns("production"), "-o", "json"
        ).stdout
    )
    assert settings["data"] == {"color": "red", "version": "3", "replicas": "3", "tier": "gold"}

    # no attester key for production: its tag; the wrong key: its attestation is named, not trusted
    code, document, err = preview(tmp_path, str(path), "--cluster", str(production), "--url", world.url)
    prd = by_cluster(document)["production"]
    assert prd["running"]["basis"] == "tag", prd
    assert any("no --attester-key for production" in n for n in prd["running"]["notes"]), prd["running"]
    wrong = ["--attester-key", f"production={tmp_path / 'wrong.pub'}"]
    code, document, err = preview(
        tmp_path, str(path), "--cluster", str(production), "--url", world.url, *wrong
    )
    prd = by_cluster(document)["production"]
    assert prd["running"]["basis"] == "tag", prd
    refused = [n for n in prd["running"]["notes"] if "not trusted" in n]
    assert refused and "wrong.pub" in refused[0], prd["running"]["notes"]


def test_hazards_a_mass_prune_refused_as_the_pass_refuses_it_and_a_verify_key_change(
    gitops: GitOps, tmp_path: Path
) -> None:
    world = gitops
    staging = world.config("staging")
    four = [configmap(f"c{i}", {"i": str(i)}) for i in range(4)]
    world.publish(write_tree(tmp_path / "v1", {"app.yaml": dump(*four)}), "1.0.0")
    world.run(staging)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "clusters"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(tmp_path),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-qm",
            "base",
        ],
        check=True,
    )
    (tmp_path / "other.pub").write_bytes((tmp_path / "wrong.pub").read_bytes())
    world.config("staging", verify_key="other.pub")  # the pull request changes who may sign

    path = write_tree(tmp_path / "pr", {"app.yaml": dump(four[0])})
    keys = ["--attester-key", f"staging={tmp_path / 'staging.pub'}", "--base", "HEAD"]
    code, document, _ = preview(tmp_path, str(path), "--cluster", str(staging), "--url", world.url, *keys)
    assert code == 1
    stg = by_cluster(document)["staging"]
    kinds = {h["kind"] for h in stg["hazards"]}
    assert {"mass-prune", "verify-policy"} <= kinds, stg["hazards"]
    assert "refusing to prune" in stg["refused"]
    assert [o["action"] for o in stg["objects"]].count("deleted") == 3

    world.config("staging")  # the key the runner verifies with today
    world.publish(path, "1.1.0")
    from runner.pipeline import config
    from runner.pipeline import reconcile as pipeline

    (options,) = config.load(staging).syncs
    result = pipeline.reconcile(options, kube=world.kube)
    assert result.error is not None and "refusing to prune" in result.error.message
