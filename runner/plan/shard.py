"""Who runs which sync, and what a Lease says: the pure decisions under ``runner.serve.leases``.

Several replicas share the syncs by rendezvous (highest-random-weight) hashing: each
sync goes to the live member with the highest ``sha256(member, sync)`` weight, so when a
member leaves only its own syncs move, and a new member takes about ``1/n`` from each of
the others. The hash is sha256, not ``hash()``, so every replica (and every Python
process) computes the same owner. Only replicas on the same configuration share
(``sharing``): hashing over members that know other syncs would hand syncs to a replica
that does not run them.

The per-sync Lease (coordination.k8s.io/v1) is what makes a short overlap during
rebalancing safe: ``holder_of`` says whether a live other holder has it, and
``acquired``/``renewed``/``released`` give the next spec to write, with the fields
client-go's leader election writes (MicroTime stamps, ``leaseTransitions`` counted when
the holder changes, a released Lease with no holder and a one second duration).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: allowance for clocks that disagree between replicas: a Lease is taken over only this
#: long after its holder's own view of the expiry
CLOCK_SKEW = 2.0


def weight(member: str, sync: str) -> int:
    digest = hashlib.sha256(f"{member}\x00{sync}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def owner(sync: str, members: Iterable[str]) -> str | None:
    """The member that runs ``sync``; None when there are no members."""
    best: tuple[int, str] | None = None
    for member in members:
        candidate = (weight(member, sync), member)
        if best is None or candidate > best:
            best = candidate
    return None if best is None else best[1]


def assign(syncs: Iterable[str], members: Iterable[str]) -> dict[str, str]:
    """Every sync's owner (an empty dict when there are no members)."""
    live = sorted(set(members))
    if not live:
        return {}
    return {sync: owner(sync, live) or "" for sync in syncs}


@dataclass(frozen=True)
class Member:
    """A live replica as its member Lease describes it."""

    identity: str
    #: when it joined (the member Lease's ``acquireTime``); None when unknown
    joined: float | None = None
    #: the digest of the configuration it runs; "" from a runner that does not record one
    config: str = ""


@dataclass(frozen=True)
class Sharing:
    """Whom this replica shares the syncs with, or why it stands by and runs none."""

    peers: tuple[str, ...] = ()
    #: the members whose configuration decides, when this replica's differs from theirs
    deferring_to: tuple[str, ...] = ()
    #: their configuration digest
    their_config: str = ""

    @property
    def standing_by(self) -> bool:
        return bool(self.deferring_to)


def sharing(me: Member, members: Iterable[Member]) -> Sharing:
    """Only replicas running the same configuration share the syncs; which one wins is the
    configuration of the longest-running member, so a newcomer (or a replica still on an
    old file) runs nothing until the files agree, and some group always runs everything.

    Members that record no configuration (older runners) count as agreeing. Pure: ``me``
    is always among the members considered.
    """
    others = [m for m in members if m.identity != me.identity]
    everyone = [me, *others]
    known = [m for m in everyone if m.config]
    if not me.config or not known:
        return Sharing(peers=tuple(sorted(m.identity for m in everyone)))
    eldest = min(known, key=lambda m: (m.joined if m.joined is not None else math.inf, m.identity))
    if eldest.config != me.config:
        deciding = sorted(m.identity for m in known if m.config == eldest.config)
        return Sharing(deferring_to=tuple(deciding), their_config=eldest.config)
    return Sharing(peers=tuple(sorted(m.identity for m in everyone if m.config in ("", me.config))))


# ---- MicroTime ---------------------------------------------------------------------


def micro_time(when: float) -> str:
    """RFC 3339 with microseconds in UTC, as client-go writes ``metav1.MicroTime``."""
    return dt.datetime.fromtimestamp(when, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: object) -> float | None:
    """Seconds since the epoch of an RFC 3339 stamp (MicroTime or Time); None when absent or bad."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


# ---- Lease state -------------------------------------------------------------------


@dataclass(frozen=True)
class LeaseState:
    """The fields of a Lease's spec that decide who has it."""

    holder: str = ""
    duration: float = 0.0
    acquire_time: float | None = None
    renew_time: float | None = None
    transitions: int = 0

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> LeaseState:
        spec = spec or {}
        renew = parse_time(spec.get("renewTime"))
        acquire = parse_time(spec.get("acquireTime"))
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            duration=float(spec.get("leaseDurationSeconds") or 0),
            acquire_time=acquire,
            renew_time=renew if renew is not None else acquire,
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def expires(self) -> float | None:
        """When the holder's own view says the Lease runs out; None when it was never renewed."""
        return None if self.renew_time is None else self.renew_time + self.duration

    def live(self, now: float, *, skew: float = CLOCK_SKEW) -> bool:
        """Whether a holder has it and it has not run out (with ``skew`` to spare) at ``now``."""
        expires = self.expires()
        return bool(self.holder) and expires is not None and now < expires + skew


def holder_of(spec: Mapping[str, Any] | None, identity: str, now: float, *, skew: float = CLOCK_SKEW) -> str:
    """The live holder other than ``identity``, or "" when ``identity`` may take the Lease."""
    state = LeaseState.from_spec(spec)
    if state.holder == identity or not state.live(now, skew=skew):
        return ""
    return state.holder


def _seconds(duration: float) -> int:
    return max(1, math.ceil(duration))


def acquired(
    previous: Mapping[str, Any] | None, identity: str, now: float, duration: float
) -> dict[str, Any]:
    """The spec that makes ``identity`` the holder; ``previous`` is the live spec (None: a new Lease).

    As client-go: a new holder (including after a release) gets a fresh ``acquireTime`` and
    one more ``leaseTransitions``; the same holder taking it again keeps both.
    """
    state = LeaseState.from_spec(previous)
    same = previous is not None and state.holder == identity
    stamp = micro_time(now)
    transitions = state.transitions if same or previous is None else state.transitions + 1
    acquire = previous.get("acquireTime") if same and previous is not None else None
    return {
        "holderIdentity": identity,
        "leaseDurationSeconds": _seconds(duration),
        "acquireTime": acquire or stamp,
        "renewTime": stamp,
        "leaseTransitions": transitions,
    }


def renewed(previous: Mapping[str, Any], now: float, duration: float) -> dict[str, Any]:
    """The spec that extends the current holder's term to ``now + duration``."""
    return {**previous, "leaseDurationSeconds": _seconds(duration), "renewTime": micro_time(now)}


def released(previous: Mapping[str, Any], now: float) -> dict[str, Any]:
    """The spec of a Lease given up: no holder, as client-go's ``ReleaseOnCancel`` writes it."""
    stamp = micro_time(now)
    return {
        "leaseDurationSeconds": 1,
        "acquireTime": stamp,
        "renewTime": stamp,
        "leaseTransitions": int(previous.get("leaseTransitions") or 0),
    }
