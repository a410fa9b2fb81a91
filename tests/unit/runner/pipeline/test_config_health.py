"""``spec.healthCheckExprs`` in a config file: Flux's format, compiled when the file is loaded,
each problem named by file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.errors import UsageError
from runner.pipeline import config
from runner.plan import health_exprs

SYNC = (
    "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: certs}\n"
    "spec:\n  url: oci://127.0.0.1:5000/certs\n  interval: 5m\n  verify: {insecureSkip: true}\n"
    "  wait: true\n  healthCheckExprs:\n"
)

#: the cheat sheet's Certificate-style entry and a group-wide one, as Flux users write them
CHEAT_SHEET = (
    "  - apiVersion: cert-manager.io/v1\n"
    "    kind: Certificate\n"
    "    failed: status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')\n"
    "    current: status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')\n"
    "  - apiVersion: fluxcd.controlplane.io/v1\n"
    "    failed: status.conditions.exists(e, e.type == 'Stalled' && e.status == 'True')\n"
    "    current: status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')\n"
)


def _load(tmp_path: Path, entries: str) -> config.Config:
    path = tmp_path / "syncs.yaml"
    path.write_text(SYNC + entries)
    return config.load(path)


def _problems(tmp_path: Path, entries: str) -> list[str]:
    with pytest.raises(UsageError) as caught:
        _load(tmp_path, entries)
    lines = caught.value.message.splitlines()
    return [line.strip() for line in lines[1:]] if len(lines) > 1 else lines


def test_cheat_sheet_entries_load_unchanged(tmp_path: Path) -> None:
    sync = _load(tmp_path, CHEAT_SHEET).syncs[0]
    assert sync.health_exprs is not None
    assert [s.kind for s in sync.health_exprs.specs] == ["Certificate", ""]
    assert sync.health_exprs.evaluator("cert-manager.io", "Certificate") is not None
    assert sync.health_exprs.evaluator("fluxcd.controlplane.io", "ResourceSet") is not None
    # the same file twice gives equal options (a reload that changed nothing changes nothing)
    assert _load(tmp_path, CHEAT_SHEET).syncs[0] == sync
    assert config.load(tmp_path / "syncs.yaml").syncs[0].health_exprs == health_exprs.compile_all(
        sync.health_exprs.specs, engine=health_exprs.IN_PROCESS
    )


def test_an_expression_that_does_not_compile_is_named_with_its_line(tmp_path: Path) -> None:
    problems = _problems(
        tmp_path,
        "  - apiVersion: cert-manager.io/v1\n"
        "    kind: Certificate\n"
        "    current: status.conditions.filter(e, e.type == 'Ready'\n"
        "    failed: has(status)\n",
    )
    where = f"{tmp_path}/syncs.yaml"
    assert problems == [
        f"{where}:12: Sync/certs: spec.healthCheckExprs[0].current: does not compile: "
        "at 1:46: Syntax error: missing ')' at '<EOF>'",
        f"{where}:13: Sync/certs: spec.healthCheckExprs[0].failed: does not compile: "
        "at 1:5: has() argument must be a field selection",
    ]


def test_current_is_required(tmp_path: Path) -> None:
    problems = _problems(tmp_path, "  - {apiVersion: example.com/v1, failed: 'true'}\n")
    assert problems == [
        f"{tmp_path}/syncs.yaml:10: Sync/certs: spec.healthCheckExprs[0].current: required field is missing"
    ]


def test_duplicates_and_jobs_are_refused(tmp_path: Path) -> None:
    problems = _problems(
        tmp_path,
        "  - {apiVersion: bitnami.com/v1alpha1, kind: SealedSecret, current: 'true'}\n"
        "  - {apiVersion: bitnami.com/v1beta1, kind: SealedSecret, current: 'false'}\n"
        "  - {apiVersion: batch/v1, kind: Job, current: 'true'}\n",
    )
    where = f"{tmp_path}/syncs.yaml"
    assert problems == [
        f"{where}:11: Sync/certs: spec.healthCheckExprs[1]: duplicate entry for SealedSecret.bitnami.com "
        "(first at healthCheckExprs[0])",
        f"{where}:12: Sync/certs: spec.healthCheckExprs[2].kind: Jobs are read by Flux's Job reader, before "
        "any expression (as in Flux): this entry would never be asked; remove it",
    ]
