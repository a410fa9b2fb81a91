"""Bombs against the world (issue 21 item 2): a 1 KB alias bomb, a List holding itself and
deep nesting are refused as they are read, with memory flat, wherever YAML or JSON comes from
outside: an artifact (``reconcile``, and ``serve``, which stays up for its other syncs),
``push`` and ``build``, the image automation's config and files, a Helm values file, a
kustomization, a webhook body and a registry document.

Every child runs under a memory cap and a deadline (``bombs_support``): a refusal takes well
under a second of parsing; a regression is killed instead of taking the machine down.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lockgate import registry
from tests.integration import bombs_support as bombs
from tests.integration.images_support import native_config, seed_tags
from tests.integration.reconcile_support import configmap, dump, get, namespace, push_tree
from tests.integration.serve_support import start_serve, sync_doc
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

TOKEN = "bomb-webhook-token"
#: fixture -> (its line the error names, what the message says, the bound)
CASES = {
    "aliases.yaml": (2, "aliases would expand it to 1,234,567,919 nodes", "aliases"),
    "self-list.yaml": (6, "alias *list is inside its own anchor &list", "recursive alias"),
    "deep.yaml": (7, "nests deeper than 256 levels", "depth"),
}


def _refused(run: bombs.Measured, file: str, fixture: str, *, code: int = 8) -> None:
    line, says, limit = CASES[fixture]
    assert run.code == code, run.err
    assert f"{file}:{line}: " in run.err and says in run.err and f"(limit: {limit})" in run.err, run.err
    assert run.peak_mib < bombs.FLAT_MIB, f"peak {run.peak_mib:.0f} MiB: memory did not stay flat"


def _client(reg: Registry, repo: str) -> registry.RegistryClient:
    return registry.RegistryClient.for_reference(registry.parse(reg.oci(repo, ":latest")))


def _reconcile(cluster: Cluster, url: str, name: str, *flags: str) -> bombs.Measured:
    return bombs.lockgate(
        "reconcile", url, "--name", name, "-n", f"{name}-r", "--insecure-skip-verify",
        f"--kubeconfig={cluster.kubeconfig}", *flags,
    )  # fmt: skip


@pytest.mark.parametrize("fixture", list(CASES))
def test_reconcile_refuses_a_bomb_in_the_artifact_and_changes_nothing(
    cluster: Cluster, registry: Registry, unique: str, fixture: str
) -> None:
    files = {"ns.yaml": dump(namespace(unique)), "apps/bomb.yaml": bombs.bomb(fixture)}
    url = push_tree(registry, unique, files)  # packed as another tool would: nothing checked on the way
    run = _reconcile(cluster, url, unique, "--target-namespace", unique)
    _refused(run, "apps/bomb.yaml", fixture)
    assert run.seconds < 30, run.seconds
    assert get(cluster, "namespace", unique) is None  # refused before anything was applied


def _webhook_secret(cluster: Cluster, runner_ns: str) -> None:
    cluster.kubectl("create", "namespace", runner_ns)
    cluster.kubectl(
        "create", "secret", "generic", "webhook", "-n", runner_ns, f"--from-literal=token={TOKEN}"
    )


def test_serve_refuses_the_bomb_and_keeps_the_other_syncs_going(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    _webhook_secret(cluster, runner_ns)
    bad = push_tree(registry, f"{unique}/bad", {"bomb.yaml": bombs.bomb("aliases.yaml")}, tag="live")
    good = f"{unique}/good"
    push_tree(registry, good, {"cm.yaml": dump(configmap("good", ns, {"v": "1"}))}, tag="live")
    served = start_serve(
        cluster,
        tmp_path,
        [
            sync_doc("bomb", bad.split("@")[0], runner_ns, targetNamespace=ns),
            sync_doc("good", registry.oci(good, ":live"), runner_ns),
        ],
        runner={"namespace": runner_ns, "webhook": {"secretRef": {"name": "webhook"}}},
        preexec_fn=bombs.cap_memory,
    )
    try:
        failed = served.wait_event(
            lambda e: e.get("msg") == "pass finished" and e.get("sync") == "bomb" and "error" in e,
            what="the bomb sync's failed pass",
        )
        assert "bomb.yaml:2: document 1: aliases would expand" in failed["error"], failed
        assert "(limit: aliases)" in failed["error"]
        served.wait_sync_ready("good")
        # the other sync keeps converging: a new version, a webhook, applied
        push_tree(registry, good, {"cm.yaml": dump(configmap("good", ns, {"v": "2"}))}, tag="live")
        assert served.hook("good", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        served.wait_event(
            lambda e: (
                e.get("msg") == "pass finished"
                and e.get("sync") == "good"
                and e.get("summary", "").find("1 configured") >= 0
            ),
            what="the good sync's second pass",
        )
        assert get(cluster, "configmap", "good", ns)["data"] == {"v": "2"}  # type: ignore[index]
        assert served.proc.poll() is None and served.readyz().status_code == 200
        assert bombs.peak_mib(served.proc.pid) < bombs.FLAT_MIB
    finally:
        served.stop()


def test_a_webhook_body_that_is_a_json_bomb_is_refused(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    ns, runner_ns = f"{unique}-app", f"{unique}-run"
    cluster.kubectl("create", "namespace", ns)
    _webhook_secret(cluster, runner_ns)
    url = push_tree(registry, unique, {"cm.yaml": dump(configmap("web", ns, {"v": "1"}))}, tag="live")
    served = start_serve(
        cluster,
        tmp_path,
        [sync_doc("web", url.split("@")[0], runner_ns)],
        runner={"namespace": runner_ns, "webhook": {"secretRef": {"name": "webhook"}}},
        preexec_fn=bombs.cap_memory,
    )
    try:
        served.wait_sync_ready("web")
        headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Content-Type": "application/json",
            "X-GitHub-Event": "push",
        }
        body = bombs.json_bomb()  # 200 KB, under the body limit: 100,000 arrays deep
        answer = served.hook("web", body=body, headers=headers)
        assert answer.status_code == 400, answer.text
        assert answer.json() == {
            "sync": "web",
            "triggered": False,
            "error": "the webhook body: nests deeper than 256 levels of objects and arrays (limit: depth); "
            "refusing to load it: real manifests and documents nest far less",
        }
        assert not any(e.get("msg") == "sync triggered" for e in served.events())
        # a real push event still triggers, and names what was pushed
        push = json.dumps({"ref": "refs/heads/main", "after": "6d1e" + "0" * 36}).encode()
        answer = served.hook("web", body=push, headers=headers)
        assert answer.status_code == 200 and answer.json()["triggered"] is True, answer.text
        assert "webhook: GitHub push refs/heads/main@6d1e00000000" in answer.json()["message"]
        assert served.proc.poll() is None and bombs.peak_mib(served.proc.pid) < bombs.FLAT_MIB
    finally:
        served.stop()


@pytest.mark.parametrize("fixture", list(CASES))
def test_push_and_build_refuse_a_bomb(registry: Registry, unique: str, tmp_path: Path, fixture: str) -> None:
    tree = tmp_path / "tree"
    (tree / "apps").mkdir(parents=True)
    (tree / "ns.yaml").write_text(dump(namespace(unique)))
    (tree / "apps" / "bomb.yaml").write_text(bombs.bomb(fixture))
    pushed = bombs.lockgate("push", str(tree), registry.oci(unique, ":v1"))
    _refused(pushed, str(tree / "apps" / "bomb.yaml"), fixture)
    assert _client(registry, unique).head_manifest(unique, "v1") is None  # nothing was pushed
    built = bombs.lockgate("build", str(tree), "-O", str(tmp_path / "layer.tgz"))
    _refused(built, str(tree / "apps" / "bomb.yaml"), fixture)
    assert not (tmp_path / "layer.tgz").exists()


def _chart(root: Path) -> Path:
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 1.0.0\n")
    (root / "values.yaml").write_text("greeting: hello\n")
    (root / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n"
        "data:\n  greeting: {{ .Values.greeting | quote }}\n"
    )
    return root


def test_a_bomb_in_a_helm_values_file_is_refused_before_helm_runs(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    chart = _chart(tmp_path / "chart")
    values = tmp_path / "prod.yaml"
    values.write_text(bombs.bomb("aliases.yaml"))
    env = {"LOCKGATE_HELM": str(binaries.binary("helm"))}
    run = bombs.lockgate(
        "push", str(chart), registry.oci(unique, ":v1"), "--render", "--values", str(values), env=env
    )
    _refused(run, str(values), "aliases.yaml")
    # the chart's own values.yaml too
    (chart / "values.yaml").write_text(bombs.bomb("self-list.yaml"))
    run = bombs.lockgate("push", str(chart), registry.oci(unique, ":v1"), "--render", env=env)
    _refused(run, str(chart / "values.yaml"), "self-list.yaml")
    assert _client(registry, unique).head_manifest(unique, "v1") is None


def _kustomization_bomb() -> str:
    # the bomb under a field kustomize reads (its own decoder refuses it too, later and unnamed)
    return (
        bombs.bomb("aliases.yaml")
        .replace("data:", "commonAnnotations:")
        .replace(
            "apiVersion: v1\nkind: ConfigMap",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization",
        )
    )


def test_a_bomb_in_a_kustomization_is_refused_in_push_and_in_reconcile(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    files = {
        "base/kustomization.yaml": _kustomization_bomb(),
        "base/cm.yaml": dump(configmap("plain", unique, {"k": "1"})),
        "app/kustomization.yaml": "resources: [../base]\n",
    }
    tree = tmp_path / "tree"
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    pushed = bombs.lockgate("push", str(tree / "app"), registry.oci(unique, ":v1"), "--render")
    _refused(pushed, str((tree / "base" / "kustomization.yaml").resolve()), "aliases.yaml")
    url = push_tree(registry, unique, files)
    run = _reconcile(cluster, url, unique, "--path", "app")
    _refused(run, "base/kustomization.yaml", "aliases.yaml")


def test_the_image_automation_refuses_bombs_in_its_config_and_its_files(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    seed_tags(registry.host, unique, ["1.0.0", "1.1.0"])
    repo = tmp_path / "repo"
    repo.mkdir()
    native_config(repo, [f"{{name: app, image: '{registry.host}/{unique}', semver: '*'}}"])
    (repo / "deploy").mkdir()
    app = repo / "deploy" / "app.yaml"
    app.write_text(f'image: {registry.host}/{unique}:1.0.0 # {{"$imagepolicy": "apps:app"}}\n')
    # a file the setters read (it has a marker) holding a bomb: reported, skipped, never walked
    marked = repo / "deploy" / "bomb.yaml"
    marked.write_text(
        'image: x:1 # {"$imagepolicy": "apps:app"}\n' + bombs.bomb("aliases.yaml").split("\n", 1)[1]
    )
    run = bombs.lockgate("images", "update", "--path", str(repo))
    assert run.code == 10, run.err  # partial: the other file was updated
    assert "deploy/bomb.yaml:-: unparsable: cannot be parsed as YAML, skipped" in run.err, run.err
    assert "(limit: aliases)" in run.err
    assert app.read_text().startswith(f"image: {registry.host}/{unique}:1.1.0 ")
    assert run.peak_mib < bombs.FLAT_MIB and run.seconds < 60
    # the configuration itself holding a bomb: a usage error naming the file and the bound
    bad = repo / "more-images.yaml"
    bad.write_text("apiVersion: lockgate.dev/v1alpha1\nkind: ImageAutomation\n" + _bomb_mapping())
    run = bombs.lockgate("images", "scan", "--path", str(repo))
    assert run.code == 2, run.err
    assert f"{bad}:" in run.err and "(limit: aliases)" in run.err, run.err
    assert run.peak_mib < bombs.FLAT_MIB


def _bomb_mapping() -> str:
    """The alias bomb as the top-level fields of a mapping (after a document's kind)."""
    return "\n".join(line.removeprefix("  ") for line in bombs.bomb("aliases.yaml").splitlines()[6:]) + "\n"


def test_a_registry_document_nested_too_deep_is_refused(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    client = _client(registry, unique)
    config, layer = b"{}", b"not a layer"
    for blob in (config, layer):
        client.upload_blob(unique, blob, digest="sha256:" + hashlib.sha256(blob).hexdigest(), size=len(blob))
    # the registry (distribution 2.8) stores it: Go's decoder allows 10,000 levels
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.cncf.flux.config.v1+json",
            "digest": "sha256:" + hashlib.sha256(config).hexdigest(),
            "size": 2,
        },
        "layers": [
            {
                "mediaType": "application/vnd.cncf.flux.content.v1.tar+gzip",
                "digest": "sha256:" + hashlib.sha256(layer).hexdigest(),
                "size": len(layer),
            }
        ],
    }
    body = json.dumps(manifest)[:-1].encode() + b',"x":' + bombs.json_bomb(5000) + b"}"
    digest = client.put_manifest(unique, "v1", body, "application/vnd.oci.image.manifest.v1+json")
    where = f"manifest of oci://{registry.host}/{unique}:v1"
    pulled = bombs.lockgate("pull", registry.oci(unique, ":v1"), "-O", str(tmp_path / "out"))
    assert pulled.code == 7, pulled.err
    assert f"{where}: nests deeper than 256 levels of objects and arrays (limit: depth)" in pulled.err
    run = _reconcile(cluster, registry.oci(unique, f":v1@{digest}"), unique)
    assert run.code == 7 and "(limit: depth)" in run.err, run.err
