"""Helm's hook annotations, as CI's ``push --render`` notice and the runner's hooks read them.

Pure. ``helm template`` keeps a hook's ``helm.sh/hook`` annotation; the runner
(``runner.plan.ordering``) runs the hooks of install, upgrade and rollback in its own phases
and never applies the others (delete hooks, tests: a sync deletes nothing that way).
"""

from __future__ import annotations

from typing import Literal

HOOK = "helm.sh/hook"
WEIGHT = "helm.sh/hook-weight"
DELETE_POLICY = "helm.sh/hook-delete-policy"

Phase = Literal["pre-apply", "post-apply"]
Event = Literal["install", "upgrade", "rollback"]

#: the Helm hooks a sync runs: in which of lockgate's phases, on which of Helm's events
RUNS: dict[str, tuple[Phase, Event]] = {
    "pre-install": ("pre-apply", "install"),
    "pre-upgrade": ("pre-apply", "upgrade"),
    "pre-rollback": ("pre-apply", "rollback"),
    "post-install": ("post-apply", "install"),
    "post-upgrade": ("post-apply", "upgrade"),
    "post-rollback": ("post-apply", "rollback"),
}

#: ``helm.sh/hook-delete-policy`` values, in lockgate's words
DELETIONS = {
    "before-hook-creation": "before-creation",
    "hook-succeeded": "on-success",
    "hook-failed": "on-failure",
}


def names(value: object) -> list[str]:
    """The hook names of an annotation value, as Helm splits them (commas, spaces, case)."""
    return [part.strip().lower() for part in str(value).split(",") if part.strip()]


def runs(value: object) -> bool:
    """Whether a sync runs a hook so annotated (else it is never applied)."""
    return any(name in RUNS for name in names(value))
