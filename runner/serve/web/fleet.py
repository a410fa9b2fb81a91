"""The status page's fleet: which clusters attested a sync's current digest and the one it wants.

Under ``serve``, a sync that requires attestations (``spec.verify.attestations``) or writes
them (``spec.attest``) shows, from the registry, the health attestations of the digest it runs
and of the digest it waits for, cluster by cluster (``lockgate.fleet``), each checked against
the keys and identities of its requirements and the key its own runner signs with; one that
none of them verifies is shown as unverified, never as healthy. For a waiting sync, each
requirement is shown with what it still waits for, cluster by cluster, in the words of
``requirements.evaluate`` (the same verdict a pass reaches).

A sync's view is read on demand and kept for the sync's interval (or until its digests
change), so a page that polls every two seconds costs the registry nothing in between; one
``evidence.Reader`` per sync remembers what every referrer verified as, so refreshing an
unchanged digest costs one referrers request. A registry or a key Secret that cannot be read
is shown as the view's ``error`` and tried again after ``RETRY`` seconds at most.
``lockgate status --web`` has no sync options, hence no policies, and shows no fleet.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lockgate import registry
from lockgate.errors import LockgateError
from lockgate.fleet import evidence, matrix
from lockgate.signing import keys, requirements
from lockgate.signing.attest import AttestationPolicy
from lockgate.signing.policy import KeylessPolicy, KeyPolicy, KeySetPolicy
from runner.kube.client import Kube
from runner.pipeline import secretrefs, source
from runner.pipeline.options import SyncOptions, runner_namespace
from runner.pipeline.secretrefs import SecretReader
from runner.plan.history import timestamp

#: a view that could not be read is tried again after this long at most
RETRY = 60.0


@dataclass(frozen=True)
class FleetSource:
    """Where a sync's attestations are read and whose word counts."""

    client: registry.RegistryClient
    repository: str
    #: the requirements' policies (requirement i has policy i), then the runner's own key
    policies: tuple[AttestationPolicy, ...]
    requirements: tuple[requirements.Requirement, ...]
    interval: float


#: a sync's source, or None when it neither requires nor writes attestations; raises
#: ``LockgateError`` when a key Secret cannot be read
SourceFor = Callable[[str], "FleetSource | None"]


class PublicHalves:
    """The public half of each runner attestation key the page has seen, by the key's bytes.

    The private key is encrypted with scrypt (a tenth of a second to open): it is opened once
    per key, not at every refresh, and only its public half is kept. The Secret itself is
    read at every refresh, as a pass reads it, so a rotated key is seen."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[bytes, keys.PublicKey] = {}

    def of(self, kube_secrets: SecretReader, name: str) -> keys.PublicKey:
        data = kube_secrets.read(name, field=secretrefs.ATTEST_FIELD)
        key = data.get(secretrefs.SIGNING_KEY_ENTRY, b"")
        held = hashlib.sha256(key + b"\0" + data.get(secretrefs.SIGNING_PASSWORD_ENTRY, b"")).digest()
        with self._lock:
            known = self._known.get(held)
        if known is None:
            known = kube_secrets.signing_key(name).public_key()
            with self._lock:
                self._known[held] = known
        return known


def source_of(
    options: SyncOptions,
    *,
    client: registry.RegistryClient,
    kube_secrets: SecretReader,
    halves: PublicHalves,
) -> FleetSource | None:
    """The fleet source of a sync: its requirements (keys read from their Secrets) and the
    public half of the key its own ``attest`` signs with."""
    requirements = source.requirements(options.source, kube_secrets) if options.source.attestations else ()
    policies: list[AttestationPolicy] = [r.policy for r in requirements]
    if options.attest is not None:
        own = halves.of(kube_secrets, options.attest.secret_ref)
        # it attests for its own cluster only: the page binds it there, as a Sync binds its keys
        cluster = options.attest.cluster
        policies.append(KeyPolicy(own, f"this runner's key ({cluster})", cluster=cluster))
    if not policies:
        return None
    return FleetSource(
        client=client,
        repository=registry.parse(options.source.url).repository,
        policies=tuple(policies),
        requirements=requirements,
        interval=options.schedule.interval,
    )


def served_source(
    options: SyncOptions, *, kube: Kube, client: registry.RegistryClient | None, halves: PublicHalves
) -> FleetSource | None:
    """``source_of`` with the Secrets of the sync's runner namespace, under ``serve``."""
    if client is None:
        return None
    secrets = SecretReader(kube, runner_namespace(options.namespace))
    return source_of(options, client=client, kube_secrets=secrets, halves=halves)


def _fingerprint(policy: AttestationPolicy) -> str:
    if isinstance(policy, KeyPolicy):
        return "key " + keys.key_id(policy.key) + (f" for {policy.cluster}" if policy.cluster else "")
    if isinstance(policy, KeySetPolicy):
        return "keys " + " ".join(_fingerprint(p) for p in policy.keys)
    assert isinstance(policy, KeylessPolicy)
    return repr(policy)


def requirement_clusters(requirement: requirements.Requirement, attested: Iterable[str]) -> list[str]:
    """The clusters a requirement waits for, one row each: its cluster, or a quorum's names and
    every ``attested`` cluster its patterns select (never the asking runner's own)."""
    if requirement.quorum is None:
        return [requirement.cluster] if requirement.cluster else []
    selection = requirement.quorum.selection
    return sorted({*selection.names, *(name for name in attested if selection.matches(name))})


def _requirement_json(
    requirement: requirements.Requirement, found: evidence.Evidence, index: int, now: dt.datetime
) -> dict[str, Any]:
    verdict = requirements.evaluate(requirement, found.found(index), now=now)
    # this requirement's policy alone decides its clusters' cells
    alone = evidence.Evidence(found.digest, tuple((r, (v[index],)) for r, v in found.verdicts))
    cells = matrix.cells(alone.claims())
    wanted = requirement_clusters(requirement, cells)
    return {
        "requirement": requirement.describe(),
        "ok": verdict.ok,
        "reason": verdict.reason,
        "excluded": verdict.excluded,
        "clusters": [
            {"cluster": name, **cells.get(name, matrix.NONE).to_json(), "soakLeft": verdict.remaining}
            for name in wanted
        ],
    }


@dataclass
class _Kept:
    at: float
    digests: tuple[str, str]
    view: dict[str, Any]
    fingerprint: tuple[str, ...] = ()
    reader: evidence.Reader | None = None
    interval: float = RETRY


class FleetCache:
    """Each sync's fleet view, read when asked and kept for the sync's interval."""

    def __init__(self, source_for: SourceFor, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._source_for = source_for
        self._clock = clock
        self._lock = threading.Lock()
        self._kept: dict[str, _Kept] = {}
        self._refreshing: dict[str, threading.Lock] = {}

    def view(self, sync: str, *, current: str, wanted: str) -> dict[str, Any] | None:
        """The sync's fleet for its ``current`` digest and the ``wanted`` one ("": none); None
        when the sync has no attestation policy."""
        digests = (current, wanted)
        with self._lock:
            kept = self._kept.get(sync)
            gate = self._refreshing.setdefault(sync, threading.Lock())
        if kept is not None and kept.digests == digests and self._clock() - kept.at < kept.interval:
            return kept.view or None
        with gate:  # one refresh per sync at a time; the others wait for it and take its view
            with self._lock:
                kept = self._kept.get(sync)
            if kept is not None and kept.digests == digests and self._clock() - kept.at < kept.interval:
                return kept.view or None
            fresh = self._read(sync, digests, kept)
            with self._lock:
                self._kept[sync] = fresh
            return fresh.view or None

    def _read(self, sync: str, digests: tuple[str, str], kept: _Kept | None) -> _Kept:
        now = dt.datetime.now(dt.UTC)
        checked = timestamp(now)
        try:
            found = self._source_for(sync)
        except LockgateError as exc:
            return _Kept(
                self._clock(), digests, _failed(checked, f"cannot read the attesters' keys: {exc.message}")
            )
        if found is None:
            return _Kept(self._clock(), digests, {})
        fingerprint = tuple(_fingerprint(p) for p in found.policies)
        reader = kept.reader if kept is not None and kept.fingerprint == fingerprint else None
        if reader is None or reader.repository != found.repository:
            reader = evidence.Reader(found.client, found.repository, found.policies)
        try:
            view = _view(reader, found, digests, now)
        except LockgateError as exc:
            view = _failed(checked, f"cannot read the attestations from the registry: {exc.message}")
            return _Kept(self._clock(), digests, view, fingerprint, reader, min(RETRY, found.interval))
        return _Kept(self._clock(), digests, view, fingerprint, reader, found.interval)


def _failed(checked: str, message: str) -> dict[str, Any]:
    return {"checkedAt": checked, "error": message, "clusters": [], "digests": [], "waitsFor": []}


def _view(
    reader: evidence.Reader, found: FleetSource, digests: tuple[str, str], now: dt.datetime
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    waits: list[dict[str, Any]] = []
    for role, digest in zip(("current", "wanted"), digests, strict=True):
        if not digest:
            continue
        read = reader.evidence(digest)
        rows.append({"role": role, "digest": digest, "cells": matrix.cells(read.claims())})
        if role == "wanted":
            waits = [_requirement_json(r, read, i, now) for i, r in enumerate(found.requirements)]
    clusters = sorted({name for row in rows for name in row["cells"]})
    return {
        "checkedAt": timestamp(now),
        "error": "",
        "clusters": clusters,
        "digests": [
            row | {"cells": {name: row["cells"].get(name, matrix.NONE).to_json() for name in clusters}}
            for row in rows
        ],
        "waitsFor": waits,
    }
