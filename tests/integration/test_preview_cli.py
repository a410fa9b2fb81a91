"""``lockgate preview``'s exit codes and errors, against the world's registry (no cluster needed).

0 when no sync changes, 1 when one does; a PATH that does not render is 8 with the target's
error in the JSON and the file and line named; a bad flag is 2 and says what to give.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.preview_support import configmap, dump, write_tree
from tests.integration.reconcile_support import push_tree
from tests.world.registry import Registry

pytestmark = pytest.mark.world

LOCKGATE = [sys.executable, "-m", "lockgate"]


def config(registry: Registry, unique: str, tmp: Path) -> Path:
    runner = {"apiVersion": "lockgate.dev/v1alpha1", "kind": "Runner", "spec": {"clusterName": "dev"}}
    sync = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": "web"},
        "spec": {
            "url": registry.oci(unique, ":main"),
            "interval": "1m",
            "targetNamespace": "apps",
            "verify": {"insecureSkip": True},
        },
    }
    path = tmp / "dev.yaml"
    path.write_text(yaml.safe_dump_all([runner, sync]))
    return path


def preview(*args: str) -> tuple[int, Any, str]:
    proc = subprocess.run([*LOCKGATE, "preview", *args], capture_output=True, text=True, timeout=120)
    try:
        out: Any = json.loads(proc.stdout)
    except json.JSONDecodeError:
        out = proc.stdout
    return proc.returncode, out, proc.stderr


def test_exit_codes_say_no_change_change_and_what_failed(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    manifests = {"web.yaml": dump(configmap("web", {"color": "blue"}))}
    push_tree(registry, unique, manifests, tag="main")
    cluster = str(config(registry, unique, tmp_path))
    url = registry.oci(unique)

    same = write_tree(tmp_path / "same", manifests)
    code, document, err = preview(str(same), "--cluster", cluster, "--url", url, "-o", "json")
    assert code == 0, err
    assert document["changed"] is False and document["targets"][0]["counts"]["unchanged"] == 1

    changed = write_tree(tmp_path / "changed", {"web.yaml": dump(configmap("web", {"color": "red"}))})
    code, text, _ = preview(str(changed), "--cluster", cluster, "--url", url)
    assert code == 1
    assert 'data.color: "blue" -> "red"' in text and "dev / web" in text and "1 of 1 syncs change" in text

    broken = write_tree(tmp_path / "broken", {"web.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n"})
    code, document, _ = preview(str(broken), "--cluster", cluster, "--url", url, "-o", "json")
    assert code == 8
    error = document["targets"][0]["error"]
    assert error["exitCode"] == 8 and "web.yaml" in error["message"]

    code, _, err = preview(str(same), "--cluster", cluster, "--url", url, "--attester-key", "prod=x.pub")
    assert code == 2 and "no --cluster is named 'prod'" in err and "dev" in err
    code, _, err = preview(str(same), "--url", url)
    assert code == 2 and "--cluster FILE" in err
