"""A ``--config`` file is checked whole when it is loaded: every problem of every document at
once (the documents' fields, the checks across documents, each Sync's URL, semver range,
verification policy, attestations and notification providers), each naming the file, line,
document and field, never a command-line flag; and nothing reaches the cluster or a registry.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.world.kube import Cluster

pytestmark = pytest.mark.world

LOCKGATE = [sys.executable, "-m", "lockgate"]
SECRET = "s3cret-in-url"
CONFIG = f"""\
apiVersion: lockgate.dev/v1alpha1
kind: Sync
metadata: {{name: creds}}
spec:
  url: oci://robot:{SECRET}@127.0.0.1:9/app
  semver: ">=1.x.y"
  interval: 1m
  verify: {{insecureSkip: true}}
---
apiVersion: lockgate.dev/v1alpha1
kind: Sync
metadata: {{name: unverified}}
spec:
  url: oci://127.0.0.1:9/app:v1
  interval: 1m
---
apiVersion: lockgate.dev/v1alpha1
kind: Sync
metadata: {{name: half-keyless}}
spec:
  url: oci://127.0.0.1:9/app:v1
  interval: 1m
  verify: {{identity: https://github.com/org/app/.github/workflows/publish.yml@refs/heads/main}}
---
apiVersion: lockgate.dev/v1alpha1
kind: Sync
metadata: {{name: typo}}
spec:
  url: oci://127.0.0.1:9/app:v1
  intervall: 1m
  verify: {{insecureSkip: true}}
---
apiVersion: lockgate.dev/v1alpha1
kind: Sync
metadata: {{name: silent}}
spec:
  url: oci://127.0.0.1:9/app:v1
  interval: 1m
  verify: {{insecureSkip: true}}
  notify: [{{type: github}}]
"""


@pytest.mark.parametrize("command", ["reconcile", "serve", "rollback"])
def test_every_problem_of_the_file_is_listed_at_once_by_field(
    command: str, cluster: Cluster, tmp_path: Path
) -> None:
    path = tmp_path / "lockgate.yaml"
    path.write_text(CONFIG)
    argv = {"rollback": ["rollback", "creds"]}.get(command, [command])
    run = subprocess.run(
        [*LOCKGATE, *argv, "--config", str(path), f"--kubeconfig={cluster.kubeconfig}", "-o", "json"]
        if command != "serve"
        else [*LOCKGATE, *argv, "--config", str(path), f"--kubeconfig={cluster.kubeconfig}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, run.stderr
    err = run.stderr
    expected = [
        f"{path}:5: Sync/creds: spec.url: invalid reference 'oci://robot:***@127.0.0.1:9/app': "
        "credentials do not go in a reference",
        f"{path}:6: Sync/creds: spec.semver: '>=1.x.y': ",
        f"{path}:13: Sync/unverified: spec.verify: no verification policy: set spec.verify.key",
        f"{path}:23: Sync/half-keyless: spec.verify: keyless verification needs exactly one of "
        "spec.verify.issuer and spec.verify.issuerRegexp",
        f"{path}:30: Sync/typo: spec.intervall: unknown field; did you mean interval?",
        f"{path}:40: Sync/silent: spec.notify[0]: a github provider needs secretRef",
    ]
    missing = [line for line in expected if line not in err]
    assert missing == [], err
    assert err.startswith(f"error: {len(expected)} problems:"), err
    # the file's fields are named, never the flags that say the same on the command line
    assert not any(flag in err for flag in ("--semver", "--verify-", "--insecure-skip-verify")), err
    assert SECRET not in err and SECRET not in run.stdout
    if command != "serve":
        assert json.loads(run.stdout)["error"]["exitCode"] == 2
    # nothing was written to the cluster: no sync's inventory exists
    found = cluster.kubectl("get", "secrets", "-A", "-o", "name").stdout
    assert not any(f"lockgate-{name}" in found for name in ("creds", "unverified", "silent")), found
