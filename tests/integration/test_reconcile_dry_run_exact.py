"""`--dry-run` reports exactly what the real pass will do, field by field, also when the
pass takes fields over from kubectl (the dry run cannot chain the takeover, so the fields
only kubectl set, which the real pass removes, are shown removed)."""

from __future__ import annotations

import pytest

from tests.integration.reconcile_support import configmap, dump, get, namespace, push_tree, run_pass
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def _changes(result: object) -> dict[str, list[tuple[str, object, object]]]:
    entries = result.changeset.entries  # type: ignore[attr-defined]
    return {str(e.key): sorted((c.path, c.before, c.after) for c in e.changes) for e in entries if e.changes}


@pytest.mark.parametrize("how", ["edit", "client-side apply"])
def test_dry_run_shows_the_fields_the_takeover_removes(
    how: str, cluster: Cluster, registry: Registry, unique: str
) -> None:
    runner = f"{unique}-runner"
    url = push_tree(
        registry, unique, {"a.yaml": dump(namespace(unique), configmap("cfg", unique, {"k": "1"}))}
    )
    assert run_pass(cluster, url, unique, runner).error is None
    if how == "edit":
        cluster.kubectl(
            "patch",
            "configmap",
            "cfg",
            "-n",
            unique,
            "--type=merge",
            "-p",
            '{"metadata":{"labels":{"team":"ops"}},"data":{"k":"edited","extra":"x"}}',
        )
    else:
        cluster.kubectl(
            "apply",
            "-f",
            "-",
            input=dump(configmap("cfg", unique, {"k": "client", "extra": "x"}, labels={"team": "ops"})),
        )
    before = get(cluster, "configmap", "cfg", unique)
    dry = run_pass(cluster, url, unique, runner, dry_run=True)
    assert dry.error is None, dry.error
    predicted = _changes(dry)
    after_dry = get(cluster, "configmap", "cfg", unique)
    assert after_dry is not None and before is not None
    assert (
        after_dry["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    )  # nothing written
    real = run_pass(cluster, url, unique, runner)
    assert real.error is None, real.error
    assert predicted == _changes(real), (predicted, _changes(real))
    key = f"ConfigMap/{unique}/cfg"
    paths = {path for path, _, _ in predicted[key]}
    assert {"data.extra", "metadata.labels.team"} <= paths, predicted
    live = get(cluster, "configmap", "cfg", unique)
    assert (
        live is not None
        and live["data"] == {"k": "1"}
        and "team" not in (live["metadata"].get("labels") or {})
    )
