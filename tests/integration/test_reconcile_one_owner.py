"""One object, one owner: an object another sync's ApplySet holds is refused, naming that
sync, instead of being taken back and forth on every pass; `lockgate.dev/adopt: enabled`
takes it over explicitly (kapp refuses such conflicts; Flux does not)."""

from __future__ import annotations

import pytest

from runner.plan import applyset
from tests.integration.reconcile_support import actions, configmap, dump, get, namespace, push_tree, run_pass
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def test_a_second_sync_is_refused_then_adopts_explicitly(
    cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner_ns = f"{unique}-runner"
    shared = configmap("shared", unique, {"from": "first"})
    first_url = push_tree(registry, f"{unique}-a", {"all.yaml": dump(namespace(unique), shared)}, tag="v1")
    first = run_pass(cluster, first_url, f"{unique}-a", runner_ns)
    assert first.error is None, first.error

    other = configmap("shared", unique, {"from": "second"})
    own = configmap("own", unique, {"k": "v"})
    second_url = push_tree(registry, f"{unique}-b", {"all.yaml": dump(own, other)}, tag="v1")
    refused = run_pass(cluster, second_url, f"{unique}-b", runner_ns)
    assert refused.error is not None
    message = refused.error.message
    assert f"ConfigMap/{unique}/shared" in message and f"Sync {unique}-a" in message, message
    assert "lockgate.dev/adopt: enabled" in message, message
    live = get(cluster, "configmap", "shared", unique)
    assert live is not None and live["data"] == {"from": "first"}
    assert get(cluster, "configmap", "own", unique) is None  # nothing of that stage was applied
    dry = run_pass(cluster, second_url, f"{unique}-b", runner_ns, dry_run=True)
    assert dry.error is not None and f"Sync {unique}-a" in dry.error.message

    adopting = configmap("shared", unique, {"from": "second"}, annotations={"lockgate.dev/adopt": "enabled"})
    adopt_url = push_tree(registry, f"{unique}-b", {"all.yaml": dump(own, adopting)}, tag="v2")
    taken = run_pass(cluster, adopt_url, f"{unique}-b", runner_ns)
    assert taken.error is None, taken.error
    assert actions(taken)[f"ConfigMap/{unique}/shared"] == "configured"
    live = get(cluster, "configmap", "shared", unique)
    assert live is not None and live["data"] == {"from": "second"}
    assert live["metadata"]["labels"][applyset.PART_OF_LABEL] == applyset.applyset_id(
        f"lockgate-{unique}-b", runner_ns
    )
    again = run_pass(cluster, first_url, f"{unique}-a", runner_ns)
    assert again.error is not None and f"Sync {unique}-b" in again.error.message
