"""Promotion between environments against the world (issue 16): registry, kube-apiserver, cosign.

Two clusters are stood for by two config files on one cluster: each has its own Runner
``clusterName`` (staging, production), runner namespace, target namespace and runner key
(a Secret of ``cosign.key`` and ``cosign.password``). Staging waits for health and attests
each digest it made healthy; production, on ``semver: ">=1.0.0"``, requires staging's
attestation and a short soak (3s), so it follows staging one version behind until the
soak has passed. A forged attestation (another key), one for another cluster, one copied
from another digest, and one too young are refused; a digest staging attested as failing
is never applied. ``cosign verify-attestation --key`` accepts the runner's attestation.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.signing import attest, keys, store
from lockgate.signing.policy import KeyPolicy
from runner.kube.client import Kube
from runner.pipeline import config, report, source
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from runner.pipeline.status import detail, read
from tests.integration.reconcile_support import cli, configmap, deployment, dump, get, push_tree
from tests.integration.signing_support import client_for
from tests.integration.test_attest import cosign_verify_attestation
from tests.world.kube import Cluster
from tests.world.recorder import Recorder
from tests.world.registry import Registry

pytestmark = pytest.mark.world

PASSWORD = b"runner-pw"
SOAK = 3


class World:
    """One registry repository, the staging and production "clusters", their keys."""

    def __init__(self, cluster: Cluster, registry: Registry, unique: str, tmp_path: Path) -> None:
        self.cluster, self.registry, self.repo, self.tmp = cluster, registry, unique, tmp_path
        self.kube = Kube.from_kubeconfig(cluster.kubeconfig)
        self.url = registry.oci(unique)
        self.id = unique[-6:]
        self.keys: dict[str, keys.PrivateKey] = {}
        for env in ("staging", "production"):
            pair = keys.generate_key_pair(PASSWORD)
            self.keys[env] = keys.load_private_key(pair.private_pem, PASSWORD)
            (tmp_path / f"{env}.pub").write_bytes(pair.public_pem)
            for ns in (self.ns(env), self.ns(env, "runner")):
                cluster.kubectl("create", "namespace", ns)
            secret = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "attest-key", "namespace": self.ns(env, "runner")},
                "data": {
                    "cosign.key": base64.b64encode(pair.private_pem).decode(),
                    "cosign.password": base64.b64encode(PASSWORD).decode(),
                },
            }
            cluster.kubectl("apply", "-f", "-", input=json.dumps(secret))

    def ns(self, env: str, kind: str = "apps") -> str:
        return f"{env}-{kind}-{self.id}"

    def push(self, version: str, *, broken: bool = False) -> str:
        objects: list[dict[str, Any]] = [configmap("app", "default", {"version": version})]
        if broken:  # asks for a node no cluster has: unavailable with or without controllers
            objects.append(deployment("web", "default", node_selector={"no-such-node": "true"}))
        return push_tree(self.registry, self.repo, {"app.yaml": dump(*objects)}, tag=version)

    def config(self, env: str, **spec: Any) -> Path:
        runner = {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Runner",
            "spec": {"clusterName": env, "namespace": self.ns(env, "runner")},
        }
        spec_name = spec.pop("name", "app")
        sync = {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Sync",
            "metadata": {"name": spec_name},
            "spec": {
                "url": self.url,
                "semver": ">=1.0.0",
                "interval": "1m",
                "targetNamespace": self.ns(env),
                "wait": True,
                "timeout": "3s",
                "verify": {"insecureSkip": True},
                "attest": {"secretRef": {"name": "attest-key"}, "onFailure": True},
                **spec,
            },
        }
        path = self.tmp / f"{env}-{spec_name}.yaml"
        path.write_text(yaml.safe_dump_all([runner, sync]))
        return path

    def production(self, name: str = "app", **verify: Any) -> Path:
        requirement = {"cluster": "staging", "key": str(self.tmp / "staging.pub"), "minAge": f"{SOAK}s"}
        requirement.update(verify)
        requirement = {k: v for k, v in requirement.items() if v is not None}
        return self.config(
            "production", verify={"insecureSkip": True, "attestations": [requirement]}, name=name
        )

    def run(self, path: Path) -> Result:
        (options,) = config.load(path).syncs
        return pipeline.reconcile(options, kube=self.kube)

    def applied(self, env: str) -> str | None:
        found = get(self.cluster, "configmap", "app", self.ns(env))
        return None if found is None else str(found["data"]["version"])


def digest(url: str) -> str:
    return url.rsplit("@", 1)[1]


def test_production_follows_staging_after_the_soak(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    world = World(cluster, registry, unique, tmp_path)
    staging, production = world.config("staging"), world.production()
    v100 = world.push("1.0.0")

    # nothing attested yet: production applies nothing and says what it waits for
    waiting = world.run(production)
    assert waiting.error is None, waiting.error
    assert waiting.waiting == (
        f"1.0.0@{digest(v100)}: waiting for healthy in staging, {SOAK}s soak: "
        "no healthy attestation for staging"
    )
    assert waiting.changeset.entries == [] and world.applied("production") is None
    # the parent is created to say so (it has no members yet)
    parent = read(namespace=world.ns("production", "runner"), name="app", kube=world.kube).inventories[0]
    assert parent.members == {} and parent.waiting == waiting.waiting
    assert f"waiting:   {waiting.waiting}" in detail(parent)

    first = world.run(staging)
    assert first.error is None, first.error
    assert world.applied("staging") == "1.0.0"
    assert first.attested.startswith("attested healthy in staging: ")
    # the attestation named as what it is: a referrer's digest, of the artifact's digest
    assert re.fullmatch(
        rf"attested healthy in staging: sha256:[0-9a-f]{{64}} \(a referrer of {digest(v100)}\)",
        first.attested,
    ), first.attested
    again = world.run(staging)
    assert again.error is None and again.attested.startswith("already attested healthy in staging")
    found = attest.read(
        client_for(registry, unique), unique, digest(v100), KeyPolicy(world.keys["staging"].public_key())
    )
    (made,) = found.attestations
    assert made.predicate_type == attest.HEALTHY
    assert made.predicate["cluster"] == "staging" and made.predicate["sync"] == "app"
    assert made.predicate["revision"] == f"1.0.0@{digest(v100)}"
    assert made.predicate["objects"] == {"total": 1, "current": 1}

    # cosign accepts the runner's attestation, with staging's key only
    accepted = cosign_verify_attestation(v100, tmp_path / "staging.pub", tmp_path, attest.HEALTHY)
    assert accepted.returncode == 0, accepted.stderr
    refused = cosign_verify_attestation(v100, tmp_path / "production.pub", tmp_path, attest.HEALTHY)
    assert refused.returncode != 0

    # too young for a one-hour soak (deterministic), then the short soak passes
    young = world.run(world.production(minAge="1h", name="hourly"))
    assert young.error is None and "1h soak: " in young.waiting and young.waiting.endswith(" left")
    promoted = _until_applied(world, production, "1.0.0")
    healthy_at = attest.parse_time(made.predicate["healthyAt"])
    assert healthy_at is not None and promoted >= healthy_at + dt.timedelta(seconds=SOAK)

    # v1.1.0: production stays on v1.0.0 (and says why) until staging attested it and the soak passed
    v110 = world.push("1.1.0")
    behind = world.run(production)
    assert behind.error is None and world.applied("production") == "1.0.0"
    assert behind.revision == f"1.0.0@{digest(v100)}"
    assert behind.waiting.startswith(f"1.1.0@{digest(v110)}: waiting for healthy in staging")
    status = detail(
        read(namespace=world.ns("production", "runner"), name="app", kube=world.kube).inventories[0]
    )
    assert f"waiting:   1.1.0@{digest(v110)}: waiting for healthy in staging" in status
    assert world.run(staging).error is None and world.applied("staging") == "1.1.0"
    _until_applied(world, production, "1.1.0")
    status = detail(
        read(namespace=world.ns("production", "runner"), name="app", kube=world.kube).inventories[0]
    )
    assert "waiting:" not in status

    # production's own runner attests with its own key and cluster name; its pass says which
    # attestation let the digest through
    mine = world.run(production)
    (admitted,) = mine.admitted
    assert admitted.startswith(f"healthy in staging, {SOAK}s soak: healthy since "), admitted
    assert "attested by key sha256:" in admitted and "(sha256:" in admitted, admitted
    assert f"  admitted: {admitted}" in report.table(mine)
    assert mine.attested.startswith("already attested healthy in production") or mine.attested.startswith(
        "attested healthy in production"
    )


def test_a_digest_staging_attested_as_failing_is_never_applied(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    world = World(cluster, registry, unique, tmp_path)
    staging, production = world.config("staging"), world.production(minAge="0s")
    world.push("1.0.0")
    assert world.run(staging).error is None
    assert world.run(production).error is None and world.applied("production") == "1.0.0"
    v200 = world.push("2.0.0", broken=True)
    failed = world.run(staging)
    assert failed.error is not None and "timed out" in failed.error.message
    assert failed.attested.startswith("attested unhealthy in staging: ")
    # even if staging once found it healthy, the failing attestation excludes it
    attest.attest_with_key(
        v200,
        world.keys["staging"],
        predicate_type=attest.HEALTHY,
        predicate=attest.health_predicate(
            cluster="staging",
            sync="app",
            revision="2.0.0",
            healthy=True,
            at=dt.datetime.now(dt.UTC),
            objects={},
        ),
    )
    result = world.run(production)
    assert result.error is None and world.applied("production") == "1.0.0"
    assert "attested as failing its health checks in staging" in result.waiting


def test_forged_misdirected_and_replayed_attestations_are_refused(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    world = World(cluster, registry, unique, tmp_path)
    v100 = world.push("1.0.0")
    now = dt.datetime.now(dt.UTC) - dt.timedelta(hours=2)

    def predicate(cluster_name: str) -> dict[str, Any]:
        return attest.health_predicate(
            cluster=cluster_name, sync="app", revision="1.0.0", healthy=True, at=now, objects={"total": 1}
        )

    # signed by another key (here: production's runner claiming to be staging)
    attest.attest_with_key(
        v100, world.keys["production"], predicate_type=attest.HEALTHY, predicate=predicate("staging")
    )
    forged = world.run(world.production())
    assert forged.error is None and world.applied("production") is None
    assert "no healthy attestation for staging" in forged.waiting and "not signed by" in forged.waiting

    # signed by staging's key, but for another cluster
    attest.attest_with_key(
        v100, world.keys["staging"], predicate_type=attest.HEALTHY, predicate=predicate("qa")
    )
    elsewhere = world.run(world.production())
    assert "(only for qa)" in elsewhere.waiting and world.applied("production") is None

    # replayed: staging's attestation of another digest copied onto this one
    other = push_tree(registry, f"{unique}-other", {"a.yaml": dump(configmap("x", "default", {}))})
    attest.attest_with_key(
        other, world.keys["staging"], predicate_type=attest.HEALTHY, predicate=predicate("staging")
    )
    client = client_for(registry, f"{unique}-other")
    bundle = store.read_bundles(client, f"{unique}-other", digest(other))[0].bundle
    assert bundle is not None
    store.write_bundle(
        client_for(registry, unique),
        unique,
        digest(v100),
        bundle,
        predicate_type=attest.HEALTHY,
        created="2026-01-01T00:00:00Z",
    )
    replayed = world.run(world.production())
    assert world.applied("production") is None and "no healthy attestation for staging" in replayed.waiting

    # the requirement's key from a Secret: staging's real attestation is accepted
    world.cluster.kubectl(
        "create",
        "secret",
        "generic",
        "staging-keys",
        "-n",
        world.ns("production", "runner"),
        f"--from-file=staging.pub={tmp_path / 'staging.pub'}",
    )
    attest.attest_with_key(
        v100, world.keys["staging"], predicate_type=attest.HEALTHY, predicate=predicate("staging")
    )
    accepted = world.run(world.production(key=None, secretRef={"name": "staging-keys"}))
    assert accepted.error is None, accepted.error
    assert world.applied("production") == "1.0.0"


def _until_applied(world: World, path: Path, version: str) -> dt.datetime:
    """Run production's passes until ``version`` is applied; returns when that pass ended (the
    soak is decided inside the pass, so the decision lies between its start and this time)."""
    for _ in range(60):
        result = world.run(path)
        ended = dt.datetime.now(dt.UTC)
        assert result.error is None, result.error
        if world.applied("production") == version:
            return ended
        assert "soak" in result.waiting
        time.sleep(0.5)
    raise AssertionError(f"production never applied {version}: {result.waiting}")


def test_a_tag_waits_and_a_failing_one_is_refused_by_tag_too(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    world = World(cluster, registry, unique, tmp_path)
    v100 = world.push("1.0.0")
    pinned = world.production(minAge="0s")
    text = (
        pinned.read_text()
        .replace("semver: '>=1.0.0'", "semver: null")
        .replace(f"url: {world.url}", f"url: {world.url}:1.0.0")
    )
    assert "semver: null" in text and f"{world.url}:1.0.0" in text
    pinned.write_text(text)
    waiting = world.run(pinned)
    assert waiting.error is None and world.applied("production") is None
    assert waiting.waiting.startswith(f"1.0.0@{digest(v100)}: waiting for healthy in staging: no healthy")
    attest.attest_with_key(
        v100,
        world.keys["staging"],
        predicate_type=attest.UNHEALTHY,
        predicate={"cluster": "staging", "failedAt": attest.timestamp(dt.datetime.now(dt.UTC))},
    )
    refused = world.run(pinned)
    assert "attested as failing its health checks in staging" in refused.waiting
    assert world.applied("production") is None


def test_an_unusable_runner_key_secret_fails_the_pass_and_names_the_secret(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    world = World(cluster, registry, unique, tmp_path)
    world.push("1.0.0")
    runner = world.ns("staging", "runner")
    cluster.kubectl(
        "-n",
        runner,
        "patch",
        "secret",
        "attest-key",
        "--type=json",
        "-p",
        '[{"op": "remove", "path": "/data/cosign.password"}]',
    )
    missing = world.run(world.config("staging"))
    assert missing.error is not None and world.applied("staging") == "1.0.0"  # applied, not attested
    assert missing.error.message == (
        f"Secret/{runner}/attest-key (spec.attest.secretRef.name): has no cosign.password entry "
        "(entries: cosign.key)"
    )
    assert "applied and healthy, but the health attestation was not written" in missing.notes
    wrong = base64.b64encode(b"not-the-password").decode()
    cluster.kubectl(
        "-n",
        runner,
        "patch",
        "secret",
        "attest-key",
        "--type=merge",
        "-p",
        json.dumps({"data": {"cosign.password": wrong}}),
    )
    refused = world.run(world.config("staging"))
    assert refused.error is not None and "wrong password" in refused.error.message
    assert f"Secret/{runner}/attest-key[cosign.key] (spec.attest.secretRef.name)" in refused.error.message
    assert "BEGIN" not in refused.error.message


def test_a_webhook_hears_what_production_waits_for_once(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """The generic provider's endpoint is a local recording HTTP server (the receiver of a
    webhook is outside lockgate); the passes run with ``lockgate reconcile``, one process each."""
    recorder = Recorder()
    try:
        world = World(cluster, registry, unique, tmp_path)
        world.push("1.0.0")
        assert world.run(world.config("staging")).error is None
        production = world.production(minAge="0s")
        doc = list(yaml.safe_load_all(production.read_text()))
        doc[1]["spec"]["notify"] = [{"type": "generic", "address": recorder.url + "/hook"}]
        production.write_text(yaml.safe_dump_all(doc))
        applied = cli(cluster, "--config", str(production))
        assert applied.code == 0, applied.err
        v110 = world.push("1.1.0")
        for _ in range(2):  # the second run waits for the same thing: nothing is sent again
            waiting = cli(cluster, "--config", str(production))
            assert waiting.code == 0, waiting.err
            assert f"waiting: 1.1.0@{digest(v110)}: waiting for healthy in staging" in waiting.out
        events = [r.json() for r in recorder.requests("/hook")]
        assert [e["reason"] for e in events] == ["ReconciliationSucceeded", "PromotionWaiting"]
        assert events[1]["severity"] == "info"
        assert events[1]["message"].startswith(f"1.1.0@{digest(v110)}: waiting for healthy in staging")
        assert events[1]["metadata"] == {
            "revision": f"1.1.0@{digest(v110)}",
            "applied": events[0]["metadata"]["revision"],
        }
    finally:
        recorder.stop()


def test_the_cheap_check_of_serve_names_the_digest_a_pass_would_choose(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """``serve`` runs a full pass only when this digest differs from the applied one: an older
    version that stays applied costs a check, and a soak that has passed makes a pass."""
    world = World(cluster, registry, unique, tmp_path)
    v100, v110 = world.push("1.0.0"), world.push("1.1.0")
    (options,) = config.load(world.production(minAge="0s")).syncs
    client = client_for(registry, unique)
    assert source.current_digest(options.source, client) == digest(v110)  # none attested: the newest
    now = dt.datetime.now(dt.UTC)
    healthy = attest.health_predicate(
        cluster="staging", sync="app", revision="1.0.0", healthy=True, at=now, objects={}
    )
    attest.attest_with_key(v100, world.keys["staging"], predicate_type=attest.HEALTHY, predicate=healthy)
    failing = {"cluster": "staging", "failedAt": attest.timestamp(now)}
    attest.attest_with_key(v110, world.keys["staging"], predicate_type=attest.UNHEALTHY, predicate=failing)
    assert source.current_digest(options.source, client) == digest(v100)  # 1.1.0 failed in staging
