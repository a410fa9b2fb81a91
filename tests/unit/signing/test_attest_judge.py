"""``attest.judge``: the verdicts on bundles already read, remembered with a cache, and a key
set that tries the key a bundle's hint names first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from lockgate.registry.cache import RegistryCache
from lockgate.signing import attest, keys, store
from lockgate.signing.policy import KeyPolicy, KeySetPolicy

DIGEST = "sha256:" + "ab" * 32


def bundled(key: keys.PrivateKey, cluster: str, *, manifest: str) -> store.StoredBundle:
    predicate = {"cluster": cluster, "healthyAt": "2025-01-01T00:00:00Z"}
    payload = attest.statement_bytes("registry.example/app", DIGEST, attest.HEALTHY, predicate)
    return store.StoredBundle(manifest, attest.key_bundle(payload, key), DIGEST)


def new_key() -> keys.PrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture
def signature_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real: Callable[..., Any] = keys.check_signature

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(keys, "check_signature", counting)
    return calls


def test_a_key_set_tries_the_key_the_hint_names_first(signature_checks: list[int]) -> None:
    signers = [new_key() for _ in range(12)]
    policy = KeySetPolicy(tuple(KeyPolicy(k.public_key(), source=f"k{i}") for i, k in enumerate(signers)))
    bundles = [bundled(k, f"c{i}", manifest=f"sha256:{i:064x}") for i, k in enumerate(signers)]
    found = attest.judge(bundles, DIGEST, policy, cache=None)
    assert sorted(a.predicate["cluster"] for a in found.attestations) == sorted(f"c{i}" for i in range(12))
    assert [a.signer.split("(")[1] for a in found.attestations] == [f"k{i})" for i in range(12)]
    assert signature_checks[0] == 12  # one per bundle, not one per key tried


def test_a_foreign_key_is_still_tried_against_every_key(signature_checks: list[int]) -> None:
    policy = KeySetPolicy(tuple(KeyPolicy(new_key().public_key(), source=f"k{i}") for i in range(3)))
    found = attest.judge([bundled(new_key(), "x", manifest="sha256:" + "0" * 64)], DIGEST, policy, cache=None)
    assert found.attestations == [] and "not signed by" in found.refused[0].reason
    assert signature_checks[0] == 3


def test_with_a_cache_a_bundle_is_judged_once_per_policy(signature_checks: list[int]) -> None:
    mine, other = new_key(), new_key()
    bundles = [
        bundled(mine, "a", manifest="sha256:" + "1" * 64),
        bundled(other, "b", manifest="sha256:" + "2" * 64),
    ]
    cache = RegistryCache()
    policy = KeyPolicy(mine.public_key(), source="mine.pub")
    first = attest.judge(bundles, DIGEST, policy, cache=cache)
    again = attest.judge(bundles, DIGEST, KeyPolicy(mine.public_key(), source="mine.pub"), cache=cache)
    assert first == again and [a.predicate["cluster"] for a in again.attestations] == ["a"]
    assert len(again.refused) == 1
    assert signature_checks[0] == 2
    # the same key under another name is another policy: its signer line differs
    renamed = attest.judge(
        bundles, DIGEST, KeyPolicy(mine.public_key(), source="other-name.pub"), cache=cache
    )
    assert renamed.attestations[0].signer.endswith("(other-name.pub)")
    assert signature_checks[0] == 4


def test_a_bundle_that_could_not_be_read_is_judged_again(signature_checks: list[int]) -> None:
    cache = RegistryCache()
    broken = store.StoredBundle("sha256:" + "3" * 64, None, None, problem="unreadable: blob not found")
    policy = KeyPolicy(new_key().public_key())
    for _ in range(2):
        found = attest.judge([broken], DIGEST, policy, cache=cache)
        assert found.refused[0].reason.endswith("unreadable: blob not found")
    assert cache.stats.derived_misses == 0 and cache.stats.derived_hits == 0
