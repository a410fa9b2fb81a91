"""Quorum promotion: how many of a selection of clusters attested one digest healthy (issue 24).

A requirement of ``verify.attestations[]`` with ``clusters`` (names and fnmatch-style
patterns: ``*``, ``?``, ``[...]``, matched case-sensitively against the ``cluster`` the
attesting runner wrote) is met when at least ``minClusters`` of the selected clusters
attested the digest healthy, each at least ``minAge`` ago, and at most ``maxFailures`` of
them attested it failing. The runner that asks never counts itself: it attests only after
it applied, so its own name is left out of its selection (waves inside one stage work).

Pure: the input is what ``attest.read`` verified and refused for one digest, plus the
cluster names seen attesting other digests of the repository (so a cluster that has not
attested this one yet can be named as missing); no I/O. ``cluster_states`` is each
cluster's standing (healthy since, soaking, failing, clock-skewed, refused, not yet), for
the runner's gate (``tally``, through ``requirements.evaluate``) and for anything that shows a
fleet the same way.
"""

from __future__ import annotations

import datetime as dt
import enum
import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass

from lockgate.signing import attest

#: how many missing clusters a message names before "and N more"
NAMED = 10
_PATTERN_CHARACTERS = frozenset("*?[")


def is_pattern(entry: str) -> bool:
    return not _PATTERN_CHARACTERS.isdisjoint(entry)


@dataclass(frozen=True)
class Selection:
    """The clusters of ``clusters``: names and patterns, less the asking runner's own name."""

    entries: tuple[str, ...]
    own: str | None = None

    def matches(self, cluster: str) -> bool:
        return cluster != self.own and any(fnmatch.fnmatchcase(cluster, e) for e in self.entries)

    @property
    def names(self) -> tuple[str, ...]:
        """The literal names, each once, without the runner's own: known before any attestation."""
        return tuple(dict.fromkeys(e for e in self.entries if not is_pattern(e) and e != self.own))

    @property
    def closed(self) -> bool:
        """Only names: every cluster that can count is known in advance."""
        return not any(is_pattern(e) for e in self.entries)

    def __str__(self) -> str:
        return ", ".join(self.entries)


@dataclass(frozen=True)
class Quorum:
    """``clusters``, ``minClusters`` and ``maxFailures`` of one requirement (``minAge`` is the
    requirement's own)."""

    selection: Selection
    min_clusters: int
    max_failures: int = 0


class State(enum.Enum):
    HEALTHY = "healthy"
    #: healthy, but for less than ``minAge``
    SOAKING = "soaking"
    FAILING = "failing"
    #: every ``healthyAt`` it wrote lies in the future: its clock is wrong, it does not count
    SKEWED = "skewed"
    #: only attestations whose signature (or subject) did not verify claim this cluster
    REFUSED = "refused"
    #: seen attesting another digest, nothing for this one
    NOT_YET = "not yet"


@dataclass(frozen=True)
class ClusterState:
    """One cluster's standing for one digest."""

    cluster: str
    state: State
    #: the earliest healthyAt not in the future (HEALTHY, SOAKING), or the failedAt (FAILING)
    since: dt.datetime | None = None
    #: seconds until the soak has passed (SOAKING)
    remaining: float | None = None
    #: why it does not count, in a few words (REFUSED, SKEWED)
    detail: str = ""


def cluster_states(
    found: attest.Found, *, now: dt.datetime, min_age: float = 0.0, known: Iterable[str] = ()
) -> dict[str, ClusterState]:
    """Each cluster's standing for the digest ``found`` is about, by cluster name.

    Verified health attestations decide: a failing one wins over any healthy one (a digest
    that failed once stays failed there); several healthy ones count once, from the earliest
    ``healthyAt`` that is not in the future. A cluster named only by refused bundles is
    REFUSED (the claim is unverified: it is named, never counted); ``known`` clusters with
    nothing are NOT_YET."""
    healthy: dict[str, list[dt.datetime]] = {}
    skewed: dict[str, dt.datetime] = {}
    failing: dict[str, dt.datetime | None] = {}
    for item in found.attestations:
        cluster = item.predicate.get("cluster")
        if not isinstance(cluster, str) or item.predicate_type not in (attest.HEALTHY, attest.UNHEALTHY):
            continue
        if item.predicate_type == attest.UNHEALTHY:
            at = attest.parse_time(item.predicate.get("failedAt"))
            earlier = failing.get(cluster)
            failing[cluster] = at if earlier is None or (at is not None and at < earlier) else earlier
            continue
        at = attest.parse_time(item.predicate.get("healthyAt"))
        if at is None:
            continue
        if (at - now).total_seconds() > attest.ROUNDING:
            skewed[cluster] = min(at, skewed.get(cluster, at))
        else:
            healthy.setdefault(cluster, []).append(at)
    states: dict[str, ClusterState] = {}
    for cluster, failed_at in failing.items():
        states[cluster] = ClusterState(cluster, State.FAILING, since=failed_at)
    for cluster, times in healthy.items():
        if cluster in states:
            continue
        since = min(times)
        left = min_age - max(0.0, (now - since).total_seconds())
        if left > 0:
            states[cluster] = ClusterState(cluster, State.SOAKING, since=since, remaining=left)
        else:
            states[cluster] = ClusterState(cluster, State.HEALTHY, since=since)
    for cluster, at in skewed.items():
        if cluster not in states:
            detail = f"healthyAt {attest.timestamp(at)} is in the future: clock skew"
            states[cluster] = ClusterState(cluster, State.SKEWED, detail=detail)
    for refusal in found.refused:
        cluster = refusal.claimed_cluster
        if (
            cluster is None
            or cluster in states
            or refusal.claimed_type not in (attest.HEALTHY, attest.UNHEALTHY)
        ):
            continue
        states[cluster] = ClusterState(cluster, State.REFUSED, detail=_why(refusal.reason))
    for cluster in known:
        states.setdefault(cluster, ClusterState(cluster, State.NOT_YET))
    return states


def _why(reason: str) -> str:
    """A refusal's reason without the referrer it names (``referrer sha256:...: why``)."""
    where, separator, why = reason.partition(": ")
    return why if separator and where.startswith("referrer ") else reason


@dataclass(frozen=True)
class Tally:
    """A quorum's verdict for one digest."""

    met: bool
    #: failing beyond ``maxFailures`` (or, with names only, too few left to ever meet it):
    #: refused for good, since attestations are never deleted
    refused: bool
    #: the clusters that count, by name
    healthy: tuple[str, ...]
    #: the selected clusters that do not count (yet), with their standing
    missing: tuple[ClusterState, ...]
    failing: tuple[ClusterState, ...]
    #: seconds until enough soaking clusters have soaked (None: soaking alone will not do)
    remaining: float | None
    reason: str


def tally(
    quorum: Quorum,
    found: attest.Found,
    *,
    now: dt.datetime,
    min_age: float = 0.0,
    known: Iterable[str] = (),
    signers: str = "",
) -> Tally:
    """Whether ``quorum`` is met by the attestations of one digest, and if not, why in words:
    ``3/5 of staging-* healthy for 1h; missing staging-eu-2 (20m left), staging-ap-1``.

    ``known`` adds clusters seen attesting other digests, so they are named as missing;
    ``signers`` names the required key(s) in place of a refused bundle's list of keys."""
    selection = quorum.selection
    everything = cluster_states(found, now=now, min_age=min_age, known=[*selection.names, *known])
    states = {c: s for c, s in sorted(everything.items()) if selection.matches(c)}
    healthy = tuple(c for c, s in states.items() if s.state is State.HEALTHY)
    failing = tuple(s for s in states.values() if s.state is State.FAILING)
    missing = tuple(s for s in states.values() if s.state not in (State.HEALTHY, State.FAILING))
    need = quorum.min_clusters
    if len(failing) > quorum.max_failures:
        reason = (
            f"refused: {len(failing)} of {selection} attested failing their health checks "
            f"(maxFailures {quorum.max_failures}): {_failures(failing)}"
        )
        return Tally(False, True, healthy, missing, failing, None, reason)
    if failing and selection.closed and len(selection.names) - len(failing) < need:
        reason = (
            f"refused: {_failures(failing)} attested failing, so at most "
            f"{len(selection.names) - len(failing)} of {selection} can be healthy, not {need}"
        )
        return Tally(False, True, healthy, missing, failing, None, reason)
    if len(healthy) >= need:
        return Tally(True, False, healthy, missing, failing, None, "")
    soaking = sorted(s.remaining or 0.0 for s in missing if s.state is State.SOAKING)
    short = need - len(healthy)
    remaining = soaking[short - 1] if len(soaking) >= short else None
    soak = f" for {attest.format_duration(min_age)}" if min_age else ""
    words = f"{len(healthy)}/{need} of {selection} healthy{soak}"
    if missing:
        named = [_missing(s, signers) for s in missing[:NAMED]]
        more = f" and {len(missing) - NAMED} more" if len(missing) > NAMED else ""
        words += f"; missing {', '.join(named)}{more}"
    elif not states:
        others = sorted(c for c in everything if c not in states and c != selection.own)
        words += f"; no attesting cluster matches {selection}"
        if others:
            words += f" (attested: {', '.join(others[:NAMED])})"
    if failing:
        words += f"; failing {_failures(failing)} (maxFailures {quorum.max_failures})"
    return Tally(False, False, healthy, missing, failing, remaining, words)


def _missing(state: ClusterState, signers: str) -> str:
    if state.state is State.SOAKING:
        return f"{state.cluster} ({attest.format_duration(state.remaining or 0.0)} left)"
    if state.state is State.REFUSED:
        detail = state.detail
        if signers and detail.startswith("not signed by "):
            detail = f"not signed by {signers}"
        return f"{state.cluster} (refused: {detail})"
    if state.state is State.SKEWED:
        return f"{state.cluster} ({state.detail})"
    return state.cluster


def _failures(failing: Iterable[ClusterState]) -> str:
    return ", ".join(f"{s.cluster} at {attest.timestamp(s.since)}" if s.since else s.cluster for s in failing)
