"""Rendering with kustomize or Helm: one module for CI (``push --render``) and the runner.

CI renders a kustomization or a chart before packing, so the cluster needs neither
program; the runner builds an artifact that still holds a ``kustomization.yaml``. Both
find the programs the same way: ``LOCKGATE_KUSTOMIZE`` / ``LOCKGATE_HELM`` when set (an
explicit choice is never silently replaced by another program), else PATH. The rendered
stream is returned as text; callers write or load it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from lockgate.errors import RenderError, UsageError

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
CHART_FILE = "Chart.yaml"
TIMEOUT = 600
Kind = Literal["kustomize", "helm"]


def find_program(name: str, *, purpose: str) -> str:
    """The program from ``LOCKGATE_<NAME>`` or PATH; ``purpose`` says who needs it, in errors."""
    variable = f"LOCKGATE_{name.upper()}"
    chosen = os.environ.get(variable)
    if chosen:
        if not (os.path.isfile(chosen) and os.access(chosen, os.X_OK)):
            raise RenderError(
                f"{purpose} needs {name}, and {variable}={chosen} is not an executable: "
                f"point it at the {name} program or unset it to use {name} from PATH"
            )
        return chosen
    found = shutil.which(name)
    if found is None:
        raise RenderError(f"{purpose} needs {name}, which is not on PATH: install {name} or set {variable}")
    return found


def kind_of(path: Path) -> Kind | None:
    """``kustomize`` for a directory with a kustomization, ``helm`` for a chart, else None."""
    if not path.is_dir():
        return None
    if any((path / name).is_file() for name in KUSTOMIZATION_FILES):
        return "kustomize"
    if (path / CHART_FILE).is_file():
        return "helm"
    return None


def _run(argv: list[str], what: str) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
    except OSError as exc:
        raise RenderError(f"{what}: cannot run {argv[0]} ({exc.strerror})") from None
    except subprocess.TimeoutExpired:
        raise RenderError(f"{what} did not finish in {TIMEOUT} s") from None
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RenderError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def kustomize_build(directory: Path, *, purpose: str, shown: str | None = None) -> str:
    """``kustomize build directory``; ``shown`` is how the directory is named in errors."""
    program = find_program("kustomize", purpose=purpose)
    return _run([program, "build", str(directory)], f"kustomize build {shown or directory}")


def helm_template(
    chart: Path, *, purpose: str, values: Sequence[Path] = (), release: str | None = None
) -> str:
    """``helm template RELEASE chart --values ...``; the release defaults to the chart's directory name."""
    for file in values:
        if not file.is_file():
            raise UsageError(f"--values {file}: no such file")
    argv = [find_program("helm", purpose=purpose), "template", release or chart.resolve().name, str(chart)]
    for file in values:
        argv += ["--values", str(file)]
    return _run(argv, f"helm template {chart}")


def render(path: Path, *, purpose: str, values: Sequence[Path] = (), release: str | None = None) -> str:
    """Render a kustomization or a chart at ``path`` to one YAML stream."""
    kind = kind_of(path)
    if kind is None:
        raise UsageError(f"{purpose}: {path} holds neither a kustomization.yaml nor a Chart.yaml")
    if values and kind != "helm":
        raise UsageError("--values only applies to Helm charts (a directory with Chart.yaml)")
    if kind == "kustomize":
        return kustomize_build(path, purpose=purpose)
    return helm_template(path, purpose=purpose, values=values, release=release)
