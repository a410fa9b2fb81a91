"""Classify one object against the cluster: created, configured (with a field diff) or unchanged.

Pure. The fast path decides "unchanged" without a request: the hash of what we send
matches what the inventory says we last applied, nobody else's manager needs taking over,
and every field we send is live with the same value (``is_subset``). Everything else is
applied (or, in a dry run, dry-run applied) by ``runner.ssa.apply``, and the answer is
compared here with the live object through the shared diff engine (``lockgate.diff``).
Fields ``spec.ignore`` leaves to others (``Desired.ignored``) are out of both comparisons.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from lockgate.diff import fields, quantity, secret_values
from lockgate.diff.changeset import Action
from lockgate.diff.fields import FieldChange
from lockgate.diff.secret_values import SecretValues
from runner.plan import ignore, takeover
from runner.plan.desired import Desired

#: why an object whose fields are all as wanted is still configured: other managers' fields
#: became ours (kubectl's edits, or Flux's ``kustomize-controller`` under ``lockgate adopt``)
TAKEN_OVER = "fields taken over from kubectl or another manager"


@dataclass(frozen=True)
class Classification:
    action: Action
    changes: tuple[FieldChange, ...] = ()
    takeover: bool = False
    reason: str = ""


def is_subset(desired: Any, live: Any) -> bool:
    """Every field of ``desired`` is present in ``live`` with the same value (lists element-wise)."""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(
            key in live and is_subset(value, live[key]) for key, value in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(live, list)
            and len(desired) == len(live)
            and all(is_subset(d, v) for d, v in zip(desired, live, strict=True))
        )
    return bool(desired == live)


def fast_unchanged(
    item: Desired,
    live: dict[str, Any],
    *,
    recorded_hash: str,
    manager: str,
    overrides: Collection[str] = (),
) -> bool:
    """True when no request is needed to know the object is unchanged."""
    return (
        bool(recorded_hash)
        and recorded_hash == item.hash
        and not (item.policy.takes_over and takeover.needs_takeover(live, manager, overrides))
        and is_subset(ignore.without(item.body, item.ignored) if item.ignored else item.body, live)
    )


def compare(
    live: dict[str, Any],
    after: dict[str, Any],
    *,
    took_over: bool,
    secret: SecretValues = secret_values.NONE,
    ignored: tuple[ignore.Pointer, ...] = (),
    desired: dict[str, Any] | None = None,
) -> Classification:
    """Classify by the object before and after an apply (or its dry run); ``secret``: the
    object's values that are secret by origin, masked in the field changes; ``ignored``: the
    paths left out of the comparison; ``desired``: the object as the manifest writes it, whose
    spelling of a quantity is shown rather than the server's (``cpu: 1000``, not ``1k``)."""
    if ignored:
        live, after = ignore.without(live, ignored), ignore.without(after, ignored)
    if desired is not None:
        after = quantity.spelled_as(after, desired)
    if fields.is_drifted(live, after):
        return Classification(Action.CONFIGURED, fields.field_changes(live, after, secret=secret), took_over)
    if took_over:
        return Classification(Action.CONFIGURED, takeover=True, reason=TAKEN_OVER)
    return Classification(Action.UNCHANGED)
