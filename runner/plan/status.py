"""The health verdict of one object, and kstatus's ways of reading a live object's fields.

Pure. ``Health`` is what every rule returns (``runner.plan.health_kinds``, the CEL
expressions of ``runner.plan.health_exprs``) and what the wait, the report, the status page
and the attestations render: the status, kstatus's message, and the reason kstatus would put
on the Reconciling or Stalled condition it adds (``LessReady``, ``PodUnschedulable``...), so a
verdict reads the same wherever it is shown. The field readers behave as kstatus's
``GetIntField``/``GetStringField``/``GetBoolField``: a missing field or one of another type
gives the default.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class HealthStatus(Enum):
    CURRENT = "Current"
    IN_PROGRESS = "InProgress"
    FAILED = "Failed"
    TERMINATING = "Terminating"
    NOT_FOUND = "NotFound"
    #: the rule could not decide (kstatus's and Flux's Unknown): the wait goes on until its timeout
    UNKNOWN = "Unknown"


@dataclass(frozen=True)
class Health:
    status: HealthStatus
    message: str = ""
    #: kstatus's reason for InProgress and Failed (the condition it would add), "" otherwise
    reason: str = ""


def current(message: str) -> Health:
    return Health(HealthStatus.CURRENT, message)


def in_progress(reason: str, message: str) -> Health:
    return Health(HealthStatus.IN_PROGRESS, message, reason)


def failed(reason: str, message: str) -> Health:
    return Health(HealthStatus.FAILED, message, reason)


def unknown(message: str) -> Health:
    return Health(HealthStatus.UNKNOWN, message)


def field(obj: Any, path: str) -> Any:
    """The value at a dotted path (``.status.readyReplicas``), or None."""
    value = obj
    for name in path.strip(".").split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(name)
    return value


def int_field(obj: Any, path: str, default: int) -> int:
    value = field(obj, path)
    # JSON booleans are Python ints; kstatus reads only integers
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def str_field(obj: Any, path: str, default: str) -> str:
    value = field(obj, path)
    return value if isinstance(value, str) else default


def bool_field(obj: Any, path: str, default: bool) -> bool:
    value = field(obj, path)
    return value if isinstance(value, bool) else default


def conditions(obj: Any) -> list[dict[str, Any]]:
    """``status.conditions`` in order (kstatus reads them in order: the first that decides wins)."""
    items = field(obj, ".status.conditions")
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def has_condition(obj: Any, kind: str, status: str) -> dict[str, Any] | None:
    """The first condition of that type with that status."""
    return next((c for c in conditions(obj) if c.get("type") == kind and c.get("status") == status), None)
