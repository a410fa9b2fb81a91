"""Errors of the test world: set-up failures name the step and carry the log tail."""

from __future__ import annotations

from pathlib import Path


class WorldSetupError(RuntimeError):
    """A world component could not be built or started; the message says which and why."""


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        content = path.read_text(errors="replace").splitlines()
    except OSError as exc:
        return f"(no log at {path}: {exc})"
    return "\n".join(content[-lines:])
