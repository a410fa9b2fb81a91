"""Render a kustomization or a Helm chart to plain YAML in CI, so the cluster needs neither.

The programs are found through ``LOCKGATE_KUSTOMIZE`` / ``LOCKGATE_HELM`` or on PATH; the
rendered stream is written as one ``manifests.yaml`` in a fresh directory that is then
packed like any other tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from lockgate.errors import RenderError, UsageError

RENDERED_FILE = "manifests.yaml"
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def find_program(name: str) -> str:
    """The program from ``LOCKGATE_<NAME>`` or PATH; a clear error if neither has it."""
    variable = f"LOCKGATE_{name.upper()}"
    configured = os.environ.get(variable)
    if configured:
        if not (os.path.isfile(configured) and os.access(configured, os.X_OK)):
            raise RenderError(f"{variable}={configured} is not an executable file")
        return configured
    found = shutil.which(name)
    if found is None:
        raise RenderError(f"--render needs {name}, which is not on PATH; install it or set {variable}")
    return found


def kind_of(path: Path) -> str | None:
    """``kustomize``, ``helm`` or None for a directory that is neither."""
    if not path.is_dir():
        return None
    if any((path / name).is_file() for name in KUSTOMIZATION_FILES):
        return "kustomize"
    if (path / "Chart.yaml").is_file():
        return "helm"
    return None


def _run(argv: list[str], what: str) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    except OSError as exc:
        raise RenderError(f"{what}: cannot run {argv[0]} ({exc.strerror})") from None
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RenderError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def render(path: Path, dest: Path, *, values: Sequence[Path] = (), release: str | None = None) -> Path:
    """Render ``path`` into ``dest/manifests.yaml``; returns that file."""
    kind = kind_of(path)
    if kind is None:
        raise UsageError(f"--render: {path} holds neither a kustomization.yaml nor a Chart.yaml")
    if values and kind != "helm":
        raise UsageError("--values only applies to Helm charts (a directory with Chart.yaml)")
    if kind == "kustomize":
        output = _run([find_program("kustomize"), "build", str(path)], f"kustomize build {path}")
    else:
        for file in values:
            if not file.is_file():
                raise UsageError(f"--values {file}: no such file")
        argv = [find_program("helm"), "template", release or path.resolve().name, str(path)]
        for file in values:
            argv += ["--values", str(file)]
        output = _run(argv, f"helm template {path}")
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / RENDERED_FILE
    out.write_text(output)
    return out
