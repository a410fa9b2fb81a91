"""When ``serve`` runs each sync next: pure timing decisions, no clock and no threads.

The scheduler (``runner.serve.scheduler``) asks three questions of every sync, all
answered here from numbers it passes in:

- when is it due again (``next_delay``): the interval with jitter after a success, so
  syncs started together spread out instead of storming the registry and the API server;
  ``retryInterval`` doubled per consecutive failure and capped at the interval after a
  failure (Flux retries at ``retryInterval`` flat; the doubling keeps a broken sync from
  costing more than a healthy one);
- does a due sync need the full pass (``full_pass_reason``) or only the cheap registry
  check: a changed digest, a drift interval elapsed, or a person asking;
- may it run now (``waiting_for``): every ``dependsOn`` sync applied and healthy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Flux's controllers spread intervals by up to +/- 5% (``--interval-jitter-percentage``)
JITTER = 0.05
#: how long a sync waits before looking at its dependencies again (Flux: ``--requeue-dependency``)
DEPENDENCY_REQUEUE = 30.0


def next_delay(
    *,
    interval: float,
    retry_interval: float | None,
    failures: int,
    random: Callable[[], float],
) -> float:
    """Seconds until the next pass; ``random`` returns a float in [0, 1)."""
    if failures <= 0:
        return interval * (1 + JITTER * (2 * random() - 1))
    base = retry_interval if retry_interval is not None else interval
    return float(min(base * 2 ** min(failures - 1, 30), max(interval, base)))


@dataclass(frozen=True)
class Applied:
    """What a sync last applied successfully in this process."""

    digest: str = ""
    #: monotonic time of the last full pass that succeeded
    at: float = float("-inf")


def full_pass_reason(
    *,
    current_digest: str,
    applied: Applied,
    now: float,
    drift_interval: float,
    requested: bool,
    rejected: Sequence[str] = (),
    attempted: bool = False,
    reconfigured: bool = False,
) -> str | None:
    """Why the sync needs a full pull-verify-apply now, or None when the cheap check suffices.

    A digest that was rolled back from (``rejected``) is not tried again until a person
    asks (``requested``) or a different digest appears: that is what keeps an automatic
    rollback from looping. With nothing applied yet the reason says why: ``first pass``
    only before any full pass of the sync ran (``attempted``), ``configuration changed``
    after a reload changed its settings (``reconfigured``), else a retry.
    """
    if requested:
        return "requested"
    if current_digest in rejected:
        return None
    if current_digest != applied.digest:
        if applied.digest:
            return "new digest"
        if attempted:
            return "retry: the last pass did not succeed"
        return "configuration changed" if reconfigured else "first pass"
    if now - applied.at >= drift_interval:
        return "drift interval"
    return None


def waiting_for(depends_on: Sequence[str], ready: Callable[[str], bool]) -> list[str]:
    """The dependencies that are not applied and healthy yet (unknown ones count as not ready)."""
    return [name for name in depends_on if not ready(name)]
