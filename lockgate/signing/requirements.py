"""What a consumer requires of attestations, and whether a digest meets it.

A ``Requirement`` is one entry of a Sync's ``verify.attestations[]``: healthy in a cluster
for at least ``min_age`` (the runner's ``HEALTHY`` predicate, ``lockgate.signing.attest``),
another predicate type (a manual approval made with ``lockgate attest``), or a quorum of
clusters (``lockgate.signing.quorum``). ``evaluate`` is the pure decision over what
``attest.judge`` found; ``check_requirements`` reads the referrers of a digest once for all
requirements and judges them once per policy, so a quorum of many keys costs one read.
A downstream pass, ``lockgate fleet`` and the status page decide with the same rule.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from lockgate.errors import LockgateError, RegistryError, VerificationError
from lockgate.registry import RegistryClient
from lockgate.signing import attest, quorum, store
from lockgate.signing.attest import (
    HEALTHY,
    ROUNDING,
    UNHEALTHY,
    AttestationPolicy,
    Found,
    format_duration,
    judge,
    parse_time,
    timestamp,
)
from lockgate.signing.quorum import Quorum


@dataclass(frozen=True)
class Requirement:
    """A digest must be attested by ``policy``'s key: healthy in ``cluster``, at least ``min_age``
    ago (the runner's ``HEALTHY``), or any attestation of another ``predicate_type`` (a manual
    approval made with ``lockgate attest``), for ``cluster`` when one is named. With ``quorum``
    (``clusters``, ``minClusters``, ``maxFailures``) instead of ``cluster``: healthy in enough
    of the selected clusters."""

    cluster: str | None
    policy: AttestationPolicy
    min_age: float = 0.0
    predicate_type: str = HEALTHY
    quorum: Quorum | None = None

    def describe(self) -> str:
        if self.quorum is not None:
            soak = f" for {format_duration(self.min_age)}" if self.min_age else ""
            return f"{self.quorum.min_clusters} of {self.quorum.selection} healthy{soak}"
        if self.predicate_type != HEALTHY:
            return f"{self.predicate_type}" + (f" for {self.cluster}" if self.cluster else "")
        soak = f", {format_duration(self.min_age)} soak" if self.min_age else ""
        return f"healthy in {self.cluster}{soak}"


@dataclass(frozen=True)
class Verdict:
    """Whether a digest meets a requirement; if not, what it is waiting for and for how long."""

    ok: bool
    reason: str = ""
    #: seconds until the soak has passed (None: no healthy attestation yet, or refused for good)
    remaining: float | None = None
    #: a failing attestation exists: the digest is excluded, not merely waiting
    excluded: bool = False


def evaluate(
    requirement: Requirement, found: Found, *, now: dt.datetime, known: frozenset[str] = frozenset()
) -> Verdict:
    """Check one requirement against the verified attestations of one digest (``known``: the
    clusters seen attesting other digests, which a quorum names when they are missing)."""
    if requirement.predicate_type != HEALTHY:
        return _evaluate_other(requirement, found)
    if requirement.quorum is not None:
        counted = quorum.tally(
            requirement.quorum,
            found,
            now=now,
            min_age=requirement.min_age,
            known=known,
            signers=attest.policy_source(requirement.policy),
        )
        said = (
            f"{requirement.describe()}: healthy in {', '.join(counted.healthy)}"
            if counted.met
            else counted.reason
        )
        return Verdict(counted.met, said, remaining=counted.remaining, excluded=counted.refused)
    mine = [a for a in found.attestations if a.predicate.get("cluster") == requirement.cluster]
    failing = [a for a in mine if a.predicate_type == UNHEALTHY]
    if failing:
        at = failing[0].predicate.get("failedAt", "?")
        return Verdict(
            False, f"attested as failing its health checks in {requirement.cluster} at {at}", excluded=True
        )
    healthy = [a for a in mine if a.predicate_type == HEALTHY]
    dated = [t for t in (parse_time(a.predicate.get("healthyAt")) for a in healthy) if t is not None]
    times = [t for t in dated if (t - now).total_seconds() <= ROUNDING]
    if dated and not times:
        return Verdict(
            False,
            f"waiting for {requirement.describe()}: healthyAt {timestamp(min(dated))} is in the future "
            "(clock skew): not counted",
        )
    if not times:
        others = sorted(
            {str(a.predicate.get("cluster")) for a in found.attestations if a.predicate_type == HEALTHY}
            - {requirement.cluster}
        )
        why = f"waiting for {requirement.describe()}: no healthy attestation for {requirement.cluster}"
        refused = found.refusals_about(HEALTHY, requirement.cluster)
        if others:
            why += f" (only for {', '.join(others)})"
        elif refused:
            why += f" ({len(refused)} refused: {refused[0]})"
        return Verdict(False, why)
    age = (now - min(times)).total_seconds()
    if requirement.min_age and age < requirement.min_age:
        left = requirement.min_age - age
        return Verdict(
            False, f"waiting for {requirement.describe()}: {format_duration(left)} left", remaining=left
        )
    first = min(healthy, key=lambda a: parse_time(a.predicate.get("healthyAt")) or now)
    return Verdict(True, f"{requirement.describe()}: healthy since {timestamp(min(times))}, {_by(first)}")


def _by(item: attest.Attestation) -> str:
    """Who signed an attestation and where it is stored, for the line that says what admitted a digest."""
    return f"attested by {item.signer} ({item.manifest_digest})"


def _evaluate_other(requirement: Requirement, found: Found) -> Verdict:
    typed = [a for a in found.attestations if a.predicate_type == requirement.predicate_type]
    if requirement.cluster:
        typed = [a for a in typed if a.predicate.get("cluster") == requirement.cluster]
    if typed:
        return Verdict(True, f"{requirement.describe()}: {_by(typed[0])}")
    why = f"waiting for {requirement.describe()}: no such attestation"
    refused = found.refusals_about(requirement.predicate_type, requirement.cluster)
    if refused:
        why += f" ({len(refused)} refused: {refused[0]})"
    return Verdict(False, why)


def check_requirements(
    client: RegistryClient,
    repository: str,
    digest: str,
    requirements: tuple[Requirement, ...],
    *,
    now: dt.datetime | None = None,
    reads: dict[tuple[str, int], Found] | None = None,
) -> list[Verdict]:
    """The verdict of each requirement for ``digest`` (reads the referrers once, judges them once
    per policy).

    ``reads`` keeps what was read across calls, by (digest, policy): a quorum names the clusters
    seen attesting the other digests read as missing from this one. A registry failure is a
    ``VerificationError``: requirements fail closed."""
    when = now or dt.datetime.now(dt.UTC)
    cache: dict[tuple[str, int], Found] = {} if reads is None else reads
    bundles: list[store.StoredBundle] | None = None
    verdicts = []
    try:
        for requirement in requirements:
            key = (digest, id(requirement.policy))
            found = cache.get(key)
            if found is None:
                # the referrers are read once for every policy: a quorum of N keys costs one read
                if bundles is None:
                    bundles = store.read_bundles(client, repository, digest)
                found = cache[key] = judge(bundles, digest, requirement.policy, cache=client.cache)
            verdicts.append(evaluate(requirement, found, now=when, known=_known(cache, requirement)))
    except (RegistryError, LockgateError) as exc:
        if isinstance(exc, VerificationError):
            raise
        raise VerificationError(
            f"cannot read the attestations of {repository}@{digest}: {exc.message}; refusing it"
        ) from exc
    return verdicts


def _known(reads: dict[tuple[str, int], Found], requirement: Requirement) -> frozenset[str]:
    """The clusters whose health attestations ``requirement``'s policy verified on any digest read."""
    if requirement.quorum is None:
        return frozenset()
    return frozenset(
        str(item.predicate["cluster"])
        for (_, policy), found in reads.items()
        if policy == id(requirement.policy)
        for item in found.attestations
        if item.predicate_type in (HEALTHY, UNHEALTHY) and isinstance(item.predicate.get("cluster"), str)
    )
