"""What a cluster runs for a sync, read from the registry: the attested digest, else the tag, said which.

The digest the cluster's runner last attested healthy for the sync (``lockgate.fleet.running``)
counts only when the attestation verifies with the key given for that cluster
(``--attester-key CLUSTER=FILE``, bound to the ``clusterName`` the runner writes, so another
cluster's key never vouches for it) or the keyless identity given; an attestation for the
cluster that does not verify is named with why, and never trusted. The digest is then checked
as the sync checks what it applies: its signature with the sync's own ``verify`` policy (a key
file or a keyless identity; a policy in a Secret of the cluster cannot be read in CI, and the
preview says so). A digest the policy refuses is a hazard: the runner verified it, so who may
sign has changed since (or the artifact is not what the runner applied). Without a usable
attestation the preview compares with what the sync's tag (or the highest version of its
semver range) names now, and says that this is not proven to run there.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from lockgate import registry
from lockgate.errors import ResolveError, VerificationError
from lockgate.fleet import running as fleet_running
from lockgate.fleet.evidence import Reader
from lockgate.fleet.matrix import Claim
from runner.pipeline import source
from runner.pipeline.options import SyncOptions
from runner.pipeline.preview import targets
from runner.plan.preview.model import Basis, Hazard, HazardKind, Running


@dataclass(frozen=True)
class Found:
    running: Running
    hazards: tuple[Hazard, ...] = ()


class Lookups:
    """What every target of one preview shares: a repository's health claims (its referrer tags
    listed and every attestation verified once, for all clusters and syncs) and each digest's
    signature verified once per policy."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._claims: dict[tuple[str, tuple[str, ...]], dict[str, list[Claim]]] = {}
        self._signers: dict[tuple[str, str, str], tuple[str, list[str], list[Hazard]]] = {}
        self._tags: dict[tuple[str, str | None], tuple[registry.Reference, list[str]]] = {}
        self._digests: dict[str, str] = {}

    def tags(
        self, spec: source.SourceSpec, client: registry.RegistryClient
    ) -> tuple[registry.Reference, list[str]]:
        """``_tags``, once per URL and semver range (a semver range lists the tags once)."""
        key = (spec.url, spec.semver)
        with self._lock:
            known = self._tags.get(key)
        if known is None:
            known = _tags(spec, client)
            with self._lock:
                self._tags[key] = known
        return known[0], list(known[1])

    def resolve(self, ref: registry.Reference, client: registry.RegistryClient) -> str:
        """The digest ``ref`` names, one HEAD per reference for the whole preview."""
        with self._lock:
            known = self._digests.get(str(ref))
        if known is None:
            known = client.resolve(ref)
            with self._lock:
                self._digests[str(ref)] = known
        return known

    def claims(
        self, reader: Reader, client: registry.RegistryClient, ref: registry.Reference, tags: list[str]
    ) -> dict[str, list[Claim]]:
        key = (ref.name, tuple(tags))
        with self._lock:
            if key not in self._claims:
                digests = fleet_running.candidates(client, ref.repository, tags)
                self._claims[key] = fleet_running.claims(reader, digests)
            return self._claims[key]

    def signature(
        self, options: SyncOptions, ref: registry.Reference, digest: str, client: registry.RegistryClient
    ) -> tuple[str, list[str], list[Hazard]]:
        # by what the policy trusts, not by its object: every sync loads its own copy of a key
        key = (ref.name, digest, targets.who_may_sign(options.source))
        with self._lock:
            if key not in self._signers:
                self._signers[key] = _signature(options, ref, digest, client)
            signer, notes, hazards = self._signers[key]
            return signer, list(notes), list(hazards)


def _tags(spec: source.SourceSpec, client: registry.RegistryClient) -> tuple[registry.Reference, list[str]]:
    """The sync's reference with its tag chosen now (semver: the highest in range)."""
    ref = source.resolve(spec, client)
    return ref, [ref.tag] if ref.tag and not ref.digest else []


def _signature(
    options: SyncOptions, ref: registry.Reference, digest: str, client: registry.RegistryClient
) -> tuple[str, list[str], list[Hazard]]:
    """(who signed ``digest`` by the sync's policy, notes, hazards)."""
    spec = options.source
    if spec.verify_secret_ref is not None:
        return (
            "",
            [
                "the signature is not checked here: the sync's keys are in the Secret "
                f"{spec.verify_secret_ref}"
            ],
            [],
        )
    if spec.policy is None:
        return "", ["the sync verifies no signature (spec.verify.insecureSkip)"], []
    from lockgate.signing import verify

    try:
        verified = verify.verify(
            ref.with_digest(digest), spec.policy, client=client, signed_repository=spec.signed_repository
        )
    except VerificationError as exc:
        why = (
            f"{ref.name}@{digest} does not verify with the sync's verify policy now ({exc.summary(300)}): "
            "who may sign has changed since the runner applied it"
        )
        return "", [], [Hazard(HazardKind.VERIFY_POLICY, why)]
    return verified.signer, [], []


def _untrusted(looked: fleet_running.Looked, cluster: str, given: bool) -> list[str]:
    notes = []
    for claim in looked.untrusted:
        reason = claim.reason or "no trusted key or identity verifies it"
        notes.append(f"an attestation for {cluster} is not trusted: {reason}")
    for digest in looked.failed:
        notes.append(f"{cluster} attested {digest} healthy, then failing: not taken as what it runs")
    if not given:
        notes.append(
            f"no --attester-key for {cluster} (nor a keyless identity): its attestations cannot be "
            "verified, so what it runs is not known"
        )
    return notes


def find(
    options: SyncOptions,
    *,
    label: str,
    client: registry.RegistryClient,
    reader: Reader | None,
    lookups: Lookups,
) -> Found:
    """What cluster ``label`` runs for the sync ``options``: attested when ``reader`` (whose
    policies hold this cluster's attester) verifies an attestation, else the tag."""
    spec = options.source
    ref, tags = lookups.tags(spec, client)
    notes: list[str] = []
    if options.attest is None:
        notes.append(f"{label} does not attest this sync (spec.attest is not set)")
    else:
        cluster = options.attest.cluster
        claims = lookups.claims(reader, client, ref, tags) if reader is not None else {}
        looked = fleet_running.choose(claims, cluster=cluster, sync=options.name)
        notes += _untrusted(looked, cluster, reader is not None)
        if looked.chosen is not None:
            digest, claim = looked.chosen.digest, looked.chosen.claim
            signer, more, hazards = lookups.signature(options, ref, digest, client)
            return Found(
                Running(
                    Basis.ATTESTED,
                    digest=digest,
                    revision=digest,
                    attested_at=claim.at,
                    attested_by=claim.signer,
                    verified_by=signer,
                    notes=tuple(notes + more),
                ),
                tuple(hazards),
            )
    if not tags and not ref.digest:
        raise ResolveError(f"{spec.url}: no tag to fall back to")
    try:
        digest = lookups.resolve(ref, client)
    except ResolveError as exc:
        notes.append(f"{exc.message}: every object is shown as new")
        return Found(Running(Basis.NONE, notes=tuple(notes)))
    notes.append(
        f"compared with what {ref.tag or ref.digest} names now ({digest[:19]}), which the cluster "
        "is not proven to run"
    )
    signer, more, hazards = lookups.signature(options, ref, digest, client)
    revision = f"{ref.tag}@{digest}" if ref.tag and not ref.digest else digest
    return Found(
        Running(Basis.TAG, digest=digest, revision=revision, verified_by=signer, notes=tuple(notes + more)),
        tuple(hazards),
    )
