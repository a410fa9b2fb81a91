"""The status page's reads: inventories and Events from the cluster, provenance from the registry.

The I/O half of ``view``. A ``Reader`` answers the page's two questions (all syncs, one
sync) with what a ``lockgate status`` reader can see: the inventory Secrets and the Events
lockgate wrote on them in the runner namespace, and the artifact's manifest annotations
(``org.opencontainers.image.source``/``.revision``, for the link to the commit), fetched
once per digest since a digest never changes. Under ``serve`` the scheduler's live state
is joined in (``live``), and the fleet of each sync's digests (``fleet``: which clusters
attested them, kept for the sync's interval); ``lockgate status --web`` has neither.
Listings are kept for a second, so a page polling every two seconds costs one list request
per namespace.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lockgate import registry
from lockgate.artifact import metadata
from lockgate.errors import LockgateError
from lockgate.registry import oci
from runner.inventory import store
from runner.kube.client import Kube
from runner.kube.discovery import EVENT
from runner.plan import applyset
from runner.plan.history import timestamp
from runner.plan.inventory import Inventory
from runner.serve.web import view
from runner.serve.web.fleet import FleetCache
from runner.serve.web.view import LiveSync, Provenance

log = logging.getLogger(__name__)

LIST_SECONDS = 1.0
#: a registry that did not answer is asked again after this long
RETRY_PROVENANCE = 60.0

#: the registry client for an artifact URL (oci://host/repo@digest), or None to not ask
RegistryFor = Callable[[str, str], registry.RegistryClient | None]


@dataclass(frozen=True)
class Configured:
    """A sync a running ``serve`` runs: its runner namespace and live state."""

    namespace: str
    live: LiveSync


def anonymous_registry(_sync: str, url: str) -> registry.RegistryClient:
    """A client with the machine's registry credentials (``docker login``), for ``status --web``."""
    return registry.RegistryClient.for_reference(registry.parse(url))


class Reader:
    def __init__(
        self,
        kube: Kube,
        *,
        namespaces: Callable[[], list[str]],
        registry_for: RegistryFor = anonymous_registry,
        live: Callable[[], dict[str, Configured]] | None = None,
        generation: Callable[[], int] = lambda: 0,
        fleet: FleetCache | None = None,
    ) -> None:
        self.kube = kube
        self._namespaces = namespaces
        self._registry_for = registry_for
        self._live = live
        self._generation = generation
        self._fleet = fleet
        self._lock = threading.Lock()
        self._listings: dict[str, tuple[float, store.Listing]] = {}
        self._provenance: dict[str, tuple[float, Provenance | None]] = {}

    @property
    def mode(self) -> str:
        return "serve" if self._live is not None else "local"

    # ---- reads ------------------------------------------------------------------------------
    def _listing(self, namespace: str) -> store.Listing:
        now = time.monotonic()
        with self._lock:
            kept = self._listings.get(namespace)
        if kept is not None and now - kept[0] < LIST_SECONDS:
            return kept[1]
        listing = store.list_all(self.kube, namespace)
        with self._lock:
            self._listings[namespace] = (now, listing)
        return listing

    def _provenance_of(self, inventory: Inventory) -> Provenance | None:
        digest, url = inventory.digest, inventory.source
        if not digest or not url:
            return None
        now = time.monotonic()
        with self._lock:
            kept = self._provenance.get(digest)
        if kept is not None and (kept[1] is not None or now - kept[0] < RETRY_PROVENANCE):
            return kept[1]
        found: Provenance | None = None
        try:
            client = self._registry_for(inventory.name, url)
            if client is not None:
                ref = registry.parse(url)
                manifest = client.get_manifest(ref.repository, digest)
                annotations = oci.read(manifest.content, f"manifest of {url}").get("annotations") or {}
                found = Provenance(
                    source=str(annotations.get(metadata.SOURCE, "")),
                    revision=str(annotations.get(metadata.REVISION, "")),
                )
        except (LockgateError, ValueError, AttributeError) as exc:
            log.debug("no provenance for %s: %s", url, exc)
        with self._lock:
            self._provenance[digest] = (now, found)
        return found

    def _inventories(self) -> tuple[list[tuple[Inventory, bool, LiveSync | None]], list[str]]:
        """(inventory, exists, live) per sync shown, and problems to show."""
        problems: list[str] = []
        shown: list[tuple[Inventory, bool, LiveSync | None]] = []
        if self._live is None:
            for namespace in self._namespaces():
                listing = self._listing(namespace)
                shown.extend((inv, True, None) for inv in listing.inventories)
                problems.extend(f"Secret {namespace}/{name}: {why}" for name, why in listing.problems)
            return shown, problems
        configured = self._live()
        by_namespace: dict[str, dict[str, Inventory]] = {}
        for namespace in sorted({c.namespace for c in configured.values()}):
            try:
                listing = self._listing(namespace)
            except LockgateError as exc:
                problems.append(f"namespace {namespace}: {exc.message}")
                continue
            by_namespace[namespace] = {inv.name: inv for inv in listing.inventories}
            problems.extend(f"Secret {namespace}/{name}: {why}" for name, why in listing.problems)
        for name, sync in configured.items():
            inventory = by_namespace.get(sync.namespace, {}).get(name)
            if inventory is None:
                shown.append((Inventory(name=name, namespace=sync.namespace), False, sync.live))
            else:
                shown.append((inventory, True, sync.live))
        return shown, problems

    def _fleet_of(self, inventory: Inventory) -> dict[str, Any] | None:
        if self._fleet is None:
            return None
        wanted = view.waiting_digest(inventory.waiting)
        return self._fleet.view(inventory.name, current=inventory.digest, wanted=wanted)

    def _row(self, inventory: Inventory, exists: bool, live: LiveSync | None) -> dict[str, Any]:
        if not exists and live is not None:
            return view.pending_row(inventory.name, inventory.namespace, live)
        return view.row(
            inventory, provenance=self._provenance_of(inventory), live=live, fleet=self._fleet_of(inventory)
        )

    def overview(self) -> dict[str, Any]:
        shown, problems = self._inventories()
        return {
            "mode": self.mode,
            "generation": self._generation(),
            "time": timestamp_now(),
            "syncs": [self._row(inv, exists, live) for inv, exists, live in shown],
            "problems": problems,
        }

    def sync(self, name: str) -> dict[str, Any] | None:
        shown, _ = self._inventories()
        found = next(((inv, e, live) for inv, e, live in shown if inv.name == name), None)
        if found is None:
            return None
        inventory, exists, live = found
        events: list[dict[str, Any]] = []
        events_error = ""
        if exists:
            parent = applyset.parent_name(name)
            try:
                events = [
                    e
                    for e in self.kube.list_all(EVENT, inventory.namespace)
                    if (e.get("involvedObject") or {}).get("name") == parent
                    and (e.get("involvedObject") or {}).get("kind") == "Secret"
                ]
            except LockgateError as exc:
                events_error = f"cannot list Events in {inventory.namespace}: {exc.message}"
        return view.detail(
            inventory,
            events=events,
            provenance=self._provenance_of(inventory) if exists else None,
            live=live,
            exists=exists,
            fleet=self._fleet_of(inventory) if exists else None,
        ) | {
            "mode": self.mode,
            "generation": self._generation(),
            "time": timestamp_now(),
            "eventsError": events_error,
        }


def timestamp_now() -> str:
    return timestamp(dt.datetime.now(dt.UTC))
