"""Image automation (``image.toolkit.fluxcd.io``) moved to CI: a ``lockgate images`` config
and the workflow that runs it on a schedule.

Pure. ``lockgate images`` reads Flux's three kinds unchanged (docs/images.md), so the config
is the objects themselves, without status and cluster metadata, and without the fields it
does not read (each a row). The schedule is the shortest ImageRepository interval, at
least the 5 minutes GitHub's scheduler allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runner.plan.fluximport import render
from runner.plan.fluximport.objects import FluxObject, get, parse_duration
from runner.plan.fluximport.report import Report, RowClass

KINDS = ("ImageRepository", "ImagePolicy", "ImageUpdateAutomation")
#: what ``lockgate images`` reads of each kind (docs/images.md "Fields read"), besides the
#: scheduler's fields it ignores by design (interval, sourceRef)
READ = {
    "ImageRepository": frozenset({"image", "exclusionList", "secretRef", "insecure", "provider", "interval"}),
    "ImagePolicy": frozenset(
        {"imageRepositoryRef", "policy", "filterTags", "digestReflectionPolicy", "interval"}
    ),
    "ImageUpdateAutomation": frozenset(
        {"git", "update", "policySelector", "suspend", "interval", "sourceRef"}
    ),
}
MIN_SCHEDULE = 300.0
#: the pinned lockgate workflow the snippet calls (workflows/image-updates.yml)
REUSABLE = "lockgate-dev/lockgate/.github/workflows/image-updates.yml@v1"


@dataclass(frozen=True)
class Images:
    config: str
    workflow: str


def _cron(seconds: float) -> str:
    minutes = max(int(max(seconds, MIN_SCHEDULE) // 60), 5)
    if minutes < 60:
        return f"*/{minutes} * * * *"
    hours = min(minutes // 60, 24)
    return "0 * * * *" if hours == 1 else f"0 */{hours} * * *"


def _cleaned(obj: FluxObject, report: Report) -> dict[str, Any]:
    spec = {k: v for k, v in obj.spec.items() if k in READ[obj.kind]}
    for dropped in sorted(set(obj.spec) - READ[obj.kind]):
        report.add(obj.ref, f"spec.{dropped}", RowClass.DROPPED, "lockgate images does not read it")
    if obj.kind == "ImageUpdateAutomation" and get(spec, "git", "push", "refspec"):
        git = dict(spec["git"])
        git["push"] = {k: v for k, v in git["push"].items() if k != "refspec"}
        spec["git"] = git
        report.add(
            obj.ref,
            "spec.git.push.refspec",
            RowClass.DROPPED,
            "lockgate pushes a branch (git.push.branch) only",
        )
    metadata: dict[str, Any] = {"name": obj.name, "namespace": obj.namespace}
    if obj.labels:
        metadata["labels"] = dict(sorted(obj.labels.items()))
    return {"apiVersion": obj.api_version, "kind": obj.kind, "metadata": metadata, "spec": spec}


def map_images(objects: Sequence[FluxObject], report: Report) -> Images | None:
    chosen = sorted((o for o in objects if o.kind in KINDS), key=lambda o: (KINDS.index(o.kind), o.key))
    if not chosen:
        return None
    docs = [render.Document(_cleaned(o, report), (f"from {o.ref}",)) for o in chosen]
    automations = [o for o in chosen if o.kind == "ImageUpdateAutomation"]
    for automation in automations:
        report.add(
            automation.ref,
            "spec",
            RowClass.SEMANTIC,
            "runs in CI on a schedule (the workflow in the report), not in the cluster: status.latestRef and "
            "the automation's status are no longer in the cluster",
        )
    intervals = [
        parse_duration(str(o.spec.get("interval"))) or 0.0 for o in chosen if o.kind == "ImageRepository"
    ]
    schedule = _cron(min([i for i in intervals if i] or [MIN_SCHEDULE]))
    header = ("lockgate images config: Flux's image automation kinds, read as they are (docs/images.md)",)
    workflow = {
        "name": "image updates",
        "on": {"schedule": [{"cron": schedule}], "workflow_dispatch": {}},
        "permissions": {},
        "jobs": {
            "images": {
                "uses": REUSABLE,
                "permissions": {"contents": "write", "pull-requests": "write", "packages": "read"},
                "with": {"path": "."},
            }
        },
    }
    return Images(config=render.documents(docs, header=header), workflow=render.dump(workflow))
