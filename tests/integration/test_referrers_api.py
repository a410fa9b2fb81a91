"""Attestations, the fleet view and quorum promotion over the OCI referrers API, paged and
revalidated, against go-containerregistry's registry (``tests/world/referrers_registry.py``).

The world's Distribution has no referrers API, so the other attestation tests run through the
tag-schema fallback. Here the registry answers the API: go-containerregistry v0.22.1's
``pkg/registry`` with referrers on, behind a front of ours that pages the list (10 a page, a
``Link`` to the next), answers ETags and corrects ``artifactType``, which the registry itself
reports wrongly (``test_go_containerregistry_reports_the_config_media_type_as_artifact_type``
says so). Twenty-five clusters attest one release, so its referrers list is three pages.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from lockgate import registry
from lockgate.registry.cache import RegistryCache
from lockgate.signing import attest, layout
from lockgate.signing.policy import KeyPolicy, KeySetPolicy
from runner.pipeline import source
from tests.integration.reconcile_support import LOCKGATE, configmap, dump, push_tree
from tests.world.referrers_registry import ReferrersRegistry

pytestmark = pytest.mark.world

CLUSTERS = tuple(f"fleet-{n:02d}" for n in range(25))


class Fleet:
    """Runners' keys, and what they attested (over the API) of one repository's releases."""

    def __init__(self, reg: ReferrersRegistry, repo: str, tmp_path: Path) -> None:
        self.reg, self.repo, self.tmp = reg, repo, tmp_path
        self.url = reg.oci(repo)
        self.keys = {name: ec.generate_private_key(ec.SECP256R1()) for name in CLUSTERS}

    def client(self, *, cache: RegistryCache | None = None) -> registry.RegistryClient:
        return registry.RegistryClient.for_reference(registry.parse(self.url), cache=cache)

    def attest(self, name: str, digest: str, key: ec.EllipticCurvePrivateKey | None = None) -> None:
        predicate = attest.health_predicate(
            cluster=name,
            sync="app",
            revision=digest,
            healthy=True,
            at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5),
            objects={"total": 1, "current": 1},
        )
        attest.attest_with_key(
            f"{self.url}@{digest}",
            key or self.keys[name],
            predicate_type=attest.HEALTHY,
            predicate=predicate,
            client=self.client(),
        )

    def policy(self) -> KeySetPolicy:
        return KeySetPolicy(
            tuple(KeyPolicy(k.public_key(), source=f"{n}.pub") for n, k in self.keys.items()), source="fleet"
        )

    def pub(self, name: str) -> Path:
        path = self.tmp / f"{name}.pub"
        if not path.exists():
            path.write_bytes(
                self.keys[name]
                .public_key()
                .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            )
        return path


@pytest.fixture
def released(referrers_registry: ReferrersRegistry, unique: str, tmp_path: Path) -> tuple[Fleet, str]:
    """1.0.0 pushed and attested healthy by all 25 clusters; returns the fleet and its digest."""
    fleet = Fleet(referrers_registry, unique, tmp_path)
    url = push_tree(
        referrers_registry, unique, {"app.yaml": dump(configmap("app", "default", {"v": "1"}))}, "1.0.0"
    )
    digest = url.rsplit("@", 1)[1]
    for name in CLUSTERS:
        fleet.attest(name, digest)
    return fleet, digest


def test_attestations_are_written_and_read_over_every_page_of_the_api(
    referrers_registry: ReferrersRegistry, released: tuple[Fleet, str]
) -> None:
    fleet, digest = released
    before = referrers_registry.counts().get("referrers", 0)
    listed = fleet.client().referrers(fleet.repo, digest)
    assert listed.from_api and len(listed.manifests) == len(CLUSTERS)
    assert {m.artifact_type for m in listed.manifests} == {layout.BUNDLE_MEDIA_TYPE}
    # three pages of ten, each a request following the previous page's Link
    assert referrers_registry.counts()["referrers"] - before == 3
    # written as referrers only: no writer kept a fallback index
    assert fleet.client().head_manifest(fleet.repo, layout.referrers_tag(digest)) is None
    found = attest.read(fleet.client(), fleet.repo, digest, fleet.policy())
    assert sorted(a.predicate["cluster"] for a in found.attestations) == list(CLUSTERS)


def test_go_containerregistry_reports_the_config_media_type_as_artifact_type(
    referrers_registry: ReferrersRegistry, released: tuple[Fleet, str]
) -> None:
    """OCI 1.1: a referrer's artifactType is its manifest's ``artifactType``, else its config's
    media type. go-containerregistry v0.22.1 reports the config's (``application/vnd.oci.empty.v1+json``
    for cosign v3 bundles) and answers every referrer on one page: the front corrects the first
    and pages the list. When this fails, the registry got it right: drop the correction from
    tests/world/referrers_registry.go."""
    fleet, digest = released
    raw = requests.get(f"http://{referrers_registry.raw_host}/v2/{fleet.repo}/referrers/{digest}", timeout=10)
    assert raw.status_code == 200 and "Link" not in raw.headers
    reported = {m["artifactType"] for m in raw.json()["manifests"]}
    assert reported == {layout.OCI_EMPTY} and len(raw.json()["manifests"]) == len(CLUSTERS)
    # what that would cost lockgate unworked-around: the bundles go unseen
    on_raw = registry.RegistryClient.for_reference(registry.parse(f"oci://{referrers_registry.raw_host}/x"))
    assert on_raw.referrers(fleet.repo, digest).of_type(layout.BUNDLE_MEDIA_TYPE) == []


def test_a_cached_client_revalidates_every_page_with_its_etag(
    referrers_registry: ReferrersRegistry, released: tuple[Fleet, str]
) -> None:
    fleet, digest = released
    cache = RegistryCache()
    client = fleet.client(cache=cache)
    first = client.referrers(fleet.repo, digest)
    counts = referrers_registry.counts()
    again = client.referrers(fleet.repo, digest)
    after = referrers_registry.counts()
    assert again == first
    assert after["referrers"] - counts["referrers"] == 3
    assert after.get("referrers 304", 0) - counts.get("referrers 304", 0) == 3  # nothing re-sent
    late = ec.generate_private_key(ec.SECP256R1())
    fleet.attest("fleet-late", digest, key=late)
    changed = client.referrers(fleet.repo, digest)
    assert len(changed.manifests) == len(CLUSTERS) + 1
    assert {m.digest for m in first.manifests} < {m.digest for m in changed.manifests}


def test_quorum_promotion_waits_for_the_quorum_read_over_the_api(released: tuple[Fleet, str]) -> None:
    fleet, digest = released
    url = fleet.url
    push_tree(fleet.reg, fleet.repo, {"app.yaml": dump(configmap("app", "default", {"v": "2"}))}, "1.1.0")

    def quorum(minimum: int) -> source.SourceSpec:
        wanted = source.AttestationSpec(
            cluster=None, policy=fleet.policy(), clusters=("fleet-*",), min_clusters=minimum
        )
        return source.SourceSpec(url=url, semver=">=1.0.0", insecure_skip_verify=True, attestations=(wanted,))

    client = fleet.client(cache=RegistryCache())
    # 1.1.0 has no attestation: the newest with the quorum is 1.0.0, whose 25 are on three pages
    assert source.current_digest(quorum(len(CLUSTERS)), client) == digest
    one_more = quorum(len(CLUSTERS) + 1)
    with pytest.raises(source.Waiting) as waiting:
        source.choose(one_more, client, source.requirements(one_more, None))
    assert waiting.value.digest != digest  # the newest waits; 1.0.0 is not chosen either
    # the clusters it names as missing are the 25 that attested 1.0.0: all three pages were read
    said = str(waiting.value)
    assert f"0/{len(CLUSTERS) + 1} of fleet-* healthy; missing fleet-00, " in said, said
    assert said.endswith(f"and {len(CLUSTERS) - 10} more"), said


def test_the_fleet_view_reads_the_api(released: tuple[Fleet, str]) -> None:
    fleet, digest = released
    keys = [f"--key={fleet.pub(name)}" for name in CLUSTERS]
    shown = subprocess.run(
        [*LOCKGATE, "fleet", fleet.url, *keys, "-o", "json"], capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["clusters"] == list(CLUSTERS)
    [row] = doc["revisions"]
    assert (row["revision"], row["digest"]) == ("1.0.0", digest)
    assert {cell["state"] for cell in row["clusters"].values()} == {"healthy"}
