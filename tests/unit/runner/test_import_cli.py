"""``lockgate import`` as a user runs it (from files, no cluster): exit codes, what is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from tests.unit.runner.plan.fluximport.support import FLEET, kustomization, ocirepository

LOCKGATE = [sys.executable, "-m", "lockgate"]
CONTROLLER = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "kustomize-controller", "namespace": "flux-system"},
    "spec": {"template": {"spec": {"containers": [{"name": "manager", "args": ["--no-remote-bases=true"]}]}}},
}


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LOCKGATE, "import", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_a_clean_fleet_exits_0_and_writes_the_config(tmp_path: Path) -> None:
    docs = [
        ocirepository(namespace="lockgate-system"),
        kustomization(namespace="lockgate-system"),
        CONTROLLER,
    ]
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all(docs))
    done = run(tmp_path, "--from-files", "fleet.yaml", "-O", "lockgate.yaml", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rows"] == []
    assert [d["kind"] for d in yaml.safe_load_all((tmp_path / "lockgate.yaml").read_text())] == [
        "Runner",
        "Sync",
    ]
    to_stdout = run(tmp_path, "--from-files", "fleet.yaml")
    assert to_stdout.returncode == 0 and to_stdout.stdout == (tmp_path / "lockgate.yaml").read_text()
    assert "everything was carried" in to_stdout.stderr


def test_a_report_with_rows_exits_10_and_strict_2_writing_nothing(tmp_path: Path) -> None:
    partial = run(tmp_path, "--from-files", str(FLEET), "-O", "lockgate.yaml")
    assert partial.returncode == 10, partial.stderr
    assert (tmp_path / "lockgate.yaml").is_file()
    assert "renamed" in partial.stdout and "sync(s) written" in partial.stdout
    strict = run(tmp_path, "--from-files", str(FLEET), "-O", "strict.yaml", "--strict")
    assert strict.returncode == 2
    assert "--strict: the report has" in strict.stderr and not (tmp_path / "strict.yaml").exists()


def test_an_unsigned_source_stops_the_import_naming_it(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all([ocirepository(verify=None), kustomization()]))
    refused = run(tmp_path, "--from-files", "fleet.yaml", "-O", "lockgate.yaml")
    assert refused.returncode == 4
    assert "OCIRepository flux-system/app (read by Kustomization flux-system/app)" in refused.stderr
    assert "--allow-unsigned" in refused.stderr and not (tmp_path / "lockgate.yaml").exists()
    allowed = run(
        tmp_path, "--from-files", "fleet.yaml", "-O", "lockgate.yaml", "--allow-unsigned", "-o", "json"
    )
    assert allowed.returncode == 10
    assert [r["class"] for r in json.loads(allowed.stdout)["rows"] if r["field"] == "spec.verify"] == [
        "security"
    ]


def test_flags_that_cannot_go_together_are_refused(tmp_path: Path) -> None:
    both = run(tmp_path, "--from-files", str(FLEET), "--from-cluster")
    neither = run(tmp_path)
    json_to_stdout = run(tmp_path, "--from-files", str(FLEET), "-o", "json")
    bad_rename = run(tmp_path, "--from-files", str(FLEET), "--rename", "web=x")
    for done in (both, neither, json_to_stdout, bad_rename):
        assert done.returncode == 2, done.stderr
    assert "write the config with -O FILE" in json_to_stdout.stderr
    assert "expected NAMESPACE/NAME=SYNC" in bad_rename.stderr
