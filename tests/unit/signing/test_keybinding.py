"""Keys bound to the clusters they may attest for (``keybinding``, ``attest.judge``): which
Secret entries are bound, the refusal of an attestation claiming another cluster, and the
warning about unbound keys in a quorum. Real keys and signatures; the bundles are judged as
read (tests/integration/test_quorum.py stores them in the world's registry)."""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from lockgate.signing import attest, keybinding, keys, quorum, store
from lockgate.signing.policy import KeyPolicy, KeySetPolicy

DIGEST = "sha256:" + "cd" * 32
SECRET = "Secret/runners/staging-keys"
NOW = dt.datetime(2025, 1, 2, tzinfo=dt.UTC)


def new_key() -> keys.PrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def pem(key: keys.PrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def bundled(key: keys.PrivateKey, cluster: str, number: int) -> store.StoredBundle:
    predicate = {"cluster": cluster, "healthyAt": "2025-01-01T00:00:00Z"}
    payload = attest.statement_bytes("registry.example/app", DIGEST, attest.HEALTHY, predicate)
    return store.StoredBundle(f"sha256:{number:064x}", attest.key_bundle(payload, key), DIGEST)


STAGING = ("staging-a", "staging-b", "staging-c")
KEYS = {name: new_key() for name in (*STAGING, "fleet", "ops")}


def key_set(
    *entries: str, bind: bool | None = None, clusters: tuple[str, ...] = ("staging-*",)
) -> KeySetPolicy:
    pems = {f"{name}.pub": pem(KEYS[name]) for name in entries}
    selects = keybinding.selector(clusters=clusters)
    return keybinding.key_set(pems, source=SECRET, bind=bind, selects=selects)


def test_a_secret_with_an_entry_named_after_a_selected_cluster_binds_every_entry() -> None:
    policy = key_set("staging-a", "staging-b", "fleet")
    assert [(k.source, k.cluster) for k in policy.keys] == [
        (f"{SECRET}[fleet.pub]", "fleet"),  # a Secret of cluster keys: it attests for "fleet" only
        (f"{SECRET}[staging-a.pub]", "staging-a"),
        (f"{SECRET}[staging-b.pub]", "staging-b"),
    ]
    # no entry named after a selected cluster: any key for any cluster, as before
    assert [k.cluster for k in key_set("staging-a", "fleet", clusters=("prod-*",)).keys] == [None, None]
    assert [k.cluster for k in key_set("fleet", bind=True).keys] == ["fleet"]
    assert [k.cluster for k in key_set("staging-a", "fleet", bind=False).keys] == [None, None]
    # the one-cluster form selects its cluster: every runner's key in one Secret is bound
    one = keybinding.selector(cluster="staging-a")
    assert keybinding.bound_to(["staging-a.pub", "staging-b.pub"], bind=None, selects=one) == {
        "staging-a.pub": "staging-a",
        "staging-b.pub": "staging-b",
    }
    assert keybinding.bound_to(["cosign.pub"], bind=None, selects=one) == {"cosign.pub": None}


def test_a_bound_key_attesting_for_another_cluster_is_refused_and_named() -> None:
    bundles = [
        bundled(KEYS["staging-a"], "staging-a", 1),
        bundled(KEYS["staging-a"], "staging-b", 2),  # staging-a's runner claims staging-b
        bundled(KEYS["staging-c"], "staging-c", 3),
    ]
    found = attest.judge(bundles, DIGEST, key_set(*STAGING), cache=None)
    assert sorted(a.predicate["cluster"] for a in found.attestations) == ["staging-a", "staging-c"]
    (refusal,) = found.refused
    assert refusal.claimed_cluster == "staging-b"
    assert refusal.reason == (
        f"referrer sha256:{2:064x}: signed by the key for staging-a ({SECRET}[staging-a.pub]), "
        "claims staging-b"
    )
    counted = quorum.tally(quorum.Quorum(quorum.Selection(("staging-*",)), min_clusters=3), found, now=NOW)
    assert not counted.met and counted.healthy == ("staging-a", "staging-c")
    assert counted.reason == (
        "2/3 of staging-* healthy; missing staging-b (refused: signed by the key for staging-a "
        f"({SECRET}[staging-a.pub]), claims staging-b)"
    )


def test_today_without_a_binding_any_key_of_the_set_counts_for_any_cluster() -> None:
    forged = [bundled(KEYS["staging-a"], name, n) for n, name in enumerate(STAGING)]
    for policy in (key_set(*STAGING, bind=False), key_set("fleet", *STAGING, clusters=("prod-*",))):
        found = attest.judge(forged, DIGEST, policy, cache=None)
        assert sorted(a.predicate["cluster"] for a in found.attestations) == list(STAGING)


def test_an_unbound_key_and_the_same_key_bound_twice_still_count() -> None:
    shared = {f"{name}.pub": pem(KEYS["fleet"]) for name in ("fleet", "staging-a", "staging-b")}
    policy = keybinding.key_set(shared, source=SECRET, bind=True, selects=keybinding.selector())
    claims = [bundled(KEYS["fleet"], "staging-b", 1), bundled(KEYS["fleet"], "staging-c", 2)]
    found = attest.judge(claims, DIGEST, policy, cache=None)
    # one key listed as staging-a.pub and staging-b.pub may attest for both, and for nothing else
    assert [a.signer.rsplit("[", 1)[1] for a in found.attestations] == ["staging-b.pub])"]
    assert "signed by the key for fleet" in found.refused[0].reason
    unbound = KeySetPolicy((KeyPolicy(KEYS["fleet"].public_key(), "fleet.pub"),))
    anything = attest.judge([bundled(KEYS["fleet"], "anything", 3)], DIGEST, unbound, cache=None)
    assert len(anything.attestations) == 1


def test_the_binding_is_part_of_a_cached_verdict() -> None:
    from lockgate.registry.cache import RegistryCache

    cache = RegistryCache()
    claim = [bundled(KEYS["staging-a"], "staging-b", 7)]
    loose = attest.judge(claim, DIGEST, key_set(*STAGING, bind=False), cache=cache)
    bound = attest.judge(claim, DIGEST, key_set(*STAGING), cache=cache)
    assert len(loose.attestations) == 1 and bound.attestations == [] and len(bound.refused) == 1


@pytest.mark.parametrize(
    ("entries", "quorum_", "bind", "warned"),
    [
        (("staging-a", "staging-b"), True, None, None),  # every key bound
        (("fleet", "staging-a"), True, None, None),  # a Secret of cluster keys: fleet.pub is "fleet"'s
        (("fleet",), True, None, f"{SECRET}[fleet.pub] is bound to no cluster: it is trusted"),
        (("fleet", "ops"), True, None, f"{SECRET}[fleet.pub], {SECRET}[ops.pub] are bound to no cluster"),
        (("fleet",), True, False, None),  # one shared key, asked for
        (("fleet", "ops"), False, None, None),  # one cluster: its attester's keys
    ],
)
def test_unbound_keys_are_warned_about_in_a_quorum(
    entries: tuple[str, ...], quorum_: bool, bind: bool | None, warned: str | None
) -> None:
    one, many = keybinding.selector(cluster="staging-a"), keybinding.selector(clusters=("staging-*",))
    selects = many if quorum_ else one
    pems = {f"{name}.pub": pem(KEYS[name]) for name in entries}
    policy = keybinding.key_set(pems, source=SECRET, bind=bind, selects=selects)
    warning = keybinding.unbound_warning(policy, quorum=quorum_, bind=bind)
    if warned is None:
        assert warning is None
    else:
        assert warning is not None and warning.startswith(warned)
        assert "name each entry <clusterName>.pub" in warning and "bindKeysToClusters: true" in warning


@pytest.mark.parametrize(
    ("entries", "bind", "min_clusters", "refused"),
    [
        (("fleet",), None, 2, "its entry fleet.pub is"),
        (("fleet", "ops"), None, 3, "its entries fleet.pub, ops.pub are"),
        (("fleet",), False, 2, None),  # one shared key, said in so many words
        (("fleet",), None, 1, None),  # one cluster: any of its attester's keys (warned about)
        (("fleet",), True, 2, None),  # bound to a cluster "fleet": counts for nothing else
        (("staging-a", "fleet"), None, 2, None),  # a Secret of cluster keys: every entry bound
    ],
)
def test_a_quorum_of_more_than_one_over_unbound_keys_is_refused(
    entries: tuple[str, ...], bind: bool | None, min_clusters: int, refused: str | None
) -> None:
    said = keybinding.unbound_refusal(key_set(*entries, bind=bind), min_clusters=min_clusters, bind=bind)
    if refused is None:
        assert said is None
    else:
        assert said is not None and said.startswith(f"{SECRET}: {refused}"), said
        assert "<clusterName>.pub" in said and "bindKeysToClusters: false" in said
