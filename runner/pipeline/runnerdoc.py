"""The ``Runner`` kind of a ``--config`` file: settings of the runner itself (namespace,
concurrency, the webhook and status page listeners, registry receivers, notifications
every sync shares), and ``KINDS``, every kind a file may hold.

Declared with ``lockgate.model.attr`` as the Sync kind is (``runner.pipeline.documents``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lockgate.model import attr
from runner.pipeline.documents import ADDRESS, NAME_PATTERN, Notify, RunnerMetadata, SyncDocument


@dataclass(frozen=True)
class WebhookSettings:
    """The webhook receiver (POST /hook/SYNC)."""

    secret_ref: str | None = attr(
        "secretRef",
        "A Secret in the runner namespace whose 'token' entry authenticates hooks (as Flux's Receiver); "
        "without it hooks are off.",
        reference=True,
    )


@dataclass(frozen=True)
class ReceiverResource:
    """A sync a receiver may trigger (Flux's Receiver resources[])."""

    kind: Literal["Sync"] = attr("kind", "Sync.", default="Sync")
    name: str = attr("name", "The sync's name, or * for every sync.", required=True)


@dataclass(frozen=True)
class Receiver:
    """A registry webhook on a secret path derived from its token (as Flux's Receiver):
    /hook/ + hex(sha256(token + name + runner namespace)); `lockgate receivers` prints it."""

    name: str = attr(
        "name",
        "The receiver's name (a DNS label); part of its hook path.",
        required=True,
        pattern=NAME_PATTERN,
    )
    type: Literal["dockerhub", "quay", "harbor", "nexus"] = attr(
        "type",
        "The registry that sends it, which decides the payload read and the proof checked besides the "
        "path: harbor also the Authorization header (= the token), nexus X-Nexus-Webhook-Signature.",
        required=True,
    )
    secret_ref: str | None = attr(
        "secretRef",
        "A Secret in the runner namespace whose 'token' entry (at least 16 bytes) the hook path is "
        "derived from.",
        required=True,
        reference=True,
    )
    resources: tuple[ReceiverResource, ...] = attr(
        "resources",
        "The syncs it may trigger (default: every sync); of them, only those whose url is the pushed "
        "repository are triggered, whatever the tag.",
        factory=tuple,
    )


@dataclass(frozen=True)
class StatusPageSettings:
    """The read-only status page (docs/status-page.md); off unless address is set."""

    address: str | None = attr(
        "address",
        "Listen address of the status page, its own listener (e.g. 127.0.0.1:9090); unset: no page. "
        "Beyond loopback it needs secretRef.",
        pattern=ADDRESS,
    )
    secret_ref: str | None = attr(
        "secretRef",
        "A Secret in the runner namespace whose 'token' entry the page requires (Authorization: Bearer, "
        "or its sign-in form); required when address is not loopback.",
        reference=True,
    )


@dataclass(frozen=True)
class CapabilitiesSettings:
    """Publish what this cluster serves, signed, for CI to render Helm charts with
    (push --render --capabilities-from); off unless url is set (docs/helm.md)."""

    url: str | None = attr(
        "url",
        "The repository to publish to (oci://REGISTRY/REPO, no tag): the capabilities go to the tag "
        "named after clusterName, with an in-toto attestation (https://lockgate.dev/attestations/"
        "capabilities/v1: kubeVersion, apiVersions) signed with the key of signingSecretRef.",
        pattern="^oci://",
    )
    signing_secret_ref: str | None = attr(
        "signingSecretRef",
        "A Secret of the runner namespace holding the runner's cosign private key (cosign.key) and its "
        "password (cosign.password), as a Sync's attest.secretRef. Read when publishing, held in memory "
        "only.",
        reference=True,
    )
    secret_ref: str | None = attr(
        "secretRef",
        "A kubernetes.io/dockerconfigjson Secret of the runner namespace with credentials that may push "
        "to url (else none).",
        reference=True,
    )
    insecure: bool = attr("insecure", "Reach the registry over plain http.", default=False)
    interval: float = attr(
        "interval",
        "How often the API server's version and discovery are read again; a change is published at once.",
        default=600.0,
        duration=True,
        exclusive_minimum=0,
    )


@dataclass(frozen=True)
class LayoutRoot:
    """Directories the syncs of one namespace may read ``oci-layout://`` artifacts from."""

    namespace: str = attr(
        "namespace",
        "The syncs' runner namespace (their spec.namespace, else the Runner's).",
        required=True,
        pattern=NAME_PATTERN,
    )
    paths: tuple[str, ...] = attr(
        "paths",
        "Absolute directories: a Sync's oci-layout:// directory must be one of them or lie under one, "
        "and is reached without following a symlink out of it (its spec.attest writes there too).",
        required=True,
        factory=tuple,
    )


@dataclass(frozen=True)
class RunnerSettings:
    """Process settings of lockgate serve (at most one Runner document per file)."""

    namespace: str | None = attr(
        "namespace", "The default runner namespace for syncs without spec.namespace."
    )
    metrics_address: str = attr(
        "metricsAddress",
        "Listen address of /metrics, /healthz and /readyz: a listener of their own, so webhook or status "
        "page callers cannot starve the probes.",
        default=":8080",
        pattern=ADDRESS,
    )
    webhook_address: str = attr(
        "webhookAddress",
        "Listen address of /hook/SYNC (and a /healthz for load balancers); its port must differ from "
        "metricsAddress's.",
        default=":9292",
        pattern=ADDRESS,
    )
    webhook: WebhookSettings = attr("webhook", "The webhook receiver.", factory=WebhookSettings)
    receivers: tuple[Receiver, ...] = attr(
        "receivers",
        "Registry webhooks (Docker Hub, Quay, Harbor, Nexus), each on its own secret hook path.",
        factory=tuple,
    )
    status_page: StatusPageSettings = attr(
        "statusPage", "The read-only status page.", factory=StatusPageSettings
    )
    concurrency: int = attr("concurrency", "Passes at once.", default=4, minimum=1)
    max_body_bytes: int = attr(
        "maxBodyBytes", "The largest webhook body accepted (413 above).", default=1_048_576, minimum=1
    )
    log_format: Literal["text", "json"] = attr(
        "logFormat", "Log lines as text or JSON (the --log-format flag wins).", default="text"
    )
    default_service_account: str | None = attr(
        "defaultServiceAccount",
        "Syncs without serviceAccountName run as this ServiceAccount of their namespace, so a "
        "forgotten one fails closed (Flux's --default-service-account).",
        pattern=NAME_PATTERN,
    )
    no_cross_namespace_refs: bool = attr(
        "noCrossNamespaceRefs",
        "A sync may only reference objects of its own namespace (Flux's --no-cross-namespace-refs): "
        "its Secret and ConfigMap references are always there (they take a name, never a namespace), "
        "and a dependsOn naming a sync of another namespace is refused when the file is loaded.",
        default=False,
    )
    allow_remote_bases: bool = attr(
        "allowRemoteBases",
        "Let an artifact's kustomization fetch remote resources, components and bases (URLs, Git "
        "repositories). Off: kustomizations may only read the artifact's files, and a remote "
        "reference fails the pass naming the file and the URL (as Flux's --no-remote-bases).",
        default=False,
    )
    lease_duration: float = attr(
        "leaseDuration",
        "How long a sync's Lease outlives its holder's last renewal (renewed every third of it).",
        default=30.0,
        duration=True,
        exclusive_minimum=0,
    )
    membership_duration: float = attr(
        "membershipDuration",
        "How long a replica counts as live after its last heartbeat (sent every third of it); "
        "a killed replica's syncs move to the others after this.",
        default=90.0,
        duration=True,
        exclusive_minimum=0,
    )
    cluster_name: str = attr(
        "clusterName",
        "This cluster's name in commit status contexts (lockgate/CLUSTER/SYNC), so several "
        "clusters do not overwrite each other's status, and in the health attestations it signs.",
        default="default",
        pattern=r"^[^/\s]+$",
    )
    notify: tuple[Notify, ...] = attr(
        "notify", "Providers every sync reports to (besides its own notify list).", factory=tuple
    )
    capabilities: CapabilitiesSettings = attr(
        "capabilities",
        "Publish the cluster's Kubernetes version and served API versions, signed, so CI renders Helm "
        "charts for this cluster without cluster credentials.",
        factory=CapabilitiesSettings,
    )
    layout_roots: tuple[LayoutRoot, ...] = attr(
        "layoutRoots",
        "Where the syncs of each namespace may read oci-layout:// directories (the runner reads every "
        "mirror its Pod mounts, every team's). Without an entry for it, the Runner's own namespace "
        "(platform syncs) may read under the config file's own directory and any other namespace "
        "(tenant syncs) none; an entry replaces that default.",
        factory=tuple,
    )


@dataclass(frozen=True)
class RunnerDocument:
    """A Runner: settings of the process that runs the syncs."""

    api_version: Literal["lockgate.dev/v1alpha1"] = attr("apiVersion", "lockgate.dev/v1alpha1", required=True)
    kind: Literal["Runner"] = attr("kind", "Runner", required=True)
    metadata: RunnerMetadata = attr("metadata", "Optional.", factory=RunnerMetadata)
    spec: RunnerSettings = attr("spec", "The settings.", factory=RunnerSettings)


#: every kind a ``--config`` file may hold
KINDS: dict[str, type] = {"Sync": SyncDocument, "Runner": RunnerDocument}
