"""``healthCheckExprs`` against the real API server: a custom kind that does not follow kstatus's
conventions (its health is a ``Synced`` condition, as SealedSecrets and Crossplane claims say it).

No controller for the kind can run here, so the test plays its controller: it sets each
object's status through the status subresource (``kubectl patch --subresource=status``), from
the object's spec, the way the kind's controller would. Everything else is the world's: the
CRD served by kube-apiserver, the registry, the runner's pass, its rollback and its
attestations. Without the expressions such an object counts as healthy as soon as it exists.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.signing import attest, keys
from lockgate.signing.policy import KeyPolicy
from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from runner.plan.history import Outcome
from tests.integration.history_support import inventory
from tests.integration.reconcile_support import cli, configmap, dump, get, push_tree
from tests.integration.signing_support import client_for
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

PASSWORD = b"runner-pw"
KIND, PLURAL = "Certificate", "certificates"
#: Flux's cheat-sheet form for a kind whose health is its Synced condition
EXPRS = [
    {
        "kind": KIND,
        "failed": "status.conditions.filter(e, e.type == 'Synced').all(e, e.status == 'False')",
        "current": "status.conditions.filter(e, e.type == 'Synced').all(e, e.status == 'True')",
    }
]


def crd(group: str) -> dict[str, Any]:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": KIND, "plural": PLURAL, "singular": "certificate"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def certificate(group: str, ns: str, issuer: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{group}/v1",
        "kind": KIND,
        "metadata": {"name": "web-tls", "namespace": ns},
        "spec": {"secretName": "web-tls", "issuer": issuer},
    }


class Controller(threading.Thread):
    """The kind's controller, played by the test: ``issuer: good`` is Synced, any other is not."""

    def __init__(self, cluster: Cluster, group: str, ns: str) -> None:
        super().__init__(daemon=True)
        self.cluster, self.resource, self.ns = cluster, f"{PLURAL}.{group}", ns
        self.stop = threading.Event()
        self.done: set[tuple[int, str]] = set()

    def run(self) -> None:
        while not self.stop.wait(0.3):
            found = self.cluster.kubectl("get", self.resource, "-n", self.ns, "-o", "json", check=False)
            if found.returncode != 0:
                continue
            for item in json.loads(found.stdout)["items"]:
                generation, issuer = item["metadata"]["generation"], item["spec"].get("issuer", "")
                if (generation, issuer) in self.done:
                    continue
                good = issuer == "good"
                synced = {"type": "Synced", "status": "True" if good else "False"}
                if not good:
                    synced |= {"reason": "IssuerNotReady", "message": f"issuer {issuer} refused the request"}
                status = {"observedGeneration": generation, "conditions": [synced]}
                patched = self.cluster.kubectl(
                    "patch", self.resource, item["metadata"]["name"], "-n", self.ns, "--subresource=status",
                    "--type=merge", "-p", json.dumps({"status": status}), check=False,
                )  # fmt: skip
                if patched.returncode == 0:
                    self.done.add((generation, issuer))


@pytest.fixture
def group(cluster: Cluster, unique: str) -> Iterator[str]:
    name = f"{unique}.example.com"
    cluster.kubectl("apply", "-f", "-", input=json.dumps(crd(name)))
    cluster.kubectl("wait", "--for=condition=Established", f"crd/{PLURAL}.{name}", "--timeout=60s")
    yield name
    cluster.kubectl("delete", "crd", f"{PLURAL}.{name}", "--wait=false", check=False)


def _setup(cluster: Cluster, unique: str) -> tuple[str, str, keys.PrivateKey]:
    ns, runner = unique, f"{unique}-r"
    pair = keys.generate_key_pair(PASSWORD)
    for name in (ns, runner):
        cluster.kubectl("create", "namespace", name)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "attest-key", "namespace": runner},
        "data": {
            "cosign.key": base64.b64encode(pair.private_pem).decode(),
            "cosign.password": base64.b64encode(PASSWORD).decode(),
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(secret))
    return ns, runner, keys.load_private_key(pair.private_pem, PASSWORD)


def _config(tmp_path: Path, unique: str, url: str, runner: str, group: str, **spec: Any) -> Path:
    exprs = [{"apiVersion": f"{group}/v1", **e} for e in spec.pop("exprs", EXPRS)]
    doc = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": unique},
        "spec": {
            "url": url,
            "interval": "5m",
            "namespace": runner,
            "verify": {"insecureSkip": True},
            "wait": True,
            "timeout": "30s",
            "rollback": "onHealthFailure",
            "attest": {"secretRef": {"name": "attest-key"}},
            "healthCheckExprs": exprs,
            **spec,
        },
    }
    runner_doc = {"apiVersion": "lockgate.dev/v1alpha1", "kind": "Runner", "spec": {"clusterName": "staging"}}
    path = tmp_path / f"{unique}.yaml"
    path.write_text(yaml.safe_dump_all([runner_doc, doc]))
    return path


def _run(cluster: Cluster, path: Path) -> Result:
    (options,) = config.load(path).syncs
    return pipeline.reconcile(options, kube=Kube.from_kubeconfig(cluster.kubeconfig))


def _release(registry: Registry, unique: str, group: str, issuer: str, version: str) -> str:
    objects = [certificate(group, unique, issuer), configmap("app", unique, {"version": version})]
    return push_tree(registry, unique, {"app.yaml": dump(*objects)})


def test_a_failed_custom_resource_fails_the_pass_rolls_back_and_is_never_attested_healthy(
    cluster: Cluster, registry: Registry, unique: str, group: str, tmp_path: Path
) -> None:
    ns, runner, key = _setup(cluster, unique)
    controller = Controller(cluster, group, ns)
    controller.start()
    try:
        good = _release(registry, unique, group, "good", "1")
        first = _run(cluster, _config(tmp_path, unique, good.rsplit("@", 1)[0], runner, group))
        assert first.error is None, first.error
        said = first.health[f"{KIND}.{group}/{ns}/web-tls"]
        assert (said.status.value, said.message) == ("Current", "healthCheckExprs[0].current is true")
        assert first.attested.startswith("attested healthy in staging: ")

        bad = _release(registry, unique, group, "broken", "2")
        path = _config(tmp_path, unique, bad.rsplit("@", 1)[0], runner, group)
        failed = cli(cluster, "--config", str(path))
    finally:
        controller.stop.set()
        controller.join(timeout=5)
    # fails fast (well before the 30 s timeout) with the expression that said Failed, exit 6
    assert failed.code == 6, failed.err
    assert f"{KIND}.{group}/{ns}/web-tls: Failed: healthCheckExprs[0].failed" in failed.err, failed.err
    assert "timed out" not in failed.err
    # rolled back to the healthy revision
    assert get(cluster, "configmap", "app", ns)["data"]["version"] == "1"  # type: ignore[index]
    assert get(cluster, PLURAL + "." + group, "web-tls", ns)["spec"]["issuer"] == "good"  # type: ignore[index]
    history = inventory(cluster, unique, runner).history
    assert history[0].result is Outcome.ROLLED_BACK and history[1].result is Outcome.FAILED
    # the broken digest has no healthy attestation
    found = attest.read(
        client_for(registry, unique), unique, bad.rsplit("@", 1)[1], KeyPolicy(key.public_key())
    )
    assert attest.HEALTHY not in [a.predicate_type for a in found.attestations]


def test_a_field_the_object_lacks_is_unknown_until_the_timeout(
    cluster: Cluster, registry: Registry, unique: str, group: str, tmp_path: Path
) -> None:
    """As in Flux: an evaluation error is not Failed; the wait runs to its timeout and names the
    object, the expression and the error."""
    ns, runner, _ = _setup(cluster, unique)
    url = _release(registry, unique, group, "good", "1").rsplit("@", 1)[0]
    missing = [{"kind": KIND, "current": "status.certificate.ready == true"}]
    path = _config(tmp_path, unique, url, runner, group, exprs=missing, timeout="3s", rollback="none")
    result = _run(cluster, path)
    assert result.error is not None
    lines = result.error.message.splitlines()
    assert lines[0].startswith("timed out after 3s waiting for 1 object(s)"), lines
    assert any(
        line.startswith(
            f"  - {KIND}.{group}/{ns}/web-tls: Unknown: healthCheckExprs[0].current "
            "'status.certificate.ready == true' failed: "
        )
        for line in lines
    ), lines
    assert not result.attested
