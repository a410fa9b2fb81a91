"""History and rollback against real controllers: five revisions kept, an unhealthy digest rolled
back and not applied again, a person's retry, ``lockgate rollback``, healthChecks on other objects."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.signing import keys, sign
from runner.pipeline.reconcile import ObjectRef
from runner.plan.history import Outcome, Summary
from tests.integration.history_support import inventory, lockgate, options, run, sync_file
from tests.integration.reconcile_support import (
    configmap,
    deployment,
    dump,
    events_of,
    get,
    namespace,
    push_tree,
)
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

STUCK = {"no-such-node": "true"}


def by_tag(pinned: str) -> str:
    return pinned.rsplit("@", 1)[0]


def digest(pinned: str) -> str:
    return pinned.rsplit("@", 1)[1]


def test_the_history_keeps_the_last_five_revisions(cluster: Cluster, registry: Registry, unique: str) -> None:
    runner = f"{unique}-r"
    pushed = []
    for i in range(6):
        url = push_tree(
            registry, unique, {"a.yaml": dump(namespace(unique), configmap("c", unique, {"k": str(i)}))}
        )
        pushed.append(url)
        assert run(cluster, options(by_tag(url), unique, runner, wait=True)).error is None
    assert run(cluster, options(by_tag(pushed[-1]), unique, runner, wait=True)).error is None
    kept = inventory(cluster, unique, runner).history
    again = run(cluster, options(by_tag(pushed[-1]), unique, runner, wait=True))
    assert again.error is None and again.requests.get("patch", 0) == 0, again.requests  # nothing to record
    assert inventory(cluster, unique, runner).history == kept
    assert [e.digest for e in kept] == [digest(u) for u in reversed(pushed[1:])]
    assert [e.revision for e in kept] == [f"latest@{digest(u)}" for u in reversed(pushed[1:])]
    assert {(e.result, e.health, e.verified_by) for e in kept} == {
        (Outcome.SUCCEEDED, Summary.HEALTHY, "nobody (--insecure-skip-verify)")
    }
    assert kept[0].time.endswith("Z") and kept[0].time >= kept[-1].time
    assert kept[0].message == "2 unchanged; 2 objects healthy"


@pytest.mark.full
def test_an_unhealthy_new_digest_is_rolled_back_and_not_applied_again(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-r"
    good = push_tree(
        registry,
        unique,
        {"a.yaml": dump(namespace(unique), deployment("web", unique), configmap("cfg", unique, {"k": "1"}))},
    )
    sync = options(
        by_tag(good), unique, runner, wait=True, prune=True, timeout="90s", rollback="onHealthFailure"
    )
    first = run(full_cluster, sync)
    assert first.error is None, first.error
    bad = push_tree(
        registry,
        unique,
        {
            "a.yaml": dump(
                namespace(unique),
                deployment("web", unique, node_selector=STUCK, deadline=5),
                configmap("cfg", unique, {"k": "2"}),
                configmap("added", unique, {}),
            )
        },
    )
    failed = run(full_cluster, sync)
    assert failed.error is not None and int(failed.error.exit_code) == 6
    good_rev, bad_rev = f"latest@{digest(good)}", f"latest@{digest(bad)}"
    assert failed.error.message.startswith(
        f"{bad_rev} failed its health checks and was rolled back to {good_rev}"
    ), failed.error.message
    assert "Progress deadline exceeded" in failed.error.message
    assert (failed.rolled_back_from, failed.rolled_back_to) == (bad_rev, good_rev)
    assert failed.to_json()["rolledBackTo"] == good_rev
    # the cluster holds the good revision again, and what only the bad one had is pruned
    cfg = get(full_cluster, "configmap", "cfg", unique)
    assert cfg is not None and cfg["data"] == {"k": "1"}
    assert get(full_cluster, "configmap", "added", unique) is None
    web = get(full_cluster, "deployment", "web", unique)
    assert web is not None and "nodeSelector" not in web["spec"]["template"]["spec"]
    inv = inventory(full_cluster, unique, runner)
    assert (inv.digest, inv.revision, inv.rejected) == (digest(good), good_rev, [digest(bad)])
    assert [(e.digest, e.result, e.health) for e in inv.history] == [
        (digest(good), Outcome.ROLLED_BACK, Summary.HEALTHY),
        (digest(bad), Outcome.FAILED, Summary.UNHEALTHY),
        (digest(good), Outcome.SUCCEEDED, Summary.HEALTHY),
    ]
    assert inv.history[0].message.startswith(f"rolled back from {bad_rev} (failed its health checks)")
    warnings = {e["reason"]: e for e in events_of(full_cluster, unique, runner) if e["type"] == "Warning"}
    assert set(warnings) == {"HealthCheckFailed", "RolledBack"}
    assert warnings["RolledBack"]["message"].startswith(
        f"rolled back from {bad_rev} (failed its health checks): {good_rev}:"
    )

    # the tag still names the bad digest: the next pass skips it and writes nothing
    skipped = run(full_cluster, sync)
    assert skipped.error is None and skipped.digest == digest(bad)
    assert skipped.skipped == (
        f"digest {digest(bad)} was rolled back; push a new digest or run lockgate rollback/sync to retry"
    )
    assert skipped.changeset.entries == [] and skipped.requests.get("patch", 0) == 0

    # a person asks (lockgate sync's requestedAt): the digest is tried once more, and rolled back again
    retried = run(full_cluster, sync, requested_at="2030-01-01T00:00:00Z")
    assert retried.error is not None and retried.rolled_back_to == good_rev, retried.notes
    assert f"digest {digest(bad)} was rolled back before; retried because a person asked" in retried.notes
    inv = inventory(full_cluster, unique, runner)
    assert inv.handled_request == "2030-01-01T00:00:00Z" and inv.rejected == [digest(bad)]
    assert [e.result for e in inv.history[:3]] == [Outcome.ROLLED_BACK, Outcome.FAILED, Outcome.ROLLED_BACK]

    # a new digest is applied as usual
    fixed = push_tree(
        registry,
        unique,
        {"a.yaml": dump(namespace(unique), deployment("web", unique), configmap("cfg", unique, {"k": "3"}))},
    )
    assert run(full_cluster, sync).error is None
    assert inventory(full_cluster, unique, runner).history[0].digest == digest(fixed)


@pytest.mark.full
def test_without_a_healthy_revision_nothing_is_rolled_back(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-r"
    bad = push_tree(
        registry, unique, {"a.yaml": dump(namespace(unique), deployment("web", unique, node_selector=STUCK))}
    )
    result = run(
        full_cluster,
        options(by_tag(bad), unique, runner, wait=True, timeout="5s", rollback="onHealthFailure"),
    )
    assert result.error is not None and int(result.error.exit_code) == 6
    assert "timed out after 5s" in result.error.message
    assert f"not rolled back: no earlier revision of sync {unique} ran healthy" in result.error.message
    inv = inventory(full_cluster, unique, runner)
    assert inv.rejected == [] and inv.history[0].result is Outcome.FAILED


def test_rollback_by_hand(cluster: Cluster, registry: Registry, unique: str, tmp_path: Path) -> None:
    runner = f"{unique}-r"
    versions = []
    for i in range(3):
        files = {"a.yaml": dump(namespace(unique), configmap("c", unique, {"v": str(i)}))}
        versions.append(push_tree(registry, unique, files))
        assert (
            run(cluster, options(by_tag(versions[-1]), unique, runner, wait=True, prune=True)).error is None
        )
    outside = push_tree(
        registry,
        unique,
        {"a.yaml": dump(namespace(unique), configmap("c", unique, {"v": "outside"}))},
        "other",
    )
    config = sync_file(tmp_path / "sync.yaml", unique, by_tag(versions[-1]), runner, prune=True, wait=True)

    back = lockgate(cluster, "rollback", unique, "--config", str(config))
    assert back.code == 0, back.err
    assert f"rolled back: latest@{digest(versions[2])} -> latest@{digest(versions[1])}" in back.out
    live = get(cluster, "configmap", "c", unique)
    assert live is not None and live["data"] == {"v": "1"}
    inv = inventory(cluster, unique, runner)
    assert inv.rejected == [digest(versions[2])] and inv.history[0].result is Outcome.ROLLED_BACK
    assert run(cluster, options(by_tag(versions[2]), unique, runner)).skipped  # not applied again

    doc = lockgate(
        cluster, "rollback", unique, "--config", str(config), "--to", digest(versions[0]), "-o", "json"
    )
    assert doc.code == 0, doc.err
    assert (doc.json()["rolledBackFrom"], doc.json()["rolledBackTo"]) == (
        f"latest@{digest(versions[1])}",
        f"latest@{digest(versions[0])}",
    )
    live = get(cluster, "configmap", "c", unique)
    assert live is not None and live["data"] == {"v": "0"}

    # a digest from outside the history: applied because it verifies, and said so
    far = lockgate(cluster, "rollback", unique, "--config", str(config), "--to", digest(outside))
    assert far.code == 0, far.err
    assert (
        f"{digest(outside)} is not in the history of sync {unique}: applied because it passed the sync's "
        "verification (verified by nobody (spec.verify.insecureSkip))" in far.out
    )
    live = get(cluster, "configmap", "c", unique)
    assert live is not None and live["data"] == {"v": "outside"}
    assert inventory(cluster, unique, runner).history[0].revision == digest(outside)

    same = lockgate(cluster, "rollback", unique, "--config", str(config), "--to", digest(outside))
    assert same.code == 2 and f"sync {unique} already runs {digest(outside)}" in same.err
    missing = lockgate(cluster, "rollback", "no-such-sync", "--config", str(config))
    assert missing.code == 2 and "no Sync named 'no-such-sync'" in missing.err


def test_rollback_outside_the_history_only_if_it_verifies(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    pair = keys.generate_key_pair(b"pw")
    key = keys.load_private_key(pair.private_pem, b"pw")
    (tmp_path / "cosign.pub").write_bytes(pair.public_pem)
    signed = [
        push_tree(
            registry, unique, {"a.yaml": dump(namespace(unique), configmap("c", unique, {"v": str(i)}))}
        )
        for i in range(2)
    ]
    for url in signed:
        sign.sign_with_key(url, key)
    unsigned = push_tree(
        registry, unique, {"a.yaml": dump(namespace(unique), configmap("c", unique, {"v": "x"}))}, "x"
    )
    config = sync_file(tmp_path / "sync.yaml", unique, by_tag(signed[-1]), runner, prune=True)
    spec = config.read_text().replace("insecureSkip: true", f"key: {tmp_path / 'cosign.pub'}")
    config.write_text(spec)
    assert lockgate(cluster, "reconcile", "--config", str(config)).code == 0  # applies signed[1]
    refused = lockgate(cluster, "rollback", unique, "--config", str(config), "--to", digest(unsigned))
    assert refused.code == 4, refused.err
    assert (
        f"{digest(unsigned)} is not in the history of sync {unique}, and a digest from outside" in refused.err
    )
    live = get(cluster, "configmap", "c", unique)
    assert live is not None and live["data"] == {"v": "1"}
    ok = lockgate(cluster, "rollback", unique, "--config", str(config), "--to", digest(signed[0]))
    assert ok.code == 0, ok.err
    assert f"verified: key {keys.key_id(key.public_key())}" in ok.out


@pytest.mark.full
def test_health_checks_wait_for_objects_outside_the_set(
    full_cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-r"
    full_cluster.kubectl("create", "namespace", unique)
    full_cluster.kubectl("apply", "-f", "-", input=dump(deployment("db", unique, node_selector=STUCK)))
    url = push_tree(registry, unique, {"a.yaml": dump(configmap("cfg", unique, {"k": "1"}))})
    check = (ObjectRef("apps/v1", "Deployment", "db", unique),)
    sync = options(by_tag(url), unique, runner, timeout="6s", health_checks=check)
    waited = run(full_cluster, sync)
    assert waited.error is not None and int(waited.error.exit_code) == 6
    assert f"timed out after 6s waiting for 1 object(s):\n  - Deployment.apps/{unique}/db: InProgress" in (
        waited.error.message
    )
    assert get(full_cluster, "configmap", "cfg", unique) is not None  # applied, then waited for
    full_cluster.kubectl(
        "patch", "deployment", "db", "-n", unique, "--type=json",
        "-p", '[{"op":"remove","path":"/spec/template/spec/nodeSelector"}]',
    )  # fmt: skip
    healthy = run(full_cluster, sync)
    assert healthy.error is None, healthy.error
    # wait is off: only the health check is waited for, as Flux does
    assert {k: h.status.value for k, h in healthy.health.items()} == {
        f"Deployment.apps/{unique}/db": "Current"
    }
    assert inventory(full_cluster, unique, runner).history[0].health is Summary.HEALTHY


def test_rollback_substitutes_variables_as_a_pass_does(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """A rolled-back revision goes through the same preparation as a pass: postBuild variables are
    substituted, never applied as written (``${COLOUR}`` in the live object)."""
    runner = f"{unique}-r"
    versions = []
    for i in range(2):
        files = {
            "a.yaml": dump(namespace(unique), configmap("c", unique, {"v": str(i), "colour": "${COLOUR}"}))
        }
        versions.append(push_tree(registry, unique, files))
    config = sync_file(
        tmp_path / "sync.yaml",
        unique,
        by_tag(versions[-1]),
        runner,
        prune=True,
        wait=True,
        postBuild={"substitute": {"COLOUR": "blue"}},
    )
    for version in versions:
        sync = sync_file(
            tmp_path / "step.yaml",
            unique,
            version,
            runner,
            prune=True,
            wait=True,
            postBuild={"substitute": {"COLOUR": "blue"}},
        )
        step = lockgate(cluster, "reconcile", "--config", str(sync))
        assert step.code == 0, step.err
    live = get(cluster, "configmap", "c", unique)
    assert live is not None and live["data"] == {"v": "1", "colour": "blue"}

    back = lockgate(cluster, "rollback", unique, "--config", str(config))
    assert back.code == 0, back.err
    live = get(cluster, "configmap", "c", unique)
    assert live is not None and live["data"] == {"v": "0", "colour": "blue"}, live
