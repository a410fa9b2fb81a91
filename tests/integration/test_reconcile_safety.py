"""What a pass must never do, and what it must refuse: against the real API server."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lockgate.signing import keys, sign
from runner.plan import applyset
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
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.{group}
spec:
  group: {group}
  scope: Namespaced
  names: {{kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
"""


def test_crd_and_its_custom_resources_in_one_artifact(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    group = f"{unique}.example.com"
    widget = f"apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n"
    files = {"crd.yaml": CRD.format(group=group), "ns.yaml": dump(namespace(unique)), "w.yaml": widget}
    result = run_pass(
        cluster, push_tree(registry, unique, files), unique, f"{unique}-r", target_namespace=unique
    )
    assert result.error is None, result.error
    assert actions(result)[f"Widget.{group}/{unique}/w"] == "created"
    assert [e.key.kind for e in result.changeset.entries] == [
        "CustomResourceDefinition",
        "Namespace",
        "Widget",
    ]
    live = get(cluster, f"widgets.{group}", "w", unique)
    assert live is not None and live["spec"] == {"size": 3}


def test_immutable_field_is_refused_without_force_and_recreated_with_it(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-r"
    v1 = {"a.yaml": dump(namespace(unique), {**configmap("frozen", unique, {"k": "1"}), "immutable": True})}
    assert run_pass(cluster, push_tree(registry, unique, v1, "v1"), unique, runner).error is None
    before = get(cluster, "configmap", "frozen", unique)
    url = push_tree(
        registry,
        unique,
        {"a.yaml": dump(namespace(unique), {**configmap("frozen", unique, {"k": "2"}), "immutable": True})},
        "v2",
    )
    refused = run_pass(cluster, url, unique, runner)
    assert refused.error is not None
    assert f"ConfigMap/{unique}/frozen" in refused.error.message
    assert "--force" in refused.error.message and "lockgate.dev/force: enabled" in refused.error.message
    assert int(refused.error.exit_code) == 5
    assert get(cluster, "configmap", "frozen", unique)["data"] == {"k": "1"}  # type: ignore[index]
    forced = run_pass(cluster, url, unique, runner, force=True)
    assert forced.error is None, forced.error
    entry = next(e for e in forced.changeset.entries if e.key.name == "frozen")
    assert (entry.action.value, entry.reason) == ("configured", "recreated (immutable field changed)")
    after = get(cluster, "configmap", "frozen", unique)
    assert after is not None and after["data"] == {"k": "2"}
    assert after["metadata"]["uid"] != before["metadata"]["uid"]  # type: ignore[index]


def test_two_syncs_never_prune_each_others_objects(cluster: Cluster, registry: Registry, unique: str) -> None:
    runner = f"{unique}-r"
    one = {
        "a.yaml": dump(
            namespace(unique), configmap("one", unique, {"k": "1"}), configmap("one-b", unique, {"k": "1"})
        )
    }
    two = {"a.yaml": dump(configmap("two", unique, {"k": "1"}), configmap("two-b", unique, {"k": "1"}))}
    assert (
        run_pass(
            cluster, push_tree(registry, f"{unique}/one", one), "one-" + unique[:40], runner, prune=True
        ).error
        is None
    )
    assert (
        run_pass(
            cluster, push_tree(registry, f"{unique}/two", two), "two-" + unique[:40], runner, prune=True
        ).error
        is None
    )
    shrunk = {"a.yaml": dump(configmap("two", unique, {"k": "1"}))}
    result = run_pass(
        cluster, push_tree(registry, f"{unique}/two", shrunk, "v2"), "two-" + unique[:40], runner, prune=True
    )
    assert result.error is None, result.error
    assert actions(result) == {f"ConfigMap/{unique}/two": "unchanged", f"ConfigMap/{unique}/two-b": "deleted"}
    for name in ("one", "one-b", "two"):
        assert get(cluster, "configmap", name, unique) is not None


def test_protected_and_foreign_objects_are_never_pruned(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-r"
    keep = configmap(
        "keep", unique, {"k": "1"}, annotations={"kustomize.toolkit.fluxcd.io/prune": "disabled"}
    )
    v1 = {
        "a.yaml": dump(namespace(unique), *(configmap(f"c{i}", unique, {"k": "1"}) for i in range(4)), keep)
    }
    assert run_pass(cluster, push_tree(registry, unique, v1, "v1"), unique, runner, prune=True).error is None
    # someone else takes c3 over: it is no longer labelled as ours
    cluster.kubectl("label", "configmap", "c3", "-n", unique, f"{applyset.PART_OF_LABEL}-")
    v2 = {"a.yaml": dump(namespace(unique), *(configmap(f"c{i}", unique, {"k": "1"}) for i in range(2)))}
    result = run_pass(cluster, push_tree(registry, unique, v2, "v2"), unique, runner, prune=True)
    assert result.error is None, result.error
    assert {k: v for k, v in actions(result).items() if v != "unchanged"} == {
        f"ConfigMap/{unique}/c2": "deleted",
        f"ConfigMap/{unique}/c3": "skipped",
        f"ConfigMap/{unique}/keep": "skipped",
    }
    assert get(cluster, "configmap", "c3", unique) is not None
    assert get(cluster, "configmap", "keep", unique) is not None


def test_mass_prune_is_refused_and_changes_nothing(cluster: Cluster, registry: Registry, unique: str) -> None:
    runner = f"{unique}-r"
    v1 = {"a.yaml": dump(namespace(unique), *(configmap(f"c{i}", unique, {"k": "1"}) for i in range(4)))}
    assert run_pass(cluster, push_tree(registry, unique, v1, "v1"), unique, runner, prune=True).error is None
    v2 = {"a.yaml": dump(namespace(unique), configmap("c0", unique, {"k": "changed"}))}
    url = push_tree(registry, unique, v2, "v2")
    refused = run_pass(cluster, url, unique, runner, prune=True)
    assert refused.error is not None and "--allow-mass-prune" in refused.error.message
    assert get(cluster, "configmap", "c0", unique)["data"] == {"k": "1"}  # type: ignore[index]
    assert all(get(cluster, "configmap", f"c{i}", unique) is not None for i in range(4))
    allowed = run_pass(cluster, url, unique, runner, prune=True, allow_mass_prune=True)
    assert allowed.error is None, allowed.error
    assert [get(cluster, "configmap", f"c{i}", unique) is None for i in range(4)] == [False, True, True, True]


def test_dry_run_reports_and_changes_nothing(cluster: Cluster, registry: Registry, unique: str) -> None:
    runner = f"{unique}-r"
    v1 = {
        "a.yaml": dump(
            namespace(unique), configmap("a", unique, {"k": "1"}), configmap("b", unique, {"k": "1"})
        )
    }
    assert run_pass(cluster, push_tree(registry, unique, v1, "v1"), unique, runner).error is None
    v2 = {
        "a.yaml": dump(
            namespace(unique), configmap("a", unique, {"k": "2"}), configmap("new", unique, {"k": "1"})
        )
    }
    url = push_tree(registry, unique, v2, "v2")
    run = cli(
        cluster,
        url,
        "--name",
        unique,
        "-n",
        runner,
        "--prune",
        "--dry-run",
        "--insecure-skip-verify",
        "-o",
        "json",
    )
    assert run.code == 0, run.err
    doc = run.json()
    assert doc["dryRun"] is True
    assert {o["object"]: o["action"] for o in doc["objects"]} == {
        f"Namespace/{unique}": "unchanged",
        f"ConfigMap/{unique}/a": "configured",
        f"ConfigMap/{unique}/new": "created",
        f"ConfigMap/{unique}/b": "deleted",
    }
    assert get(cluster, "configmap", "a", unique)["data"] == {"k": "1"}  # type: ignore[index]
    assert get(cluster, "configmap", "new", unique) is None
    assert get(cluster, "configmap", "b", unique) is not None


def test_kubectl_recognises_the_applyset(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    cluster.kubectl("create", "namespace", unique)
    files = {"a.yaml": dump(configmap("a", unique, {"k": "1"}), configmap("b", unique, {"k": "1"}))}
    assert run_pass(cluster, push_tree(registry, unique, files), unique, unique).error is None
    manifest = tmp_path / "a.yaml"
    manifest.write_text(
        dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "1"}})
    )
    argv = [
        str(binaries.binary("kubectl")),
        f"--kubeconfig={cluster.kubeconfig}",
        "apply",
        "--server-side",
        "--prune",
        f"--applyset=secret/lockgate-{unique}",
        "-n",
        unique,
        "-f",
        str(manifest),
    ]
    env = {**os.environ, "KUBECTL_APPLYSET": "true"}
    # kubectl finds the parent by our ID and refuses to take over another tool's set...
    refused = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert refused.returncode != 0
    assert 'managed by tooling "lockgate" instead of "kubectl"' in refused.stderr
    # ...and once handed over, prunes our members through the labels and annotations we wrote
    cluster.kubectl(
        "annotate",
        "secret",
        f"lockgate-{unique}",
        "-n",
        unique,
        "--overwrite",
        f"{applyset.TOOLING_ANNOTATION}=kubectl/v1.36.3",
    )
    handed = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert handed.returncode == 0, handed.stderr
    assert "configmap/b pruned" in handed.stdout
    assert get(cluster, "configmap", "b", unique) is None


def test_restricted_service_account_gets_a_clear_permission_error(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    cluster.kubectl("create", "namespace", unique)
    kubeconfig = cluster.service_account_kubeconfig(
        "runner",
        unique,
        rules=[
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
        ],
        cluster_rules=[{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}],
    )
    url = push_tree(registry, unique, {"a.yaml": dump(configmap("a", unique, {"k": "1"}))})
    run = cli(cluster, url, "--name", unique, "-n", unique, "--insecure-skip-verify", kubeconfig=kubeconfig)
    assert run.code == 5, run.err
    assert f"ConfigMap/{unique}/a" in run.err
    assert f"cannot patch configmaps in namespace {unique}" in run.err
    assert "token" not in run.err.lower()


def test_verification_refusals_leave_the_cluster_untouched(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(unique), configmap("a", unique, {"k": "1"}))})
    pair = keys.generate_key_pair(b"pw")
    (tmp_path / "cosign.pub").write_bytes(pair.public_pem)
    no_policy = cli(cluster, url, "--name", unique, "-n", f"{unique}-r")
    assert no_policy.code == 2 and "--insecure-skip-verify" in no_policy.err  # a usage error, as in verify
    unsigned = cli(
        cluster, url, "--name", unique, "-n", f"{unique}-r", "--verify-key", str(tmp_path / "cosign.pub")
    )
    assert unsigned.code == 4 and "not signed" in unsigned.err
    other = keys.load_private_key(keys.generate_key_pair(b"pw").private_pem, b"pw")
    sign.sign_with_key(url.split(":latest")[0] + url.split(":latest")[1], other)
    wrong = cli(
        cluster, url, "--name", unique, "-n", f"{unique}-r", "--verify-key", str(tmp_path / "cosign.pub")
    )
    assert wrong.code == 4, wrong.err
    assert get(cluster, "namespace", unique) is None  # nothing of the artifact was applied
    # only the runner's record of the refusal, for lockgate status: a parent without members
    parent = get(cluster, "secret", f"lockgate-{unique}", f"{unique}-r")
    assert parent is not None and parent["metadata"]["annotations"]["lockgate.dev/members"] == "0"
    assert set(parent["data"]) == {"inventory.json.gz"}
    right = keys.load_private_key(pair.private_pem, b"pw")
    sign.sign_with_key(url.split(":latest")[0] + url.split(":latest")[1], right)
    signed = cli(
        cluster, url, "--name", unique, "-n", f"{unique}-r", "--verify-key", str(tmp_path / "cosign.pub")
    )
    assert signed.code == 0, signed.err
    assert "verified: key" in signed.out
    assert get(cluster, "configmap", "a", unique) is not None
