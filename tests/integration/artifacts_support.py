"""Helpers shared by the artifact integration tests: trees to push, the CLI as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from lockgate import registry
from tests.world.registry import Registry

LOCKGATE = [sys.executable, "-m", "lockgate"]


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def lockgate(
    *args: str, env: dict[str, str] | None = None, stdin: str | None = None, cwd: Path | None = None
) -> Run:
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [*LOCKGATE, *args], capture_output=True, text=True, env=full_env, input=stdin, cwd=cwd, timeout=300
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def write_tree(root: Path, marker: str) -> Path:
    """A small manifest tree; ``marker`` makes its blobs unique to the test."""
    (root / "apps").mkdir(parents=True, exist_ok=True)
    (root / "ns.yaml").write_text(f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {marker}\n")
    (root / "apps" / "web.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: "
        f"{marker}\nspec:\n  replicas: 1\n"
        "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: "
        f"{marker}\ndata:\n  password: c2VjcmV0\n"
    )
    return root


def client(reg: Registry, ref: registry.Reference) -> registry.RegistryClient:
    creds = registry.Credentials(reg.username, reg.password) if reg.username and reg.password else None
    return registry.RegistryClient.for_reference(ref, credentials=creds)


def creds_flag(reg: Registry) -> list[str]:
    return ["--creds", f"{reg.username}:{reg.password}"] if reg.username else []
