"""What a cluster runs for a sync, from the registry alone: the digest its runner last attested healthy.

A runner with ``spec.attest`` signs "healthy in cluster X, sync S" about each digest it made
healthy (``lockgate.signing.attest``); the latest such attestation that verifies with the key
(or keyless identity) the reader trusts for X names what X runs for S, as far as anything
outside the cluster can tell. ``candidates`` finds the digests that may carry one: those the
repository's referrer tags name (``sha256-<hex>``, the fallback index of a registry without the
referrers API, and cosign's ``.sig``/``.att`` tags; every attested digest has one there, also
once no tag names it) and those the sync's own tags name (a registry with the referrers API
keeps no such tags: there an attested digest no tag names any more is not found, and the
caller falls back). ``choose`` is pure: the newest verified healthy claim for the cluster and
the sync, unless the same runner attested that digest failing later; claims for the cluster
that did not verify are returned with their reasons, so a caller can name them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from lockgate.fleet.evidence import Reader
from lockgate.fleet.matrix import Claim
from lockgate.registry import RegistryClient

#: ``sha256-<hex>`` (the referrers fallback index) and cosign's ``sha256-<hex>.sig`` / ``.att``
_REFERRER_TAG = re.compile(r"^sha256-([0-9a-f]{64})(?:\.(?:sig|att|sbom))?$")
#: how many digests' referrers are read at once
CONCURRENCY = 8


@dataclass(frozen=True)
class Chosen:
    """The digest the cluster runs for the sync, and the attestation that says so."""

    digest: str
    claim: Claim


@dataclass(frozen=True)
class Looked:
    """What the attestations say about one cluster and sync."""

    chosen: Chosen | None
    #: claims for the cluster and sync that no trusted key or identity verified
    untrusted: tuple[Claim, ...] = ()
    #: digests the cluster attested healthy for the sync and later failing
    failed: tuple[str, ...] = ()


def referrer_digests(tags: Iterable[str]) -> list[str]:
    """The digests the referrer tags of a repository name, each once, in tag order."""
    found: dict[str, None] = {}
    for tag in tags:
        match = _REFERRER_TAG.match(tag)
        if match:
            found["sha256:" + match.group(1)] = None
    return list(found)


def candidates(client: RegistryClient, repository: str, tags: Sequence[str]) -> list[str]:
    """The digests that may carry a health attestation: those of the referrer tags (one tag
    listing), then those ``tags`` name (one HEAD each; a tag the registry does not know is left
    out)."""
    found = dict.fromkeys(referrer_digests(client.list_tags(repository)))
    for tag in tags:
        digest = client.head_manifest(repository, tag)
        if digest is not None:
            found.setdefault(digest)
    return list(found)


def claims(reader: Reader, digests: Sequence[str]) -> dict[str, list[Claim]]:
    """The health claims of each digest (its referrers read, each bundle verified once)."""
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        read = list(pool.map(reader.evidence, digests))
    return {evidence.digest: evidence.claims() for evidence in read}


def choose(by_digest: Mapping[str, Sequence[Claim]], *, cluster: str, sync: str) -> Looked:
    """The newest verified healthy claim of ``cluster`` for ``sync`` on a digest it did not
    attest failing afterwards."""
    best: Chosen | None = None
    untrusted: list[Claim] = []
    failed: list[str] = []
    for digest, found in by_digest.items():
        mine = [c for c in found if c.cluster == cluster]
        # an unverified claim's sync is not read (nothing in it can be believed)
        untrusted.extend(c for c in mine if not c.verified)
        verified = [c for c in mine if c.verified and c.sync == sync]
        healthy = [c for c in verified if c.healthy]
        if not healthy:
            continue
        latest = max(healthy, key=lambda c: c.at)
        if any(not c.healthy and c.at >= latest.at for c in verified):
            failed.append(digest)
            continue
        if best is None or latest.at > best.claim.at:
            best = Chosen(digest, latest)
    return Looked(best, tuple(untrusted), tuple(failed))
