"""This replica among the others: its member Lease as ``serve`` keeps it, and what it says about it.

``Replica`` wraps ``leases.Membership`` for the service. ``join`` runs once the listeners
are up, so a ``serve`` that fails to start (a port in use) never becomes a member that the
others would hand syncs to; ``tick`` renews the Lease from the housekeeping thread every
third of the membership duration, at once after a reload changed the configuration digest
(``reconfigured``), and sooner after a failure; ``leave`` deletes it on the way out.

Each change of standing is one log event: an error when this replica's configuration
differs from the one the longest-running members run (it then runs no sync, and says so as
each sync's reason and in ``/readyz``'s text), an info line when they agree again. Member
Leases of replicas that stopped renewing, deleted by the heartbeat, are logged too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from lockgate.errors import LockgateError
from runner.plan import shard
from runner.serve import leases

log = logging.getLogger("lockgate.serve")

#: how soon a failed heartbeat is tried again
RETRY = 5.0


def short(digest: str) -> str:
    """``sha256:0123456789ab``: enough to tell two configurations apart in a log line."""
    return digest[: len("sha256:") + 12] if digest else "none recorded"


class Replica:
    def __init__(
        self,
        membership: leases.Membership,
        *,
        on_change: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.membership = membership
        self._on_change = on_change
        self._clock = clock
        self._joined = False
        self._due = 0.0
        self._standing_by = False

    @property
    def standing_by(self) -> bool:
        return self.membership.sharing().standing_by

    @property
    def listed(self) -> bool:
        return self.membership.listed

    def join(self) -> None:
        """The first heartbeat; a failure is logged (the API server may come up later)."""
        self._joined = True
        self.tick(force=True)

    def reconfigured(self, digest: str) -> None:
        """A reload changed what this replica runs: tell the others at the next tick."""
        if digest != self.membership.config:
            self.membership.config = digest
            self._due = 0.0

    def tick(self, *, force: bool = False) -> None:
        now = self._clock()
        if not self._joined or (not force and now < self._due):
            return
        before = self.membership.live()
        try:
            self.membership.heartbeat()
        except LockgateError as exc:
            self._due = now + min(RETRY, self.membership.duration / 3)
            log.warning("membership heartbeat failed", extra={"reason": exc.message.splitlines()[0]})
            return
        self._due = now + self.membership.duration / 3
        expired, self.membership.expired = self.membership.expired, []
        for name in expired:
            log.info(
                "deleted the member Lease of a replica that stopped renewing it",
                extra={"lease": f"{self.membership.namespace}/{name}"},
            )
        self._report(self.membership.sharing())
        if self.membership.live() != before:
            self._on_change()

    def _report(self, sharing: shard.Sharing) -> None:
        if sharing.standing_by == self._standing_by:
            return
        self._standing_by = sharing.standing_by
        if sharing.standing_by:
            log.error(
                "standing by: this replica's configuration differs from the one the running "
                "replicas share, so it runs no sync until the files agree; give every replica the "
                "same Sync documents and Runner settings (a reload on its way settles this by itself)",
                extra={
                    "config": short(self.membership.config),
                    "theirs": short(sharing.their_config),
                    "replicas": ",".join(sharing.deferring_to),
                },
            )
        else:
            log.info(
                "configuration agrees with the other replicas: taking a share of the syncs",
                extra={"config": short(self.membership.config), "replicas": ",".join(sharing.peers)},
            )

    def owns(self, sync: str) -> bool:
        return self.membership.owns(sync)

    def elsewhere(self) -> str:
        """Why a sync is not run here."""
        sharing = self.membership.sharing()
        if not sharing.standing_by:
            return "run by another replica"
        return (
            f"standing by: this replica's configuration ({short(self.membership.config)}) differs "
            f"from the one {', '.join(sharing.deferring_to)} run ({short(sharing.their_config)})"
        )

    def leave(self) -> None:
        if not self._joined:
            return
        self._joined = False
        try:
            self.membership.leave()
        except LockgateError as exc:
            log.warning("could not leave the membership", extra={"reason": exc.message.splitlines()[0]})
