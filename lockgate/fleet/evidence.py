"""Reading the fleet from the registry: a repository's revisions and their health attestations.

The I/O half of ``matrix``. A ``Reader`` serves one repository and the attesters its user
trusts (``policies``: keys, sets of keys, keyless identities, in the user's order). Requests:
``revisions`` lists the tags once and resolves each (one HEAD), and reads a digest's manifest
(for its ``created`` annotation) the first time it sees that digest; ``evidence`` asks for a
digest's referrers (one request) and fetches and verifies only the bundles it has not seen
before. A referrer is addressed by its digest and never changes, so what each policy made of
it is kept for as long as the reader lives: a ``lockgate fleet --watch`` refresh or a status
page refresh of an unchanged digest costs one referrers request. Registry failures raise;
a bundle that cannot be read or verified is a refusal, kept with its reason.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from lockgate import semver as versions
from lockgate.artifact import metadata
from lockgate.errors import LockgateError, UsageError
from lockgate.fleet import matrix
from lockgate.fleet.matrix import Claim, Fleet, Revision
from lockgate.registry import RegistryClient, oci
from lockgate.registry.reference import Reference
from lockgate.signing import attest, store
from lockgate.signing.attest import Attestation, AttestationPolicy, Found, Refusal

#: what a policy made of one referrer: verified, refused, or neither (a signature, not an attestation)
Verdict = Attestation | Refusal | None
HEALTH_TYPES = (attest.HEALTHY, attest.UNHEALTHY)


@dataclass(frozen=True)
class Selection:
    """Which revisions: every tag (the default), those in a semver range, or the newest ``last``."""

    semver: str | None = None
    last: int | None = None

    def check(self, ref: Reference) -> None:
        if self.last is not None and self.last < 1:
            raise UsageError(f"--last {self.last}: give how many digests to show, at least 1")
        if (ref.tag or ref.digest) and (self.semver or self.last):
            option = "--semver" if self.semver else "--last"
            raise UsageError(
                f"{option} selects among the tags of a repository; give oci://{ref.name} "
                f"(without {'a tag' if ref.digest is None else 'a digest'})"
            )

    def constraints(self) -> versions.Constraints | None:
        if self.semver is None:
            return None
        try:
            return versions.Constraints.parse(self.semver)
        except versions.SemverError as exc:
            raise UsageError(f"--semver {self.semver!r}: {exc}") from None


@dataclass(frozen=True)
class Evidence:
    """What the referrers of one digest hold, per policy of the reader (in its order)."""

    digest: str
    #: referrer digest -> one verdict per policy
    verdicts: tuple[tuple[str, tuple[Verdict, ...]], ...]

    def found(self, policy: int) -> Found:
        """What ``policy`` (its index) verified and refused, as ``attest.read`` says it, for
        ``requirements.evaluate``."""
        verified: list[Attestation] = []
        refused: list[Refusal] = []
        for _, per_policy in self.verdicts:
            verdict = per_policy[policy]
            if isinstance(verdict, Attestation):
                verified.append(verdict)
            elif isinstance(verdict, Refusal):
                refused.append(verdict)
        return Found(verified, refused)

    def claims(self) -> list[Claim]:
        """The health claims: verified by any policy (the first that verified it signs), or
        unverified with every policy's reason."""
        out = []
        for referrer, per_policy in self.verdicts:
            verified = next(
                (v for v in per_policy if isinstance(v, Attestation) and v.predicate_type in HEALTH_TYPES),
                None,
            )
            if verified is not None:
                claim = _verified_claim(verified, referrer)
            else:
                claim = _unverified_claim([v for v in per_policy if isinstance(v, Refusal)], referrer)
            if claim is not None:
                out.append(claim)
        return out


def _verified_claim(found: Attestation, referrer: str) -> Claim | None:
    cluster = found.predicate.get("cluster")
    if not isinstance(cluster, str) or not cluster:
        return None
    healthy = found.predicate_type == attest.HEALTHY
    at = found.predicate.get("healthyAt" if healthy else "failedAt")
    sync = found.predicate.get("sync")
    return Claim(
        cluster=cluster,
        healthy=healthy,
        at=at if isinstance(at, str) else "",
        verified=True,
        signer=found.signer,
        sync=sync if isinstance(sync, str) else "",
        referrer=referrer,
    )


def _unverified_claim(refusals: list[Refusal], referrer: str) -> Claim | None:
    claimed = next((r for r in refusals if r.claimed_type in HEALTH_TYPES and r.claimed_cluster), None)
    if claimed is None or claimed.claimed_cluster is None:
        return None
    prefix = f"referrer {referrer}: "
    reasons = list(dict.fromkeys(r.reason.removeprefix(prefix) for r in refusals))
    return Claim(
        cluster=claimed.claimed_cluster,
        healthy=claimed.claimed_type == attest.HEALTHY,
        at="",
        verified=False,
        referrer=referrer,
        reason=prefix + "; ".join(reasons),
    )


class Reader:
    """The revisions and evidence of one repository, for ``policies`` (at least one)."""

    def __init__(
        self, client: RegistryClient, repository: str, policies: Sequence[AttestationPolicy]
    ) -> None:
        if not policies:
            raise UsageError("no attester to check the attestations against: give a key or an identity")
        self.client = client
        self.repository = repository
        self.policies = tuple(policies)
        self._lock = threading.Lock()
        self._verdicts: dict[str, tuple[Verdict, ...]] = {}
        self._created: dict[str, str] = {}

    # ---- evidence ---------------------------------------------------------------------------
    def evidence(self, digest: str) -> Evidence:
        """The referrers of ``digest`` (one request), each new one fetched and verified once."""
        referrers = store.bundle_referrers(self.client, self.repository, digest)
        with self._lock:
            new = [r for r in referrers if r not in self._verdicts]
        if new:
            bundles = [store.read_bundle(self.client, self.repository, r) for r in new]
            read = [
                attest.read(self.client, self.repository, digest, policy, bundles=bundles)
                for policy in self.policies
            ]
            with self._lock:
                for bundle in bundles:
                    self._verdicts[bundle.manifest_digest] = tuple(
                        _verdict_of(found, bundle.manifest_digest) for found in read
                    )
        with self._lock:
            return Evidence(digest, tuple((r, self._verdicts[r]) for r in referrers))

    # ---- revisions --------------------------------------------------------------------------
    def revisions(self, ref: Reference, selection: Selection) -> list[Revision]:
        """The revisions ``ref`` and ``selection`` name, newest first."""
        selection.check(ref)
        if ref.tag or ref.digest:
            pinned = self.client.resolve(ref)
            tags = (ref.tag,) if ref.tag and not ref.digest else ()
            return [Revision(pinned, tags, self._created_of(pinned))]
        constraints = selection.constraints()
        listed = [t for t in self.client.list_tags(self.repository) if oci.is_artifact_tag(t)]
        if constraints is not None:
            listed = versions.in_range_descending(constraints, listed)
        by_digest: dict[str, list[str]] = {}
        for tag in listed:
            digest = self.client.head_manifest(self.repository, tag)
            if digest is not None:  # None: deleted since the listing
                by_digest.setdefault(digest, []).append(tag)
        found = [
            Revision(digest, matrix.tags_in_order(named), self._created_of(digest))
            for digest, named in by_digest.items()
        ]
        ordered = matrix.newest_first(found)
        return ordered[: selection.last] if selection.last else ordered

    def _created_of(self, digest: str) -> str:
        with self._lock:
            if digest in self._created:
                return self._created[digest]
        try:
            fetched = self.client.get_manifest(self.repository, digest)
            annotations = oci.read(fetched.content, f"manifest {digest}").get("annotations") or {}
            created = annotations.get(metadata.CREATED)
            value = created if isinstance(created, str) else ""
        except (LockgateError, ValueError, AttributeError):
            value = ""  # an unreadable manifest sorts by its tags: the fleet is still worth showing
        with self._lock:
            self._created[digest] = value
        return value

    # ---- the fleet --------------------------------------------------------------------------
    def fleet(self, ref: Reference, selection: Selection, *, now: dt.datetime | None = None) -> Fleet:
        """Revisions x clusters for ``ref`` (a repository, a tag or a digest)."""
        revisions = self.revisions(ref, selection)
        claims = {r.digest: self.evidence(r.digest).claims() for r in revisions}
        when = attest.timestamp(now or dt.datetime.now(dt.UTC))
        return matrix.build(ref.name, revisions, claims, time=when)


def _verdict_of(found: Found, referrer: str) -> Verdict:
    verified = next((a for a in found.attestations if a.manifest_digest == referrer), None)
    if verified is not None:
        return verified
    return next((r for r in found.refused if r.referrer == referrer), None)
