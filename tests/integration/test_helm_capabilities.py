"""Charts rendered for the clusters that run them: each runner publishes what its API server
serves (a signed in-toto attestation in the registry), and push --render --capabilities-from
renders with it, from CI, with no cluster credentials.

Two real API servers serve different APIs: the session's cluster ("alpha") has a CRD the
second one ("beta", its own etcd and kube-apiserver) does not, until the test installs it
there. A chart gates a Monitor on .Capabilities.APIVersions.Has "GROUP/v1/Monitor"."""

from __future__ import annotations

import base64
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate import registry as registry_mod
from lockgate.helm import capabilities, published
from lockgate.signing import keys, store
from tests.integration.helm_support import crd, gated_chart, pulled_docs, push_render
from tests.integration.reconcile_support import LOCKGATE, configmap, dump, push_tree
from tests.integration.serve_support import start_serve, sync_doc
from tests.world.kube import Cluster, start_cluster
from tests.world.registry import Registry

pytestmark = [pytest.mark.world]

PASSWORD = b"runner-pw"


@pytest.fixture(scope="module")
def beta(world_dir: Path) -> Iterator[Cluster]:
    """A second control plane (etcd + kube-apiserver of its own): another cluster's API."""
    kube = start_cluster(world_dir / f"beta-{uuid.uuid4().hex[:6]}")
    yield kube
    kube.stop()


def _runner(cluster: Cluster, ns: str, tmp_path: Path, name: str) -> Path:
    """The runner namespace with the runner's key Secret; the public key written to NAME.pub."""
    pair = keys.generate_key_pair(PASSWORD)
    cluster.kubectl("create", "namespace", ns)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "caps-key", "namespace": ns},
        "data": {
            "cosign.key": base64.b64encode(pair.private_pem).decode(),
            "cosign.password": base64.b64encode(PASSWORD).decode(),
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(secret))
    public = tmp_path / f"{name}.pub"
    public.write_bytes(pair.public_pem)
    return public


def _runner_spec(name: str, ns: str, url: str) -> dict[str, Any]:
    return {
        "namespace": ns,
        "clusterName": name,
        "capabilities": {"url": url, "signingSecretRef": {"name": "caps-key"}, "interval": "2s"},
    }


def _install_crd(cluster: Cluster, group: str) -> None:
    cluster.kubectl("apply", "-f", "-", input=json.dumps(crd(group, "Monitor")))
    cluster.kubectl("wait", "--for=condition=established", f"crd/monitors.{group}", "--timeout=60s")


def _reconcile(cluster: Cluster, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LOCKGATE, "reconcile", f"--config={config}", f"--kubeconfig={cluster.kubeconfig}"],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _kinds(ref: str, out: Path) -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in pulled_docs(ref, out)}


def test_each_cluster_s_attested_capabilities_render_its_chart_and_the_intersection_says_the_difference(
    cluster: Cluster, beta: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    group = f"{unique}.example.com"
    caps_url = registry.oci(f"{unique}-caps")
    runner_ns = f"{unique}-r"
    alpha_pub = _runner(cluster, runner_ns, tmp_path, "alpha")
    beta_pub = _runner(beta, runner_ns, tmp_path, "beta")
    _install_crd(cluster, group)  # alpha serves GROUP/v1 Monitor; beta does not
    app = push_tree(registry, f"{unique}-app", {"cm.yaml": dump(configmap("app", runner_ns, {"k": "v"}))})
    sync = sync_doc("app", app, runner_ns)

    # alpha runs serve; beta runs reconcile --config (the CronJob mode): both publish
    served = start_serve(
        cluster, tmp_path / "alpha", [sync], runner=_runner_spec("alpha", runner_ns, caps_url)
    )
    try:
        served.wait_event(
            lambda e: _published(e, "alpha"), timeout=120, what="alpha's capabilities published"
        )
        beta_config = tmp_path / "beta.yaml"
        runner_doc = {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Runner",
            "metadata": {"name": "runner"},
            "spec": _runner_spec("beta", runner_ns, caps_url),
        }
        beta_config.write_text(yaml.safe_dump_all([runner_doc, sync], sort_keys=False))
        first = _reconcile(beta, beta_config)
        assert first.returncode == 0, first.stderr
        assert "published the capabilities of beta" in first.stderr, first.stderr
        again = _reconcile(beta, beta_config)
        assert "capabilities of beta unchanged" in again.stderr, again.stderr

        chart = gated_chart(tmp_path / "web", group)
        keys_flags = ["--capabilities-key", str(alpha_pub), "--capabilities-key", str(beta_pub)]

        def render(tag: str, *clusters: str) -> tuple[dict[str, dict[str, Any]], str]:
            ref = registry.oci(f"{unique}-web", f":{tag}")
            flags = [flag for name in clusters for flag in ("--cluster", name)]
            run = push_render(chart, ref, "--capabilities-from", caps_url, *flags, *keys_flags)
            assert run.code == 0, run.err
            return _kinds(ref, tmp_path / f"out-{tag}"), run.err

        for_alpha, said = render("alpha", "alpha")
        assert "Monitor" in for_alpha, "alpha serves the Monitor's API"
        version = beta.kubectl("version", "-o", "json").stdout
        assert for_alpha["ConfigMap"]["data"]["kube"] == json.loads(version)["serverVersion"]["gitVersion"]
        assert "notice: rendering for alpha: Kubernetes v" in said and "attested by key" in said
        for_beta, _ = render("beta", "beta")
        assert "Monitor" not in for_beta
        for_both, differ = render("both", "alpha", "beta")
        assert "Monitor" not in for_both
        # (the session's cluster may serve other tests' CRDs too: only this one's are asserted)
        (line,) = [
            x for x in differ.splitlines() if "the clusters differ: served by alpha, not by beta: " in x
        ]
        assert f"{group}/v1, {group}/v1/Monitor" in line and "not by alpha" not in differ, differ

        # the clusters change: beta gets the CRD (its next run publishes it), alpha loses it
        # (serve looks again every interval and publishes the change)
        _install_crd(beta, group)
        changed = _reconcile(beta, beta_config)
        assert "published the capabilities of beta" in changed.stderr, changed.stderr
        assert "Monitor" in render("beta-2", "beta")[0]
        alpha_tag = registry_mod.parse(registry.oci(f"{unique}-caps", ":alpha"))
        before = _digest(alpha_tag)
        cluster.kubectl("delete", "crd", f"monitors.{group}", "--wait=true")
        assert _tag_moves(alpha_tag, before, timeout=60), served.tail()
        assert "Monitor" not in render("alpha-2", "alpha")[0]
    finally:
        served.stop()


def _published(event: dict[str, Any], cluster: str) -> bool:
    return str(event.get("msg", "")).startswith(f"published the capabilities of {cluster}")


def _digest(ref: registry_mod.Reference) -> str:
    return registry_mod.RegistryClient.for_reference(ref).resolve(ref)


def _tag_moves(ref: registry_mod.Reference, before: str, *, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _digest(ref) != before:
            return True
        time.sleep(0.5)
    return False


def _key(tmp_path: Path, name: str) -> keys.PrivateKey:
    pair = keys.generate_key_pair(PASSWORD)
    (tmp_path / f"{name}.pub").write_bytes(pair.public_pem)
    return keys.load_private_key(pair.private_pem, PASSWORD)


def test_a_forged_replayed_wrong_key_or_other_cluster_s_attestation_is_refused_and_named(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    """Whoever can push to the capabilities repository (another runner, a leaked CI token) can
    move a tag and add referrers, but cannot make push --render use capabilities that alpha's
    runner did not sign for alpha: each attempt fails the render (exit 4) naming the referrer."""
    group = f"{unique}.example.com"
    repo = f"{unique}-caps"
    client = registry_mod.RegistryClient.for_reference(registry_mod.parse(registry.oci(repo)))
    alpha, beta, attacker = (_key(tmp_path, n) for n in ("alpha", "beta", "attacker"))
    monitor = ("v1", "v1/ConfigMap", f"{group}/v1", f"{group}/v1/Monitor")
    chart = gated_chart(tmp_path / "web", group)
    flags = [
        "--capabilities-from",
        registry.oci(repo),
        "--cluster",
        "alpha",
        "--capabilities-key",
        str(tmp_path / "alpha.pub"),
        "--capabilities-key",
        str(tmp_path / "beta.pub"),
    ]

    def render(tag: str) -> Any:
        return push_render(chart, registry.oci(f"{unique}-web", f":{tag}"), *flags)

    # 1. another key signs "alpha serves the Monitor's API"
    forged = published.publish(client, repo, capabilities.Capabilities("alpha", "v1.99.0", monitor), attacker)
    assert forged.written
    digest = str(client.head_manifest(repo, "alpha"))
    refused = render("wrong-key")
    assert refused.code == 4, refused.err
    assert f"{registry.oci(repo)}:alpha@{digest}: no capabilities attestation of cluster alpha" in refused.err
    assert "not signed by" in refused.err and "referrer sha256:" in refused.err

    # 2. alpha's genuine statement (for its real, Monitor-less capabilities), edited to name the
    # forged digest: the signature no longer verifies; 3. the same bundle unedited, copied as a
    # referrer of the forged digest: it names another digest
    genuine_repo = f"{unique}-genuine"
    published.publish(client, genuine_repo, capabilities.Capabilities("alpha", "v1.36.0", monitor[:2]), alpha)
    real = str(client.head_manifest(genuine_repo, "alpha"))
    bundle = next(b for b in store.read_bundles(client, genuine_repo, real) if b.bundle)
    assert bundle.bundle is not None
    document = json.loads(bundle.bundle)
    statement = json.loads(base64.b64decode(document["dsseEnvelope"]["payload"]))
    statement["subject"][0]["digest"]["sha256"] = digest.removeprefix("sha256:")
    statement["predicate"]["apiVersions"] = list(monitor)
    edited = dict(document, dsseEnvelope=dict(document["dsseEnvelope"]))
    edited["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    for forged_bundle in (json.dumps(edited).encode(), bundle.bundle):
        store.write_bundle(
            client,
            repo,
            digest,
            forged_bundle,
            predicate_type=capabilities.PREDICATE_TYPE,
            created="2026-01-01T00:00:00Z",
        )
    again = render("forged")
    assert again.code == 4, again.err
    assert again.err.count("not signed by") >= 2, again.err  # the attacker's and the edited one
    assert f"the signature is for {real}, not for {digest}" in again.err

    # 4. beta's genuine capabilities, re-tagged as alpha's: signed by beta's key, for beta
    published.publish(client, repo, capabilities.Capabilities("beta", "v1.36.0", monitor), beta)
    beta_manifest = client.get_manifest(repo, "beta")
    client.put_manifest(repo, "alpha", beta_manifest.content, beta_manifest.media_type)
    copied = render("copied")
    assert copied.code == 4, copied.err
    assert "but claims cluster 'beta' (copied from another cluster's tag?)" in copied.err

    # and what alpha's runner signed is used
    published.publish(client, repo, capabilities.Capabilities("alpha", "v1.36.0", monitor[:2]), alpha)
    accepted = render("genuine")
    assert accepted.code == 0, accepted.err
    assert "Monitor" not in _kinds(registry.oci(f"{unique}-web", ":genuine"), tmp_path / "out")
