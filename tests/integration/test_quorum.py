"""Quorum promotion and waves of production against the world (issue 24): registry, kube-apiserver.

Seven runners stand for seven clusters on one kube-apiserver, each with its own Runner
``clusterName``, runner namespace, target namespace and attestation key (a Secret of
``cosign.key`` and ``cosign.password``): five staging clusters (``staging-eu-1`` ...
``staging-ap-1``), ``production-canary`` and ``production-eu-1``. The canary requires a
quorum of ``staging-*`` (4 of them, each healthy for a 3s soak, at most one failing),
checked against a Secret holding the five staging runners' public keys; ``production-eu-1``,
the second wave, requires ``production-canary``. The bad inputs of the issue are each a
test: a pattern no attesting cluster matches, ``minClusters`` larger than the list, one
cluster attesting twice, a selected cluster's attestation signed by the wrong key, a
``healthyAt`` in the future. Where a test needs only the evidence, the staging runners'
attestations are signed with their real keys by ``attest.attest_with_key`` (what the
runner's ``attesting.write`` calls), stored in the real registry.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.errors import ExitCode
from lockgate.signing import attest, keys
from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from runner.pipeline.status import read
from tests.integration.reconcile_support import cli, configmap, deployment, dump, get, push_tree
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

PASSWORD = b"runner-pw"
SOAK = 3
STAGING = ("staging-eu-1", "staging-eu-2", "staging-us-1", "staging-us-2", "staging-ap-1")
CANARY, WAVE = "production-canary", "production-eu-1"


class Fleet:
    """One artifact repository and the runners of seven clusters, each in its own namespaces."""

    def __init__(self, cluster: Cluster, registry: Registry, unique: str, tmp_path: Path) -> None:
        self.cluster, self.registry, self.repo, self.tmp = cluster, registry, unique, tmp_path
        self.kube = Kube.from_kubeconfig(cluster.kubeconfig)
        self.url = registry.oci(unique)
        self.id = unique[-6:]
        self.keys: dict[str, keys.PrivateKey] = {}
        self.private: dict[str, bytes] = {}
        self.started: set[str] = set()
        for name in (*STAGING, CANARY, WAVE):
            pair = keys.generate_key_pair(PASSWORD)
            self.keys[name] = keys.load_private_key(pair.private_pem, PASSWORD)
            self.private[name] = pair.private_pem
            (tmp_path / f"{name}.pub").write_bytes(pair.public_pem)

    def start(self, name: str) -> None:
        """The cluster's namespaces and its runner's Secrets, made when its runner first runs."""
        if name in self.started:
            return
        self.started.add(name)
        for ns in (self.ns(name), self.ns(name, "runner")):
            self.cluster.kubectl("create", "namespace", ns)
        self.secret(name, "attest-key", {"cosign.key": self.private[name], "cosign.password": PASSWORD})
        # the canary checks the staging runners' keys, the second wave the canary's
        if name == CANARY:
            pems = {f"{n}.pub": (self.tmp / f"{n}.pub").read_bytes() for n in STAGING}
            self.secret(CANARY, "staging-keys", pems)
        if name == WAVE:
            self.secret(WAVE, "canary-keys", {f"{CANARY}.pub": (self.tmp / f"{CANARY}.pub").read_bytes()})

    def ns(self, name: str, kind: str = "apps") -> str:
        return f"q{self.id}-{name}-{kind}"

    def secret(self, cluster_name: str, name: str, data: dict[str, bytes]) -> None:
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": self.ns(cluster_name, "runner")},
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
        }
        self.cluster.kubectl("apply", "-f", "-", input=json.dumps(secret))

    def push(self, version: str, *, broken: bool = False) -> str:
        objects: list[dict[str, Any]] = [configmap("app", "default", {"version": version})]
        if broken:  # asks for a node no cluster has: unavailable with or without controllers
            objects.append(deployment("web", "default", node_selector={"no-such-node": "true"}))
        return push_tree(self.registry, self.repo, {"app.yaml": dump(*objects)}, tag=version)

    def config(self, name: str, *attestations: dict[str, Any]) -> Path:
        self.start(name)
        runner = {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Runner",
            "spec": {"clusterName": name, "namespace": self.ns(name, "runner")},
        }
        verify: dict[str, Any] = {"insecureSkip": True}
        if attestations:
            verify["attestations"] = list(attestations)
        sync = {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Sync",
            "metadata": {"name": "app"},
            "spec": {
                "url": self.url,
                "semver": ">=1.0.0",
                "interval": "1m",
                "targetNamespace": self.ns(name),
                "wait": True,
                "timeout": "3s",
                "verify": verify,
                "attest": {"secretRef": {"name": "attest-key"}, "onFailure": True},
            },
        }
        path = self.tmp / f"{name}.yaml"
        path.write_text(yaml.safe_dump_all([runner, sync]))
        return path

    def canary(self, **quorum: Any) -> Path:
        need = {
            "clusters": ["staging-*"],
            "minClusters": 4,
            "maxFailures": 1,
            "minAge": f"{SOAK}s",
            "secretRef": {"name": "staging-keys"},
        }
        return self.config(CANARY, {**need, **quorum})

    def wave(self) -> Path:
        return self.config(WAVE, {"clusters": [CANARY], "secretRef": {"name": "canary-keys"}})

    def run(self, path: Path) -> Result:
        (options,) = config.load(path).syncs
        return pipeline.reconcile(options, kube=self.kube)

    def applied(self, name: str) -> str | None:
        found = get(self.cluster, "configmap", "app", self.ns(name))
        return None if found is None else str(found["data"]["version"])

    def attest(self, url: str, name: str, *, ago: float = 3600, signer: str | None = None) -> None:
        """``name`` attests ``url`` healthy since ``ago`` seconds, signed by ``signer``'s key (its own)."""
        at = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=ago)
        predicate = attest.health_predicate(
            cluster=name, sync="app", revision="", healthy=True, at=at, objects={"total": 1, "current": 1}
        )
        attest.attest_with_key(
            url, self.keys[signer or name], predicate_type=attest.HEALTHY, predicate=predicate
        )


def digest(url: str) -> str:
    return url.rsplit("@", 1)[1]


def _until_applied(fleet: Fleet, name: str, path: Path, version: str) -> Result:
    for _ in range(60):
        result = fleet.run(path)
        assert result.error is None, result.error
        if fleet.applied(name) == version:
            return result
        time.sleep(0.5)
    raise AssertionError(f"{name} never applied {version}: {result.waiting}")


def test_three_stages_a_staging_quorum_then_the_canary_then_the_rest(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    fleet = Fleet(cluster, registry, unique, tmp_path)
    canary, wave = fleet.canary(), fleet.wave()
    staging = {name: fleet.config(name) for name in STAGING}
    v100 = fleet.push("1.0.0")

    # nothing attested: both production stages wait and say for what
    first = fleet.run(canary)
    assert first.error is None and fleet.applied(CANARY) is None
    assert first.waiting == (
        f"1.0.0@{digest(v100)}: 0/4 of staging-* healthy for {SOAK}s; no attesting cluster matches staging-*"
    )
    held = fleet.run(wave)
    assert held.waiting == f"1.0.0@{digest(v100)}: 0/1 of {CANARY} healthy; missing {CANARY}"

    # five staging runners, each its own clusterName, namespaces and key, apply and attest
    for name, path in staging.items():
        result = fleet.run(path)
        assert result.error is None, result.error
        assert result.attested.startswith(f"attested healthy in {name}: "), result.attested
        assert fleet.applied(name) == "1.0.0"
    soaking = fleet.run(canary)
    if fleet.applied(CANARY) is None:  # the soak (3s) had not passed yet
        assert soaking.waiting.startswith(
            f"1.0.0@{digest(v100)}: 0/4 of staging-* healthy for {SOAK}s; missing "
        )
        assert " left)" in soaking.waiting
    promoted = _until_applied(fleet, CANARY, canary, "1.0.0")
    assert promoted.attested.startswith(f"attested healthy in {CANARY}")
    # the second wave follows the canary (no soak asked there)
    assert fleet.run(wave).error is None and fleet.applied(WAVE) == "1.0.0"

    # 1.1.0: three of five attest; once they have soaked the canary names the two missing
    v110 = fleet.push("1.1.0")
    for name in STAGING[:3]:
        assert fleet.run(staging[name]).error is None and fleet.applied(name) == "1.1.0"
    time.sleep(SOAK + 1)
    waiting = cli(cluster, "--config", str(canary))
    assert waiting.code == 0, waiting.err
    expected = (
        f"1.1.0@{digest(v110)}: 3/4 of staging-* healthy for {SOAK}s; missing staging-ap-1, staging-us-2"
    )
    assert f"waiting: {expected}" in waiting.out, waiting.out
    assert fleet.applied(CANARY) == "1.0.0"
    parent = read(namespace=fleet.ns(CANARY, "runner"), name="app", kube=fleet.kube).inventories[0]
    assert parent.waiting == expected
    behind = fleet.run(wave)
    assert behind.waiting == f"1.1.0@{digest(v110)}: 0/1 of {CANARY} healthy; missing {CANARY}"
    assert fleet.applied(WAVE) == "1.0.0"

    # the fourth makes the quorum: the canary moves, then the second wave
    assert fleet.run(staging["staging-us-2"]).error is None
    _until_applied(fleet, CANARY, canary, "1.1.0")
    assert fleet.run(wave).error is None and fleet.applied(WAVE) == "1.1.0"


def test_more_failures_than_max_failures_refuse_the_digest_for_good(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    fleet = Fleet(cluster, registry, unique, tmp_path)
    canary = fleet.canary()
    v100 = fleet.push("1.0.0")
    for name in STAGING:
        fleet.attest(v100, name)
    assert fleet.run(canary).error is None and fleet.applied(CANARY) == "1.0.0"

    v200 = fleet.push("2.0.0", broken=True)
    for name in STAGING[2:]:
        fleet.attest(v200, name)
    # a real staging runner finds 2.0.0 unhealthy and attests it failing: one failure is allowed
    failed = fleet.run(fleet.config("staging-eu-1"))
    assert failed.error is not None and failed.attested.startswith("attested unhealthy in staging-eu-1")
    tolerated = fleet.run(canary)
    assert fleet.applied(CANARY) == "1.0.0"
    assert tolerated.waiting.startswith(f"2.0.0@{digest(v200)}: 3/4 of staging-* healthy for {SOAK}s; ")
    assert "; failing staging-eu-1 at " in tolerated.waiting and tolerated.waiting.endswith("(maxFailures 1)")

    # a second failure refuses it; healthy attestations written afterwards change nothing
    assert fleet.run(fleet.config("staging-eu-2")).attested.startswith("attested unhealthy in staging-eu-2")
    for name in STAGING[:2]:
        fleet.attest(v200, name, ago=0)
    time.sleep(1)
    refused = fleet.run(canary)
    assert refused.error is None and fleet.applied(CANARY) == "1.0.0"
    assert refused.waiting.startswith(
        f"2.0.0@{digest(v200)}: refused: 2 of staging-* attested failing their health checks "
        "(maxFailures 1): staging-eu-1 at "
    )


def test_a_pattern_no_attesting_cluster_matches_waits_and_says_so(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    fleet = Fleet(cluster, registry, unique, tmp_path)
    v100 = fleet.push("1.0.0")
    for name in STAGING:
        fleet.attest(v100, name)
    typo = fleet.run(fleet.canary(clusters=["stagign-*"], minClusters=1))
    assert typo.error is None and fleet.applied(CANARY) is None
    assert typo.waiting == (
        f"1.0.0@{digest(v100)}: 0/1 of stagign-* healthy for {SOAK}s; no attesting cluster matches "
        f"stagign-* (attested: {', '.join(sorted(STAGING))})"
    )


def test_min_clusters_larger_than_the_list_is_refused_at_load(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    fleet = Fleet(cluster, registry, unique, tmp_path)
    fleet.push("1.0.0")
    path = fleet.canary(clusters=["staging-eu-1", "staging-eu-2"], minClusters=3)
    refused = cli(cluster, "--config", str(path))
    assert refused.code == 2, refused.err
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "minClusters" in text)
    assert (
        f"{path}:{line}: Sync/app: spec.verify.attestations[0].minClusters: 3 is more than the 2 "
        in refused.err
    )
    assert read(namespace=fleet.ns(CANARY, "runner"), kube=fleet.kube).inventories == []  # nothing ran


def test_the_same_cluster_attesting_twice_counts_once(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    fleet = Fleet(cluster, registry, unique, tmp_path)
    v100 = fleet.push("1.0.0")
    fleet.attest(v100, "staging-eu-1", ago=7200)
    fleet.attest(v100, "staging-eu-1", ago=3600)  # again, a new statement
    # another staging key claims it: refused (its key is bound to staging-eu-2), it changes nothing
    fleet.attest(v100, "staging-eu-1", ago=3600, signer="staging-eu-2")
    twice = fleet.run(fleet.canary(minClusters=2))
    assert twice.error is None and fleet.applied(CANARY) is None
    assert twice.waiting == f"1.0.0@{digest(v100)}: 1/2 of staging-* healthy for {SOAK}s"
    fleet.attest(v100, "staging-eu-2")
    assert fleet.run(fleet.canary(minClusters=2)).error is None and fleet.applied(CANARY) == "1.0.0"


def test_a_selected_clusters_attestation_signed_by_the_wrong_key_is_named_not_counted(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    fleet = Fleet(cluster, registry, unique, tmp_path)
    v100 = fleet.push("1.0.0")
    for name in STAGING[:3]:
        fleet.attest(v100, name)
    # the canary's own key is not among the staging keys it checks
    fleet.attest(v100, "staging-us-2", signer=CANARY)
    forged = fleet.run(fleet.canary())
    assert forged.error is None and fleet.applied(CANARY) is None
    secret = f"Secret/{fleet.ns(CANARY, 'runner')}/staging-keys"
    assert forged.waiting == (
        f"1.0.0@{digest(v100)}: 3/4 of staging-* healthy for {SOAK}s; "
        f"missing staging-us-2 (refused: not signed by {secret})"
    )


def test_a_healthyat_in_the_future_does_not_count_as_soaked(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    fleet = Fleet(cluster, registry, unique, tmp_path)
    v100 = fleet.push("1.0.0")
    for name in STAGING[:3]:
        fleet.attest(v100, name)
    fleet.attest(v100, "staging-ap-1", ago=-7200)  # its clock is two hours fast
    skewed = fleet.run(fleet.canary(minAge="0s"))
    assert skewed.error is None and fleet.applied(CANARY) is None
    assert skewed.waiting.startswith(
        f"1.0.0@{digest(v100)}: 3/4 of staging-* healthy; missing staging-ap-1 (healthyAt "
    )
    assert skewed.waiting.endswith(" is in the future: clock skew)")


def test_the_one_cluster_form_does_not_count_a_healthyat_in_the_future_either(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    fleet = Fleet(cluster, registry, unique, tmp_path)
    v100 = fleet.push("1.0.0")
    fleet.attest(v100, "staging-ap-1", ago=-7200)
    one = fleet.config(CANARY, {"cluster": "staging-ap-1", "secretRef": {"name": "staging-keys"}})
    skewed = fleet.run(one)
    assert skewed.error is None and fleet.applied(CANARY) is None
    assert skewed.waiting.startswith(f"1.0.0@{digest(v100)}: waiting for healthy in staging-ap-1: healthyAt ")
    assert skewed.waiting.endswith(" is in the future (clock skew): not counted")
    fleet.attest(v100, "staging-ap-1", ago=60)
    assert fleet.run(one).error is None and fleet.applied(CANARY) == "1.0.0"


def test_one_staging_runners_key_cannot_attest_for_the_other_staging_clusters(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    # the staging keys Secret names each entry <clusterName>.pub: each key is bound to its cluster
    fleet = Fleet(cluster, registry, unique, tmp_path)
    v100 = fleet.push("1.0.0")
    fleet.attest(v100, "staging-eu-1")
    # staging-eu-1's runner is compromised: it signs "healthy" as three other staging clusters
    for name in ("staging-eu-2", "staging-us-1", "staging-us-2"):
        fleet.attest(v100, name, signer="staging-eu-1")
    forged = fleet.run(fleet.canary())
    assert forged.error is None and fleet.applied(CANARY) is None
    key = f"Secret/{fleet.ns(CANARY, 'runner')}/staging-keys[staging-eu-1.pub]"
    assert forged.waiting == (
        f"1.0.0@{digest(v100)}: 1/4 of staging-* healthy for {SOAK}s; missing "
        + ", ".join(
            f"{name} (refused: signed by the key for staging-eu-1 ({key}), claims {name})"
            for name in ("staging-eu-2", "staging-us-1", "staging-us-2")
        )
    )
    # each of them attesting with its own key makes the quorum
    for name in ("staging-eu-2", "staging-us-1", "staging-us-2"):
        fleet.attest(v100, name)
    assert fleet.run(fleet.canary()).error is None and fleet.applied(CANARY) == "1.0.0"


def test_a_quorum_over_keys_bound_to_no_cluster_is_refused_unless_one_shared_key_is_said(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # one staging runner's key, in an entry named after no cluster: alone it could attest healthy
    # as both clusters the quorum needs
    fleet = Fleet(cluster, registry, unique, tmp_path)
    v100 = fleet.push("1.0.0")
    for name in STAGING[:2]:
        fleet.attest(v100, name, signer="staging-eu-1")
    unbound = fleet.canary(minClusters=2, secretRef={"name": "shared-key"})
    fleet.secret(CANARY, "shared-key", {"fleet.pub": (tmp_path / "staging-eu-1.pub").read_bytes()})
    refused = fleet.run(unbound)
    assert refused.error is not None and refused.error.exit_code == ExitCode.USAGE, refused.error
    secret = f"Secret/{fleet.ns(CANARY, 'runner')}/shared-key"
    message = refused.error.message
    assert secret in message and "fleet.pub" in message and "<clusterName>.pub" in message, message
    assert "bindKeysToClusters: false" in message, message
    assert fleet.applied(CANARY) is None  # nothing applied on one key's word
    reconciled = cli(cluster, "--config", str(unbound))
    assert reconciled.code == 2 and secret in reconciled.err, reconciled.err

    # said explicitly: one key shared by the stage counts for every cluster, without a warning
    shared = fleet.canary(minClusters=2, secretRef={"name": "shared-key"}, bindKeysToClusters=False)
    with caplog.at_level("WARNING"):
        assert fleet.run(shared).error is None and fleet.applied(CANARY) == "1.0.0"
    assert not [r for r in caplog.records if "bound to no cluster" in r.getMessage()]
