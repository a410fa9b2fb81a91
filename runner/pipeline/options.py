"""What one sync's pass is configured by: ``SyncOptions`` and its parts, the runner namespace.

``config`` builds these from flags or ``Sync`` documents; ``reconcile`` and ``passes`` read
them. Values only, and the two checks every entry point makes: a sync's name, and which
namespace the runner's records live in.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from lockgate import registry
from lockgate.errors import UsageError
from runner.pipeline import (
    attesting,
    decrypt,
    notifications,
    source,
    substitute,
)
from runner.plan import (
    deletion,
    drift,
    health_exprs,
    ignore,
    overlay,
    prune_plan,
)

DEFAULT_NAMESPACE = "lockgate-system"
SA_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class Schedule:
    """When ``serve`` runs a sync (Flux's Kustomization timing fields, in seconds)."""

    interval: float = 300.0
    #: after a failure; None means ``interval``; doubled per consecutive failure, capped at interval
    retry_interval: float | None = None
    #: full pull-verify-apply while the digest is unchanged (drift correction)
    drift_interval: float = 3600.0
    #: names of syncs that must be applied and healthy first
    depends_on: tuple[str, ...] = ()
    suspend: bool = False


@dataclass(frozen=True)
class ObjectRef:
    """An extra object to wait for (``spec.healthChecks``), as Flux's ``NamespacedObjectKindReference``."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""


@dataclass(frozen=True)
class SyncOptions:
    name: str
    source: source.SourceSpec
    namespace: str | None = None
    target_namespace: str | None = None
    prune: bool = False
    wait: bool = False
    timeout: float = 300.0
    force: bool = False
    dry_run: bool = False
    prune_options: prune_plan.PruneOptions = field(default_factory=prune_plan.PruneOptions)
    concurrency: int = 8
    schedule: Schedule = field(default_factory=Schedule)
    health_checks: tuple[ObjectRef, ...] = ()
    #: ``spec.healthCheckExprs``, compiled: CEL health of custom resources (Flux's format)
    health_exprs: health_exprs.CustomHealth | None = None
    #: "none" or "onHealthFailure"
    rollback: str = "none"
    #: the pass's requests are made as this ServiceAccount of the runner namespace (impersonation)
    service_account_name: str | None = None
    #: ``spec.postBuild``: variables substituted in every object after loading, before placement
    post_build: substitute.PostBuild | None = None
    #: ``spec.decryption``: SOPS documents decrypted after loading, before substitution
    decryption: decrypt.Decryption | None = None
    #: ``spec.commonMetadata``: labels and annotations set after substitution (never substituted)
    common_metadata: overlay.CommonMetadata | None = None
    #: where the pass's outcome is reported (``runner.serve.notify`` delivers)
    notify: tuple[notifications.Provider, ...] = ()
    #: ``spec.attest``: sign a health attestation once the digest is healthy here
    attest: attesting.AttestOptions | None = None
    #: ``spec.deletionPolicy``: what deleting the sync does to its objects (``runner.plan.deletion``)
    deletion_policy: deletion.Policy = deletion.Policy.MIRROR_PRUNE
    #: ``spec.ignore``: fields left to other writers (an HPA's replicas), out of the drift diff
    ignore: tuple[ignore.Rule, ...] = ()
    #: ``spec.driftDetection.mode``: correct drift (enabled), report it only (warn), or neither
    drift_detection: drift.Mode = drift.Mode.ENABLED
    #: every runner namespace of the configuration (its Runner's and its syncs'): the names
    #: lockgate writes there are no artifact's to take (``runner.plan.reserved``)
    runner_namespaces: frozenset[str] = frozenset()

    def impersonated_user(self, namespace: str) -> str | None:
        if not self.service_account_name:
            return None
        return f"system:serviceaccount:{namespace}:{self.service_account_name}"

    def with_flags(self, flags: registry.TransportOptions | None) -> SyncOptions:
        """This sync reached with the command line's TLS flags (``reconcile``, ``rollback``), where
        its ``certSecretRef`` does not replace them; the same sync when none were given."""
        if flags is None:
            return self
        return dataclasses.replace(self, source=dataclasses.replace(self.source, flags=flags))

    def recorded_deletion(self) -> deletion.Recorded:
        """What the sync's deletion needs, recorded on its inventory by each pass."""
        return deletion.Recorded(
            policy=self.deletion_policy,
            prune=self.prune,
            timeout=self.timeout,
            allow_mass_prune=self.prune_options.allow_mass_prune,
            max_prune_share=self.prune_options.max_share,
            service_account_name=self.service_account_name or "",
            prune_crds=self.prune_options.prune_crds,
        )


def runner_namespace(explicit: str | None) -> str:
    if explicit:
        return explicit
    try:
        return SA_NAMESPACE_FILE.read_text().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


#: ``lockgate-runner-<identity>`` are the replicas' membership Leases
RESERVED_PREFIX = "runner-"


def check_name(name: str) -> None:
    if not _NAME.match(name) or len(name) > 63 - len("lockgate-"):
        raise UsageError(f"sync name {name!r} must be a DNS label of at most 54 characters (a-z, 0-9, -)")
    if name.startswith(RESERVED_PREFIX):
        raise UsageError(
            f"sync name {name!r}: names starting with {RESERVED_PREFIX!r} are reserved for Leases"
        )
