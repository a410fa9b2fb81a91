"""Health attestations of a pass (``spec.attest``): "this digest was healthy in cluster X".

After a pass that waited (``wait`` or ``healthChecks``) and found every object Current, a
sync with ``attest`` signs ``lockgate.signing.attest.HEALTHY`` for the digest with the
runner's cosign key (a Secret of the runner namespace, read now, held in memory only):
the Runner's ``clusterName``, the sync, the revision, when health was reached and the
objects' summary. It is written once per digest and cluster: when an attestation of that
type for this cluster, signed by this key, is already stored, nothing is written (drift
passes and restarts add nothing). With ``onFailure``, a pass whose health checks failed
writes ``UNHEALTHY`` once the same way; nothing is ever deleted, so a digest that was
healthy and later failed carries both, and a consumer refuses it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from lockgate import registry
from lockgate.registry.beneath import Tree
from runner.pipeline.secretrefs import SecretReader
from runner.plan.health import Health


@dataclass(frozen=True)
class AttestOptions:
    """``spec.attest``, with the Runner's ``clusterName``."""

    secret_ref: str
    cluster: str = "default"
    on_failure: bool = False


def objects_summary(health: dict[str, Health]) -> dict[str, int]:
    counts = {"total": len(health)}
    for item in health.values():
        status = item.status.value[:1].lower() + item.status.value[1:]
        counts[status] = counts.get(status, 0) + 1
    return counts


def write(
    options: AttestOptions,
    *,
    sync: str,
    url: str,
    revision: str,
    health: dict[str, Health],
    healthy: bool,
    secrets: SecretReader,
    client: registry.RegistryClient | None,
    now: dt.datetime | None = None,
    layout_tree: Tree | None = None,
) -> str:
    """Attest the pass's outcome for ``url`` (``oci://repo@sha256:...``); returns what was done.
    An ``oci-layout://`` url is written through ``layout_tree`` (the sync's allowed root) when
    no ``client`` (the pass's own, already confined) is given."""
    from lockgate.signing import attest
    from lockgate.signing.policy import KeyPolicy

    ref = registry.parse(url)
    client = client or registry.RegistryClient.for_reference(ref, layout_tree=layout_tree)
    predicate_type = attest.HEALTHY if healthy else attest.UNHEALTHY
    key = secrets.signing_key(options.secret_ref)
    digest = str(ref.digest)
    found = attest.read(client, ref.repository, digest, KeyPolicy(key.public_key(), "the runner's key"))
    for existing in found.attestations:
        if existing.predicate_type == predicate_type and existing.predicate.get("cluster") == options.cluster:
            return f"already attested {_word(healthy)} in {options.cluster} ({existing.manifest_digest})"
    predicate = attest.health_predicate(
        cluster=options.cluster,
        sync=sync,
        revision=revision,
        healthy=healthy,
        at=now or dt.datetime.now(dt.UTC),
        objects=objects_summary(health),
    )
    written = attest.attest_with_key(
        ref, key, predicate_type=predicate_type, predicate=predicate, client=client
    )
    return f"attested {_word(healthy)} in {options.cluster}: {written.stored_at}"


def _word(healthy: bool) -> str:
    return "healthy" if healthy else "unhealthy"
