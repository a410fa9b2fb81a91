"""The diff engine on a 5,000-object drift pass, against deepdiff (the design card's choice).

This is the measurement behind ``lockgate.diff.fields`` being a hand walk: every drifted
object of a pass is normalised and diffed field by field, so the engine's cost scales with
the cluster. The scenario is 5,000 Deployments of two containers (ports, ten env vars,
resources) where each has two changed fields (replicas and the first container's image),
the shape of a release that bumps an image everywhere.

- ``field changes``: ``fields.field_changes`` (normalisation, Secret masks, lists of
  named items keyed by name) against ``DeepDiff(view="tree")`` on the same normalised
  pairs, the way the previous ``lockgate diff`` used it (lists by position).
- ``keyed by name``: the same, with deepdiff asked to match list items by their ``name``
  (``iterable_compare_func``), which is what a readable ``containers[name=web]`` path needs.
  deepdiff runs on a tenth of the objects here (it takes minutes otherwise) and its time is
  scaled up by ten; the note says so.

Both contenders run in turn, three rounds, median. No world is needed (``world`` unused).
"""

from __future__ import annotations

import copy
from typing import Any

from bench.common import BenchResult, best_of
from lockgate.diff import fields
from lockgate.diff.normalize import normalise

OBJECTS = 5000
ROUNDS = 3
KEYED_SAMPLE = 10  #: deepdiff keyed runs on 1/KEYED_SAMPLE of the objects


def deployment(i: int) -> dict[str, Any]:
    env = [{"name": f"SETTING_{j}", "value": str(j)} for j in range(10)]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"web-{i}", "namespace": "bench", "labels": {"app": f"web-{i}"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": f"web-{i}"}},
            "template": {
                "metadata": {"labels": {"app": f"web-{i}"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "registry.example/web:1.25",
                            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                            "env": env,
                            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                        },
                        {"name": "proxy", "image": "registry.example/proxy:3", "args": ["--port", "9090"]},
                    ]
                },
            },
        },
    }


def pairs() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    live = [deployment(i) for i in range(OBJECTS)]
    desired = []
    for obj in live:
        changed = copy.deepcopy(obj)
        changed["spec"]["replicas"] = 3
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example/web:1.26"
        desired.append(changed)
    return list(zip(live, desired, strict=True))


def _by_name(first: Any, second: Any, level: Any = None) -> bool:
    from deepdiff.helper import CannotCompare

    if isinstance(first, dict) and isinstance(second, dict) and "name" in first and "name" in second:
        return bool(first["name"] == second["name"])
    raise CannotCompare() from None


def run(world: object = None) -> list[BenchResult]:
    from deepdiff import DeepDiff

    work = pairs()
    sample = work[: OBJECTS // KEYED_SAMPLE]
    found = [fields.field_changes(a, b) for a, b in work[:1]]
    assert [c.path for c in found[0]] == [
        "spec.replicas",
        "spec.template.spec.containers[name=web].image",
    ], found

    def ours() -> None:
        for a, b in work:
            fields.field_changes(a, b)

    def deepdiff_plain() -> None:
        for a, b in work:
            DeepDiff(normalise(a), normalise(b), view="tree", verbose_level=2, threshold_to_diff_deeper=0)

    def deepdiff_keyed() -> None:
        for a, b in sample:
            DeepDiff(
                normalise(a),
                normalise(b),
                view="tree",
                verbose_level=2,
                threshold_to_diff_deeper=0,
                iterable_compare_func=_by_name,
            )

    mine = best_of(ROUNDS, ours)
    plain = best_of(ROUNDS, deepdiff_plain)
    keyed = best_of(ROUNDS, deepdiff_keyed) * KEYED_SAMPLE
    return [
        BenchResult(
            "diff",
            f"field changes, {OBJECTS} drifted objects",
            mine,
            "deepdiff (lists by position)",
            plain,
            goal="faster than deepdiff",
        ),
        BenchResult(
            "diff",
            f"keyed by name, {OBJECTS} drifted objects",
            mine,
            "deepdiff iterable_compare_func",
            keyed,
            goal="faster than deepdiff",
            extra={"deepdiff_objects_timed": len(sample), "scaled_by": KEYED_SAMPLE},
        ),
    ]


if __name__ == "__main__":
    for result in run():
        print(
            f"{result.scenario}: ours {result.ours_seconds:.2f}s, {result.peer} {result.peer_seconds:.2f}s, "
            f"ratio {result.ratio:.3f}"
        )
