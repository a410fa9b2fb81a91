"""Where runners publish their cluster's capabilities and how CI reads them back: the registry.

One repository of the user's choosing holds every cluster's (a Runner's
``spec.capabilities.url``, CI's ``--capabilities-from``). Per cluster, a small OCI artifact
tagged with the clusterName: its one layer is the capabilities document (``MEDIA_TYPE``),
without a time, so the same capabilities are the same digest. The artifact's manifest is the
subject of an in-toto attestation (predicate type ``PREDICATE_TYPE``: the document and when it
was observed), signed with the runner's cosign key and stored as the health attestations are
(``lockgate.signing.attest``: a Sigstore bundle in a referrer, listed in the tag-schema
fallback index when the registry has no referrers API). ``cosign verify-attestation --key
runner.pub --type https://lockgate.dev/attestations/capabilities/v1`` checks it too.

Publishing is idempotent: the tag already on this digest with an attestation of this cluster
by this key writes nothing. A change (a CRD installed, an upgrade) is a new digest: it is
pushed and attested before the tag moves to it, so the tag never names an unattested state.

Reading trusts only the attestation: the tag is followed to a digest, and the digest counts
only with an attestation of ``PREDICATE_TYPE`` for the cluster asked for, verified with one of
the policy's keys (bound to its cluster when keys are: ``lockgate.signing.keybinding``).
Anything else (another key's, a forged or copied statement, one claiming another cluster) is
refused, and the refusal names each referrer and why.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass

from lockgate.errors import LockgateError, ResolveError, UsageError, VerificationError
from lockgate.helm.capabilities import MEDIA_TYPE, PREDICATE_TYPE, Capabilities
from lockgate.registry import RegistryClient
from lockgate.registry.oci import OCI_EMPTY, OCI_MANIFEST, sha256_digest
from lockgate.signing import attest, keys, layout
from lockgate.signing.policy import KeyPolicy

#: an OCI tag: what a clusterName must be to name its capabilities
TAG_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$"


@dataclass(frozen=True)
class Publication:
    """What ``publish`` did: ``written`` when the tag moved (new capabilities), and in words."""

    written: bool
    text: str


@dataclass(frozen=True)
class Attested:
    """A cluster's capabilities as a verified attestation holds them."""

    capabilities: Capabilities
    digest: str
    signer: str
    observed_at: str
    referrer: str


def _artifact(caps: Capabilities) -> tuple[bytes, bytes, bytes]:
    """(config, layer, manifest) bytes of the published document, the same for the same capabilities."""
    layer = json.dumps(caps.document(), separators=(",", ":"), sort_keys=True).encode()
    config = layout.EMPTY_BLOB
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": MEDIA_TYPE,
        "config": layout.descriptor(OCI_EMPTY, config),
        "layers": [layout.descriptor(MEDIA_TYPE, layer)],
    }
    return config, layer, layout.encode(manifest)


def publish(
    client: RegistryClient,
    repository: str,
    caps: Capabilities,
    key: keys.PrivateKey,
    *,
    now: dt.datetime | None = None,
) -> Publication:
    """Publish ``caps`` at tag ``caps.cluster`` of ``repository``, signed with ``key``; what was done."""
    config, layer, manifest = _artifact(caps)
    digest = sha256_digest(manifest)
    tagged = client.head_manifest(repository, caps.cluster)
    mine = KeyPolicy(key.public_key(), "the runner's key")
    stored = tagged == digest or client.head_manifest(repository, digest) is not None
    existing = _own(client, repository, digest, caps.cluster, mine) if stored else None
    if tagged == digest and existing is not None:
        return Publication(False, f"capabilities of {caps.cluster} unchanged ({digest})")
    if existing is None:
        for blob in (config, layer):
            blob_digest = sha256_digest(blob)
            if not client.blob_exists(repository, blob_digest):
                client.upload_blob(repository, blob, digest=blob_digest, size=len(blob))
        client.put_manifest(repository, digest, manifest, OCI_MANIFEST)
        when = now or dt.datetime.now(dt.UTC)
        attest.attest_with_key(
            f"oci://{client.host}/{repository}@{digest}",
            key,
            predicate_type=PREDICATE_TYPE,
            predicate=caps.predicate(attest.timestamp(when)),
            client=client,
            created=when,
        )
    client.put_manifest(repository, caps.cluster, manifest, OCI_MANIFEST)
    where = f"oci://{client.host}/{repository}:{caps.cluster}@{digest}"
    return Publication(True, f"published the capabilities of {caps.cluster}: {where}")


def _own(
    client: RegistryClient, repository: str, digest: str, cluster: str, policy: KeyPolicy
) -> attest.Attestation | None:
    found = attest.read(client, repository, digest, policy)
    for item in found.attestations:
        if item.predicate_type == PREDICATE_TYPE and item.predicate.get("cluster") == cluster:
            return item
    return None


def read(client: RegistryClient, repository: str, cluster: str, policy: attest.AttestationPolicy) -> Attested:
    """The capabilities cluster ``cluster`` published, verified by ``policy``; a
    ``VerificationError`` naming every attestation that did not count and why."""
    where = f"oci://{client.host}/{repository}:{cluster}"
    try:
        digest = client.head_manifest(repository, cluster)
    except LockgateError as exc:
        raise VerificationError(
            f"cannot read the capabilities of {cluster} at {where}: {exc.message}"
        ) from exc
    if digest is None:
        raise ResolveError(
            f"{where}: no capabilities published for cluster {cluster}; a runner publishes them when "
            "its Runner sets spec.capabilities.url to this repository and its clusterName is "
            f"{cluster}"
        )
    found = attest.read(client, repository, digest, policy)
    mine = [a for a in found.attestations if a.predicate_type == PREDICATE_TYPE]
    claimed = [a for a in mine if a.predicate.get("cluster") == cluster]
    if not claimed:
        lines = [
            f"{where}@{digest}: no capabilities attestation of cluster {cluster} signed by "
            f"{attest.policy_source(policy)}; refusing to render with it"
        ]
        lines += [
            f"  - referrer {a.manifest_digest}: signed by {a.signer}, but claims cluster "
            f"{a.predicate.get('cluster')!r} (copied from another cluster's tag?)"
            for a in mine
        ]
        lines += [f"  - {r}" for r in found.refusals_about(PREDICATE_TYPE, None)]
        raise VerificationError("\n".join(lines))
    newest = max(claimed, key=lambda a: str(a.predicate.get("observedAt") or ""))
    caps = Capabilities.from_predicate(newest.predicate, f"{where} (referrer {newest.manifest_digest})")
    return Attested(
        capabilities=caps,
        digest=digest,
        signer=newest.signer,
        observed_at=str(newest.predicate.get("observedAt") or "?"),
        referrer=newest.manifest_digest,
    )


def check_tag(cluster: str, where: str) -> None:
    """A clusterName that is no OCI tag cannot name its capabilities."""
    if re.match(TAG_PATTERN, cluster) is None:
        raise UsageError(
            f"{where}: clusterName {cluster!r} is not a valid OCI tag ([A-Za-z0-9_][A-Za-z0-9._-], at "
            "most 128 characters), and the capabilities are published at a tag of that name"
        )
