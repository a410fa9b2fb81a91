"""Helpers for the credential tests: a real exec credential plugin, kubeconfig writers, whoami.

``ExecPlugin`` writes an executable script that answers each invocation with the next
step of a plan (a token, a certificate, a failure, an expiry a few seconds ahead) and
logs every invocation (argv, ``KUBERNETES_EXEC_INFO``, ``PLUGIN_*`` variables), so a test
can assert when and how the plugin was run again.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runner.kube.client import Kube

V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"

_SCRIPT = """#!{python}
import datetime, json, os, sys

with open({log!r}, "a") as log:
    log.write(json.dumps({{
        "argv": sys.argv[1:],
        "info": json.loads(os.environ["KUBERNETES_EXEC_INFO"]),
        "env": {{k: v for k, v in os.environ.items() if k.startswith("PLUGIN_")}},
        "stdin": sys.stdin.read() if not sys.stdin.isatty() else "(tty)",
    }}) + "\\n")
with open({log!r}) as log:
    count = sum(1 for _ in log)
with open({plan!r}) as plan:
    steps = json.load(plan)
step = steps[min(count, len(steps)) - 1]
sys.stderr.write(step.get("stderr", ""))
if step.get("stdout") is not None:
    sys.stdout.write(step["stdout"])
if step.get("exit"):
    sys.exit(step["exit"])
if step.get("stdout") is None:
    status = dict(step.get("status", {{}}))
    if "expires_in" in step:
        when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=step["expires_in"])
        status["expirationTimestamp"] = when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    doc = {{"apiVersion": step.get("apiVersion", {api_version!r}), "kind": "ExecCredential"}}
    print(json.dumps({{**doc, "status": status}}))
"""


@dataclass
class ExecPlugin:
    """An executable credential plugin under ``directory``; ``steps`` answer successive runs."""

    directory: Path
    api_version: str = V1

    @property
    def command(self) -> Path:
        return self.directory / "credential-plugin"

    @property
    def log(self) -> Path:
        return self.directory / "invocations.jsonl"

    def write(self, *steps: dict[str, Any]) -> ExecPlugin:
        self.directory.mkdir(parents=True, exist_ok=True)
        plan = self.directory / "plan.json"
        plan.write_text(json.dumps(list(steps)))
        plan.chmod(0o600)
        self.command.write_text(
            _SCRIPT.format(
                python=sys.executable, log=str(self.log), plan=str(plan), api_version=self.api_version
            )
        )
        self.command.chmod(0o700)
        return self

    def invocations(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def exec_config(self, **fields: Any) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "command": str(self.command),
            "interactiveMode": "Never",
            **fields,
        }


def token(status_token: str, **step: Any) -> dict[str, Any]:
    return {"status": {"token": status_token}, **step}


def write_kubeconfig(
    path: Path, server: str, *, user: dict[str, Any], cluster: dict[str, Any] | None = None
) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "world", "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": "someone", "user": user}],
        "contexts": [{"name": "world", "context": {"cluster": "world", "user": "someone"}}],
        "current-context": "world",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return path


def token_of(sa_kubeconfig: Path) -> str:
    """The ServiceAccount token in a kubeconfig written by ``Cluster.service_account_kubeconfig``."""
    doc = yaml.safe_load(sa_kubeconfig.read_text())
    return str(doc["users"][0]["user"]["token"])


def whoami(kube: Kube) -> str:
    """The username the API server sees (a SelfSubjectReview, allowed to every authenticated user)."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    review = kube.transport.request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body=body
    ).json()
    return str(review["status"]["userInfo"]["username"])
