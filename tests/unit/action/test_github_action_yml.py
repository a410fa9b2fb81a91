"""action.yml and the workflows stay in step with the input table; the copies are identical;
actionlint (pinned, tests/world/pins.py) is clean on all of them."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from action.github.inputs import INPUTS
from action.github.report import OUTPUTS
from tests.world import binaries

ROOT = Path(__file__).resolve().parents[3]
WORKFLOWS = ("publish.yml", "image-updates.yml", "pr-diff.yml")


def _action() -> dict[str, Any]:
    value = yaml.safe_load((ROOT / "action.yml").read_text())
    assert isinstance(value, dict)
    return value


def test_action_inputs_are_the_table() -> None:
    declared = _action()["inputs"]
    assert list(declared) == [spec.name for spec in INPUTS]
    for spec in INPUTS:
        assert declared[spec.name]["description"] == spec.description
        assert str(declared[spec.name].get("default", "")) == spec.default, spec.name


def test_every_input_reaches_the_run_step_through_the_environment() -> None:
    steps = _action()["runs"]["steps"]
    run = next(step for step in steps if step.get("id") == "run")
    env = run["env"]
    for spec in INPUTS:
        if spec.name != "python":
            assert env[spec.env] == f"${{{{ inputs.{spec.name} }}}}"
    # no step interpolates an input into shell text
    for step in steps:
        assert "${{" not in step["run"], step["name"]
    assert list(_action()["outputs"]) == list(OUTPUTS)
    assert not any("uses" in step for step in steps)


def test_github_workflow_copies_are_identical_to_the_source() -> None:
    for name in WORKFLOWS:
        source = (ROOT / "workflows" / name).read_bytes()
        assert (ROOT / ".github" / "workflows" / name).read_bytes() == source, (
            f".github/workflows/{name} differs from workflows/{name}: copy the source over it"
        )


def test_actionlint_is_clean(tmp_path: Path) -> None:
    """The workflows as shipped, and again with ``uses: ./`` so actionlint reads action.yml
    and checks every ``with:`` key against its inputs (actionlint does not lint action
    metadata files on their own)."""
    actionlint = binaries.binary("actionlint")
    files = [ROOT / "workflows" / n for n in WORKFLOWS] + [
        ROOT / ".github" / "workflows" / n for n in WORKFLOWS
    ]
    files += [ROOT / "tests" / "data" / "act" / n for n in ("cases.yml", "verify-reconcile.yml")]
    shipped = subprocess.run([actionlint, "-no-color", *map(str, files)], capture_output=True, text=True)
    assert shipped.returncode == 0, shipped.stdout + shipped.stderr

    project = tmp_path / "project"
    (project / ".github" / "workflows").mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", str(project)], check=True)
    shutil.copy(ROOT / "action.yml", project / "action.yml")
    for path in files:
        text = re.sub(r"uses: lockgate-dev/lockgate@v1", "uses: ./", path.read_text())
        assert "uses: ./" in text, path
        (project / ".github" / "workflows" / f"{path.parent.name}-{path.name}").write_text(text)
    local = subprocess.run([actionlint, "-no-color"], cwd=project, capture_output=True, text=True)
    assert local.returncode == 0, local.stdout + local.stderr


def test_actionlint_catches_an_unknown_input(tmp_path: Path) -> None:
    """The lint above can fail: a misspelt input is reported against action.yml."""
    actionlint = binaries.binary("actionlint")
    project = tmp_path / "project"
    (project / ".github" / "workflows").mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", str(project)], check=True)
    shutil.copy(ROOT / "action.yml", project / "action.yml")
    text = (
        (ROOT / "workflows" / "publish.yml").read_text().replace("uses: lockgate-dev/lockgate@v1", "uses: ./")
    )
    (project / ".github" / "workflows" / "p.yml").write_text(
        text.replace("annotations: ${{", "anotations: ${{")
    )
    result = subprocess.run([actionlint, "-no-color"], cwd=project, capture_output=True, text=True)
    assert result.returncode != 0 and 'input "anotations" is not defined' in result.stdout


def test_the_reference_page_documents_every_input_and_output() -> None:
    page = (ROOT / "docs" / "github-action.md").read_text()
    for name in [spec.name for spec in INPUTS] + list(OUTPUTS):
        assert f"| `{name}` |" in page, f"docs/github-action.md has no table row for {name}"
