"""``verify.attestations[]`` with ``clusters``, ``minClusters`` and ``maxFailures`` (issue 24):
a quorum becomes options; one that could never be met is refused at load, naming file:line
and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.errors import UsageError
from lockgate.signing import quorum
from runner.pipeline import config, source

RUNNER = "apiVersion: lockgate.dev/v1alpha1\nkind: Runner\nspec: {clusterName: production-eu-1}\n---\n"


def _file(tmp_path: Path, requirement: str) -> Path:
    path = tmp_path / "syncs.yaml"
    path.write_text(
        RUNNER + "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
        "spec:\n  url: oci://127.0.0.1:5000/web\n  semver: '>=1.0.0'\n  interval: 5m\n"
        "  verify:\n    insecureSkip: true\n    attestations:\n"
        "      - secretRef: {name: fleet-keys}\n" + requirement
    )
    return path


def _requirement(path: Path) -> source.AttestationSpec:
    (sync,) = config.load(path).syncs
    (found,) = sync.source.attestations
    return found


def test_a_quorum_becomes_options(tmp_path: Path) -> None:
    found = _requirement(
        _file(
            tmp_path,
            "        clusters: [staging-*, production-canary]\n        minClusters: 3\n"
            "        maxFailures: 1\n        minAge: 1h\n",
        )
    )
    assert (found.cluster, found.clusters, found.min_clusters, found.max_failures) == (
        None,
        ("staging-*", "production-canary"),
        3,
        1,
    )
    assert (found.own_cluster, found.min_age) == ("production-eu-1", 3600)


def test_names_alone_default_to_all_of_them_less_its_own(tmp_path: Path) -> None:
    found = _requirement(_file(tmp_path, "        clusters: [production-canary, production-eu-1]\n"))
    assert found.min_clusters == 1  # production-eu-1 is this runner: it never counts
    assert quorum.Selection(found.clusters, own=found.own_cluster).names == ("production-canary",)


@pytest.mark.parametrize(
    ("requirement", "line", "message"),
    [
        (
            "        clusters: [staging-eu-1, staging-eu-2]\n        minClusters: 3\n",
            17,
            "spec.verify.attestations[0].minClusters: 3 is more than the 2 cluster(s) listed: "
            "it could never be met",
        ),
        (
            "        clusters: [production-canary, production-eu-1]\n        minClusters: 2\n",
            17,
            "spec.verify.attestations[0].minClusters: 2 is more than the 1 cluster(s) listed "
            "(production-eu-1 is this Runner's own clusterName, which never counts): it could never be met",
        ),
        (
            "        clusters: [staging-*]\n",
            15,
            "spec.verify.attestations[0].minClusters: set how many of staging-* must attest healthy "
            "(clusters holds a pattern)",
        ),
        (
            "        clusters: [staging-a]\n        cluster: staging-b\n",
            16,
            "spec.verify.attestations[0].clusters: set cluster (one cluster) or clusters (a quorum), "
            "not both",
        ),
        (
            "        cluster: staging\n        minClusters: 2\n",
            17,
            "spec.verify.attestations[0].minClusters: applies to a quorum: list the clusters in clusters",
        ),
        (
            "        cluster: staging\n        maxFailures: 1\n",
            17,
            "spec.verify.attestations[0].maxFailures: applies to a quorum: list the clusters in clusters",
        ),
        (
            "        clusters: [staging-a]\n        predicateType: https://example.com/qa/v1\n",
            16,
            "spec.verify.attestations[0].clusters: a quorum applies to health attestations only",
        ),
        (
            "        clusters: ['staging a', staging-b]\n        minClusters: 1\n",
            16,
            "spec.verify.attestations[0].clusters[0]: 'staging a' can never match a clusterName",
        ),
        (
            "        clusters: [production-eu-1]\n",
            16,
            "spec.verify.attestations[0].clusters: lists no cluster but this Runner's own",
        ),
        (
            "        cluster: production-eu-1\n",
            16,
            "spec.verify.attestations[0].cluster: production-eu-1 is this Runner's own clusterName",
        ),
        ("        clusters: [staging-*]\n        minClusters: 0\n", 17, "minClusters"),
        (
            "        clusters: [staging-*]\n        minClusters: 1\n        maxFailures: -1\n",
            18,
            "maxFailures",
        ),
    ],
)
def test_a_quorum_that_cannot_be_met_is_refused_at_load(
    tmp_path: Path, requirement: str, line: int, message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        config.load(_file(tmp_path, requirement))
    assert f"syncs.yaml:{line}: " in caught.value.message
    assert message in caught.value.message


def test_bind_keys_to_clusters_becomes_options(tmp_path: Path) -> None:
    found = _requirement(_file(tmp_path, "        clusters: [staging-*]\n        minClusters: 2\n"))
    assert found.bind_keys is None  # unset: the entries named after a selected cluster
    bound = "        clusters: [staging-*]\n        minClusters: 2\n        bindKeysToClusters: true\n"
    strict = _requirement(_file(tmp_path, bound))
    assert strict.bind_keys is True


def test_bind_keys_to_clusters_without_a_secret_of_keys_is_refused(tmp_path: Path) -> None:
    from lockgate.signing import keys

    key = tmp_path / "fleet.pub"
    key.write_bytes(keys.generate_key_pair(b"x").public_pem)
    path = _file(tmp_path, "")
    path.write_text(
        path.read_text().replace(
            "      - secretRef: {name: fleet-keys}\n",
            f"      - key: {key}\n        cluster: staging-a\n        bindKeysToClusters: true\n",
        )
    )
    with pytest.raises(UsageError) as refused:
        config.load(path)
    assert (
        f"{path}:17: Sync/web: spec.verify.attestations[0].bindKeysToClusters applies to secretRef"
        in refused.value.message
    )


def _one_key(tmp_path: Path, quorum: str) -> Path:
    from lockgate.signing import keys

    key = tmp_path / "fleet.pub"
    key.write_bytes(keys.generate_key_pair(b"x").public_pem)
    path = _file(tmp_path, "")
    path.write_text(
        path.read_text().replace("      - secretRef: {name: fleet-keys}\n", f"      - key: {key}\n{quorum}")
    )
    return path


def test_a_quorum_of_more_than_one_over_one_key_file_is_refused_unless_shared_is_said(tmp_path: Path) -> None:
    path = _one_key(tmp_path, "        clusters: [staging-*]\n        minClusters: 2\n")
    with pytest.raises(UsageError) as refused:
        config.load(path)
    said = refused.value.message
    assert f"{path}:15: Sync/web: spec.verify.attestations[0]: a quorum checked against one key (key)" in said
    assert "bindKeysToClusters: false" in said
    shared = _one_key(
        tmp_path, "        clusters: [staging-*]\n        minClusters: 2\n        bindKeysToClusters: false\n"
    )
    (sync,) = config.load(shared).syncs
    assert sync.source.warnings == ()


def test_a_quorum_of_one_over_one_key_file_is_warned_about(tmp_path: Path) -> None:
    (sync,) = config.load(_one_key(tmp_path, "        clusters: [staging-*]\n        minClusters: 1\n")).syncs
    (warning,) = sync.source.warnings
    assert "a quorum checked against one key (key) trusts it for every cluster of staging-*" in warning
