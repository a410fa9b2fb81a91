"""The README's quickstart, as written: its workflow passes actionlint with this action's
inputs, its runner overlay builds with the pinned kustomize (the remote bases replaced by
this checkout's, since GitHub cannot be reached here) and its config loads. Applying the
install manifests to the cluster is tests/integration/test_deploy.py."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

from runner.pipeline import config
from tests.world import binaries

ROOT = Path(__file__).resolve().parents[2]
REMOTE = "https://github.com/lockgate-dev/lockgate//"


def _quickstart_blocks() -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quickstart: from a workflow to the cluster", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    named: dict[str, str] = {}
    for block in blocks:
        first = block.splitlines()[0]
        if first.startswith("# "):
            named[first[2:].strip()] = block
        elif first.startswith("name: publish"):
            named[".github/workflows/publish.yml"] = block
    return named


def test_the_quickstart_workflow_is_clean_for_actionlint(tmp_path: Path) -> None:
    workflow = _quickstart_blocks()[".github/workflows/publish.yml"]
    assert "uses: lockgate-dev/lockgate@v1" in workflow
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # actionlint looks for a repository
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    # uses: ./ so actionlint checks each with: key against this checkout's action.yml
    (tmp_path / "action.yml").write_text((ROOT / "action.yml").read_text())
    local = workflow.replace("uses: lockgate-dev/lockgate@v1", "uses: ./")
    (tmp_path / ".github" / "workflows" / "publish.yml").write_text(local)
    done = subprocess.run(
        [str(binaries.binary("actionlint")), "-no-color"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_quickstart_overlay_builds_and_its_config_loads(tmp_path: Path) -> None:
    blocks = _quickstart_blocks()
    overlay = tmp_path / "my-lockgate"
    overlay.mkdir()
    kustomization = blocks["my-lockgate/kustomization.yaml"]
    assert REMOTE in kustomization
    # kustomize takes bases by relative path only
    local = re.sub(
        re.escape(REMOTE) + r"(\S+)\?ref=\S+",
        lambda m: os.path.relpath(ROOT / m.group(1), overlay),
        kustomization,
    )
    (overlay / "kustomization.yaml").write_text(local)
    (overlay / "config.yaml").write_text(blocks["my-lockgate/config.yaml"])
    built = subprocess.run(
        [str(binaries.binary("kustomize")), "build", str(overlay)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    docs = [d for d in yaml.safe_load_all(built.stdout) if d]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("Deployment", "lockgate") in kinds and ("Role", "lockgate-apply") in kinds, kinds
    [configmap] = [
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("lockgate-config")
    ]
    shipped = next(iter(configmap["data"].values()))
    assert "my-org/app-manifests" in shipped  # the quickstart's config replaced the example
    loaded = config.load(overlay / "config.yaml")
    [sync] = loaded.syncs
    assert sync.name == "app" and loaded.runner.default_service_account == "lockgate-apply"
    assert sync.source.warnings == ()  # the keyless identity pins the repository
