"""The referrers of a digest, cached by digest, against the world's registry (issue 24 item 5).

The world's registry (Distribution 2.8) has no referrers API, so every lookup reads the
tag-schema fallback index. A downstream check with a ``RegistryCache`` (``serve`` keeps one
per host and credentials) pays one HEAD of that index per digest it considers and nothing
else while nothing changed; no attestation it already verified is verified again; and a new
attestation is seen by the very next check. Five runners, each with its own key and
clusterName, attest; the downstream requires all five (five ``verify.attestations[]``
entries). Runners attesting one digest at once all stay listed in the fallback index.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from lockgate import registry
from lockgate.registry.cache import RegistryCache
from lockgate.signing import attest, keys
from lockgate.signing.policy import KeyPolicy
from runner.pipeline import source
from tests.integration.signing_support import client_for, push_artifact
from tests.world.registry import Registry

pytestmark = pytest.mark.world

RUNNERS = 5


class Fleet:
    """Runners ``eu-0`` .. ``eu-4``, each with its own key, attesting versions of one repository."""

    def __init__(self, world: Registry, repo: str) -> None:
        self.world, self.repo = world, repo
        self.keys = [new_key() for _ in range(RUNNERS)]

    def push(self, version: str) -> str:
        return push_artifact(self.world, self.repo, f"version: {version}\n".encode(), tag=version)

    def attest(self, runner: int, url: str) -> None:
        predicate = attest.health_predicate(
            cluster=f"eu-{runner}",
            sync="app",
            revision=url,
            healthy=True,
            at=dt.datetime.now(dt.UTC) - dt.timedelta(hours=1),
            objects={"total": 1, "current": 1},
        )
        attest.attest_with_key(
            url,
            self.keys[runner],
            predicate_type=attest.HEALTHY,
            predicate=predicate,
            client=client_for(self.world, self.repo),
        )

    def downstream(self) -> source.SourceSpec:
        """A sync on ``>=1.0.0`` that requires every runner's healthy attestation."""
        return source.SourceSpec(
            url=self.world.oci(self.repo),
            semver=">=1.0.0",
            insecure_skip_verify=True,
            attestations=tuple(
                source.AttestationSpec(
                    cluster=f"eu-{i}", policy=KeyPolicy(key.public_key(), source=f"eu-{i}.pub")
                )
                for i, key in enumerate(self.keys)
            ),
        )


def digest(url: str) -> str:
    return url.rsplit("@", 1)[1]


def counted_signature_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every signature check the library makes (the real check runs)."""
    calls = [0]
    real: Callable[..., Any] = keys.check_signature

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(keys, "check_signature", counting)
    return calls


def cost(
    client: registry.RegistryClient, checks: list[int], action: Callable[[], str]
) -> tuple[str, dict[str, int], int]:
    """(what ``action`` returned, the requests it sent by verb, the signature checks it made)."""
    before, verified = client.counts, checks[0]
    answer = action()
    after = client.counts
    sent = {verb: n - before.get(verb, 0) for verb, n in after.items() if n != before.get(verb, 0)}
    return answer, sent, checks[0] - verified


def test_an_unchanged_digest_costs_one_head_per_check_and_no_verification(
    registry: Registry, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = Fleet(registry, unique)
    v100 = fleet.push("1.0.0")
    for runner in range(RUNNERS):
        fleet.attest(runner, v100)
    spec = fleet.downstream()
    client = registry_client(registry, unique)
    checks = counted_signature_checks(monkeypatch)

    def check() -> str:
        return source.current_digest(spec, client)

    first, _, verified = cost(client, checks, check)
    assert first == digest(v100)
    assert verified == RUNNERS * RUNNERS  # five bundles, each judged by five single-key policies

    # nothing changed: the tag list, the tag's HEAD and the index's HEAD; nothing verified
    for _ in range(3):
        answer, sent, verified = cost(client, checks, check)
        assert (answer, sent, verified) == (digest(v100), {"get": 1, "head": 2}, 0)

    # 1.1.0 waits: per check, one more HEAD for its tag and one for its (missing) index
    v110 = fleet.push("1.1.0")
    assert cost(client, checks, check)[0] == digest(v100)
    for _ in range(3):
        answer, sent, verified = cost(client, checks, check)
        assert (answer, sent, verified) == (digest(v100), {"get": 1, "head": 4}, 0)

    # four of five attest: the changed index is read once, only the new referrers are fetched
    for runner in range(RUNNERS - 1):
        fleet.attest(runner, v110)
    answer, sent, verified = cost(client, checks, check)
    assert answer == digest(v100)
    assert sent == {"get": 1 + 1 + 2 * (RUNNERS - 1), "head": 4}
    assert verified == (RUNNERS - 1) * RUNNERS
    answer, sent, verified = cost(client, checks, check)
    assert (answer, sent, verified) == (digest(v100), {"get": 1, "head": 4}, 0)

    # the fifth arrives: the very next check chooses 1.1.0
    fleet.attest(RUNNERS - 1, v110)
    assert cost(client, checks, check)[0] == digest(v110)
    # and a client without a cache reaches the same answer, reading everything
    bare = client_for(registry, unique)
    assert source.current_digest(spec, bare) == digest(v110)
    assert bare.counts["get"] > 2 * RUNNERS


def test_runners_attesting_one_digest_at_once_all_stay_listed(registry: Registry, unique: str) -> None:
    """Without the referrers API each writer rewrites the fallback index; none may be lost."""
    writers = 16
    url = push_artifact(registry, unique)
    start = threading.Barrier(writers)
    runner_keys = [new_key() for _ in range(writers)]
    failures: list[BaseException] = []

    def runner(number: int) -> None:
        start.wait()
        try:
            attest.attest_with_key(
                url,
                runner_keys[number],
                predicate_type=attest.HEALTHY,
                predicate=attest.health_predicate(
                    cluster=f"c-{number}",
                    sync="app",
                    revision="1",
                    healthy=True,
                    at=dt.datetime.now(dt.UTC),
                    objects={},
                ),
                client=client_for(registry, unique),
            )
        except BaseException as exc:  # reported below, with the others
            failures.append(exc)

    threads = [threading.Thread(target=runner, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    listed = client_for(registry, unique).referrers(unique, digest(url))
    assert len(listed.manifests) == writers
    for number, key in enumerate(runner_keys):
        found = attest.read(client_for(registry, unique), unique, digest(url), KeyPolicy(key.public_key()))
        assert [a.predicate["cluster"] for a in found.attestations] == [f"c-{number}"]


def new_key() -> keys.PrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def registry_client(
    world: Registry, repo: str, cache: RegistryCache | None = None
) -> registry.RegistryClient:
    return registry.RegistryClient.for_reference(
        registry.parse(world.oci(repo)), cache=cache or RegistryCache()
    )


def test_no_referrers_api_is_probed_again_after_the_recheck_period(registry: Registry, unique: str) -> None:
    url = push_artifact(registry, unique)
    now = [0.0]
    cache = RegistryCache(api_recheck=3600.0, clock=lambda: now[0])
    client = registry_client(registry, unique, cache)
    assert client.referrers(unique, digest(url)).manifests == ()
    assert client.counts == {"get": 2}  # the API (404 on Distribution 2.8), then the fallback tag
    client.referrers(unique, digest(url))
    assert client.counts == {"get": 2, "head": 1}  # believed: the fallback tag's HEAD only
    now[0] = 3600.0
    client.referrers(unique, digest(url))
    assert client.counts == {"get": 4, "head": 1}  # probed again
