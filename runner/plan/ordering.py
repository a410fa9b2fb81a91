"""Ordering annotations: an object's wave and, for a hook, when it runs and when it is deleted.

Pure. lockgate's own keys are ``lockgate.dev/wave``, ``lockgate.dev/hook`` and
``lockgate.dev/hook-delete-policy``; Argo CD's ``argocd.argoproj.io/sync-wave``, ``hook`` and
``hook-delete-policy`` and Helm's ``helm.sh/hook``, ``hook-weight`` and ``hook-delete-policy``
are read with their documented meaning, so manifests move over unchanged. lockgate's key wins
over Argo CD's, Argo CD's over Helm's; an object with an Argo CD hook has its Helm hook
ignored, as Argo CD does. Read from annotations only (a wave such as ``-1`` is no label value).

Argo CD's ``PreSync``, ``Sync``, ``PostSync`` and ``SyncFail`` are lockgate's ``pre-apply``,
``apply``, ``post-apply`` and ``on-failure``; ``Skip`` (and a hook that only runs when an
application or release is deleted, or Helm's tests) is never applied. Helm's
``pre-install``/``pre-upgrade``/``pre-rollback`` are pre-apply hooks of a sync's first pass,
of a later revision and of a rollback; ``post-*`` likewise post-apply. Unknown Helm hook
names are ignored, as Helm ignores them; unknown lockgate or Argo CD values are an error
naming the object and the annotation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

from lockgate import helmhooks
from lockgate.errors import RenderError
from runner.plan import health
from runner.plan.health import Health, HealthStatus
from runner.plan.objects import annotations_of

WAVE = "lockgate.dev/wave"
HOOK = "lockgate.dev/hook"
HOOK_DELETE_POLICY = "lockgate.dev/hook-delete-policy"
ARGO_WAVE = "argocd.argoproj.io/sync-wave"
ARGO_HOOK = "argocd.argoproj.io/hook"
ARGO_DELETE_POLICY = "argocd.argoproj.io/hook-delete-policy"
HELM_HOOK = helmhooks.HOOK
HELM_WEIGHT = helmhooks.WEIGHT
HELM_DELETE_POLICY = helmhooks.DELETE_POLICY

_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_INT64 = 2**63


class Phase(Enum):
    """When a hook runs in a pass: before anything else, with its wave, after all is healthy,
    or when the pass fails."""

    PRE_APPLY = "pre-apply"
    APPLY = "apply"
    POST_APPLY = "post-apply"
    ON_FAILURE = "on-failure"


class Deletion(Enum):
    """``hook-delete-policy``: delete the previous object before creating it again, or the
    object once it succeeded, or once it failed."""

    BEFORE_CREATION = "before-creation"
    ON_SUCCESS = "on-success"
    ON_FAILURE = "on-failure"


class Event(Enum):
    """What a pass does, in Helm's words: the sync's first revision, a later one, a rollback."""

    INSTALL = "install"
    UPGRADE = "upgrade"
    ROLLBACK = "rollback"


#: lockgate's and Argo CD's hooks run on every revision a pass applies, not on a rollback
APPLYING = frozenset({Event.INSTALL, Event.UPGRADE})


@dataclass(frozen=True)
class Hook:
    #: (phase, event): the hook runs in that phase of a pass doing that
    runs: frozenset[tuple[Phase, Event]]
    deletion: frozenset[Deletion]

    def phases(self, event: Event) -> frozenset[Phase]:
        return frozenset(phase for phase, on in self.runs if on is event)


@dataclass(frozen=True)
class Ordering:
    wave: int = 0
    hook: Hook | None = None
    #: why the object is never applied (Argo CD ``Skip``, a hook of deletion); "" when it is
    never: str = ""


UNORDERED = Ordering()

_LOCKGATE_PHASES = {phase.value: phase for phase in Phase}
_ARGO_PHASES = {
    "presync": Phase.PRE_APPLY,
    "sync": Phase.APPLY,
    "postsync": Phase.POST_APPLY,
    "syncfail": Phase.ON_FAILURE,
}
#: valid Argo CD hooks a sync never runs
_ARGO_ELSEWHERE = {"skip", "predelete", "postdelete"}
_HELM_RUNS = {name: (Phase(phase), Event(event)) for name, (phase, event) in helmhooks.RUNS.items()}
_LOCKGATE_DELETIONS = {deletion.value: deletion for deletion in Deletion}
_ARGO_DELETIONS = {
    "beforehookcreation": Deletion.BEFORE_CREATION,
    "hooksucceeded": Deletion.ON_SUCCESS,
    "hookfailed": Deletion.ON_FAILURE,
}
_HELM_DELETIONS = {name: Deletion(ours) for name, ours in helmhooks.DELETIONS.items()}


def _values(text: str) -> list[str]:
    return [part.strip().lower() for part in text.split(",") if part.strip()]


def _wave(annotations: dict[str, Any], where: str) -> int:
    for key in (WAVE, ARGO_WAVE, HELM_WEIGHT):
        value = annotations.get(key)
        if value is None:
            continue
        text = str(value).strip()
        if not _INTEGER.match(text) or not -_INT64 <= int(text) < _INT64:
            raise RenderError(
                f"{where}: annotation {key}: {str(value)!r} is not an integer; "
                'a wave is written "-1", "0", "5"'
            )
        return int(text)
    return 0


def _choices(table: dict[str, Any]) -> str:
    return ", ".join(table)


def _hook_runs(annotations: dict[str, Any], where: str) -> tuple[frozenset[tuple[Phase, Event]], str] | None:
    """The hook's (phase, event) pairs and why it is never applied ("" if it is), or None for
    an ordinary object."""
    if HOOK in annotations:
        names = _values(str(annotations[HOOK]))
        unknown = [n for n in names if n not in _LOCKGATE_PHASES]
        if unknown or not names:
            raise RenderError(
                f"{where}: annotation {HOOK}: {str(annotations[HOOK])!r} is not a hook "
                f"({_choices(_LOCKGATE_PHASES)}, comma-separated)"
            )
        return frozenset((_LOCKGATE_PHASES[n], e) for n in names for e in APPLYING), ""
    if ARGO_HOOK in annotations:
        names = _values(str(annotations[ARGO_HOOK]))
        unknown = [n for n in names if n not in _ARGO_PHASES and n not in _ARGO_ELSEWHERE]
        if unknown or not names:
            raise RenderError(
                f"{where}: annotation {ARGO_HOOK}: {str(annotations[ARGO_HOOK])!r} is not an Argo CD hook "
                "(PreSync, Sync, PostSync, SyncFail, Skip, PreDelete, PostDelete)"
            )
        if "skip" in names:
            return frozenset(), f"{ARGO_HOOK}: Skip"
        runs = frozenset((_ARGO_PHASES[n], e) for n in names if n in _ARGO_PHASES for e in APPLYING)
        return runs, "" if runs else f"{ARGO_HOOK}: {annotations[ARGO_HOOK]} (runs only on deletion)"
    if HELM_HOOK in annotations:
        names = helmhooks.names(annotations[HELM_HOOK])
        runs = frozenset(_HELM_RUNS[n] for n in names if n in _HELM_RUNS)
        never = f"{HELM_HOOK}: {annotations[HELM_HOOK]} (no install, upgrade or rollback)"
        return runs, "" if runs else never
    return None


def _deletion(annotations: dict[str, Any], where: str) -> frozenset[Deletion]:
    for key, table, strict in (
        (HOOK_DELETE_POLICY, _LOCKGATE_DELETIONS, True),
        (ARGO_DELETE_POLICY, _ARGO_DELETIONS, True),
        (HELM_DELETE_POLICY, _HELM_DELETIONS, False),
    ):
        if key not in annotations:
            continue
        names = _values(str(annotations[key]))
        unknown = [n for n in names if n not in table]
        if strict and (unknown or not names):
            argo = "BeforeHookCreation, HookSucceeded, HookFailed"
            shown = argo if key == ARGO_DELETE_POLICY else _choices(table)
            raise RenderError(
                f"{where}: annotation {key}: {str(annotations[key])!r} is not a delete policy ({shown})"
            )
        chosen = frozenset(table[n] for n in names if n in table)
        if chosen:
            return chosen
    # Helm's and Argo CD's default: the previous object goes before the hook is created again
    return frozenset({Deletion.BEFORE_CREATION})


def ordering_of(body: dict[str, Any], *, where: str = "object") -> Ordering:
    """The object's wave and hook; a malformed annotation is a ``RenderError`` naming ``where``."""
    annotations = annotations_of(body)
    if not annotations:
        return UNORDERED
    wave = _wave(annotations, where)
    found = _hook_runs(annotations, where)
    if found is None:
        if HOOK_DELETE_POLICY in annotations:
            raise RenderError(
                f"{where}: annotation {HOOK_DELETE_POLICY} needs {HOOK} "
                "(pre-apply, apply, post-apply, on-failure)"
            )
        return Ordering(wave=wave) if wave else UNORDERED
    runs, never = found
    if never:
        return Ordering(wave=wave, never=never)
    return Ordering(wave=wave, hook=Hook(runs=runs, deletion=_deletion(annotations, where)))


def hook_health(obj: dict[str, Any] | None, now: float) -> Health:
    """Whether a hook is done: kstatus, except that a Pod is done only when Succeeded (its
    Failed phase fails the hook) and a running one is still in progress."""
    if obj is not None and obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1":
        phase = (obj.get("status") or {}).get("phase")
        if phase == "Succeeded":
            return health.CURRENT
        if phase == "Failed":
            said = health.explain_pods([obj]) or "Pod failed"
            return Health(HealthStatus.FAILED, said)
        return Health(HealthStatus.IN_PROGRESS, f"pod is {phase or 'Pending'}")
    return health.compute(obj, now=now)
