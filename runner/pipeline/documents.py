"""The ``Sync`` kind of a ``--config`` file (what to keep converged), declared once; the
``Runner`` kind is ``runner.pipeline.runnerdoc``, the parts of a Sync's spec that follow Flux's
Kustomization one to one ``runner.pipeline.syncparts``.

Each field is declared with ``lockgate.model.attr``: its YAML name, description, default and
constraints. ``runner.pipeline.config`` decodes the file into these values and turns each
Sync into ``SyncOptions``; ``runner.pipeline.schema`` renders the JSON Schema and the
markdown reference from the same declarations. The names follow Flux's OCIRepository and
Kustomization where the meaning is the same (``interval``, ``dependsOn``, ``secretRef``,
``verify.secretRef``, ``healthChecks``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from lockgate.artifact.limits import Limits
from lockgate.model import attr
from lockgate.signing import buildclaims, github
from runner.pipeline.notifications import ProviderType
from runner.pipeline.syncparts import (
    CommonMetadata,
    Decryption,
    DriftDetection,
    HealthCheck,
    HealthCheckExpr,
    IgnoreRule,
    Image,
    Patch,
    PostBuild,
)
from runner.plan import prune_plan

API_VERSION = "lockgate.dev/v1alpha1"
#: a sync's name becomes ``lockgate-<name>`` (the inventory Secret, the Lease): a DNS label
NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
NAME_MAX = 63 - len("lockgate-")
ADDRESS = r"^[^:]*:[0-9]+$"


def _github(attribute: str) -> Any:
    """A keyless policy's GitHub claim field (``githubRepository``...), declared once for
    ``verify`` and ``verify.attestations[]``."""
    claim = next(c for c in github.CLAIMS if c.attribute == attribute)
    return attr(claim.field, github.describe(attribute))


def _build(attribute: str) -> Any:
    """A keyless policy's source/build extension field (``sourceRepositoryURI``...), declared
    once for ``verify`` and ``verify.attestations[]``."""
    claim = next(c for c in buildclaims.CLAIMS if c.attribute == attribute)
    return attr(claim.field, buildclaims.describe(attribute))


@dataclass(frozen=True)
class Metadata:
    """The document's identity."""

    name: str = attr(
        "name",
        "The sync's name: a DNS label (it names the inventory Secret lockgate-NAME and the Lease).",
        required=True,
        pattern=NAME_PATTERN,
        max_length=NAME_MAX,
    )


@dataclass(frozen=True)
class RunnerMetadata:
    """The Runner document's identity (the name is informational)."""

    name: str | None = attr("name", "Informational.")


@dataclass(frozen=True)
class AttestationRequirement:
    """Evidence the digest must carry: healthy in another cluster (signed by its runner), in a
    quorum of clusters (issue 24), or a person's attestation such as a manual approval (issue 16)."""

    cluster: str | None = attr(
        "cluster",
        "The attesting runner's clusterName (the Runner document's spec.clusterName); a health "
        "attestation needs it or clusters, another predicateType may name it (else any cluster counts).",
    )
    clusters: tuple[str, ...] = attr(
        "clusters",
        "A quorum instead of cluster: clusterNames and glob patterns (*, ?, [...], e.g. staging-*) "
        "matched against the attesting runners' clusterName. This runner's own clusterName never counts.",
        factory=tuple,
    )
    min_clusters: int | None = attr(
        "minClusters",
        "How many of the clusters must attest the digest healthy, each for at least minAge. Default: "
        "every name listed; required when clusters holds a pattern.",
        minimum=1,
    )
    max_failures: int = attr(
        "maxFailures",
        "How many of the clusters may attest the digest failing its health checks before it is refused "
        "for good (attestations are never deleted).",
        default=0,
        minimum=0,
    )
    predicate_type: str = attr(
        "predicateType",
        "The attestation's type: the runner's health attestation by default, or the URI a person "
        "attested with lockgate attest (a manual approval); minAge applies to health attestations only.",
        default="https://lockgate.dev/attestations/healthy/v1",
        pattern="^[a-zA-Z][a-zA-Z0-9+.-]*:",
    )
    key: str | None = attr("key", "Path of the attester's cosign public key file (PEM).")
    secret_ref: str | None = attr(
        "secretRef",
        "A Secret of the runner namespace whose every *.pub entry is a public key of the attester "
        "(any one verifying suffices). Read at each pass. An entry named <clusterName>.pub binds its "
        "key to that cluster (see bindKeysToClusters).",
        reference=True,
    )
    bind_keys_to_clusters: bool | None = attr(
        "bindKeysToClusters",
        "With secretRef: bind each key to the cluster its entry names (<clusterName>.pub), so an "
        "attestation counts only for its key's cluster. true: every entry; false: none (any key for any "
        "cluster: one key shared by the clusters, said in so many words; with key, only false may be "
        "set); unset: every entry when any is named after a cluster this requirement selects, else none, "
        "and then a quorum of more than one cluster is refused at the pass (one key could make it alone) "
        "and a quorum of one warns once.",
    )
    identity: str | None = attr(
        "identity", "Keyless: the attester's certificate identity (SAN), exactly (instead of a key)."
    )
    identity_regexp: str | None = attr(
        "identityRegexp",
        "Keyless: the certificate identity, as a Go regular expression over the whole value.",
    )
    issuer: str | None = attr("issuer", "Keyless: the OIDC issuer, exactly.")
    issuer_regexp: str | None = attr("issuerRegexp", "Keyless: the OIDC issuer, as a Go regular expression.")
    github_repository: str | None = _github("repository")
    github_ref: str | None = _github("ref")
    github_workflow_trigger: str | None = _github("workflow_trigger")
    github_workflow_sha: str | None = _github("workflow_sha")
    github_workflow_name: str | None = _github("workflow_name")
    source_repository_uri: str | None = _build("source_repository_uri")
    source_repository_ref: str | None = _build("source_repository_ref")
    source_repository_digest: str | None = _build("source_repository_digest")
    build_trigger: str | None = _build("build_trigger")
    build_config_uri: str | None = _build("build_config_uri")
    runner_environment: str | None = _build("runner_environment")
    min_age: float = attr(
        "minAge",
        "A soak time: the digest must have been healthy there at least this long (e.g. 1h).",
        default=0.0,
        duration=True,
        minimum=0,
    )


@dataclass(frozen=True)
class Verify:
    """Who must have signed the artifact (cosign key, Sigstore keyless identity, or Secret of keys)."""

    key: str | None = attr("key", "Path of a cosign public key file (PEM).")
    identity: str | None = attr("identity", "Keyless: the certificate identity (SAN), exactly.")
    identity_regexp: str | None = attr(
        "identityRegexp",
        "Keyless: the certificate identity, as a Go regular expression over the whole value.",
    )
    issuer: str | None = attr("issuer", "Keyless: the OIDC issuer, exactly.")
    issuer_regexp: str | None = attr("issuerRegexp", "Keyless: the OIDC issuer, as a Go regular expression.")
    github_repository: str | None = _github("repository")
    github_ref: str | None = _github("ref")
    github_workflow_trigger: str | None = _github("workflow_trigger")
    github_workflow_sha: str | None = _github("workflow_sha")
    github_workflow_name: str | None = _github("workflow_name")
    source_repository_uri: str | None = _build("source_repository_uri")
    source_repository_ref: str | None = _build("source_repository_ref")
    source_repository_digest: str | None = _build("source_repository_digest")
    build_trigger: str | None = _build("build_trigger")
    build_config_uri: str | None = _build("build_config_uri")
    runner_environment: str | None = _build("runner_environment")
    trusted_root: str | None = attr(
        "trustedRoot", "Keyless: a trusted_root.json for a private Sigstore (default: the public one)."
    )
    insecure_skip: bool = attr("insecureSkip", "Apply unsigned artifacts (not recommended).", default=False)
    signed_repository: str | None = attr(
        "signedRepository",
        "Key signatures: the repository they name (REGISTRY/REPO) when url is a mirror or an "
        "oci-layout:// copy (`lockgate copy`) of it; default: the url's own repository.",
    )
    secret_ref: str | None = attr(
        "secretRef",
        "A Secret whose every *.pub entry is a cosign public key; any one of them verifying suffices "
        "(as Flux's OCIRepository verify.secretRef). Read at each pass.",
        reference=True,
    )
    attestations: tuple[AttestationRequirement, ...] = attr(
        "attestations",
        "Health attestations the digest must also have, each signed by another cluster's runner "
        "(promotion): with a tag the digest waits until it has them; with semver the highest "
        "version that has them wins. A digest attested as failing there is never applied.",
        factory=tuple,
    )


@dataclass(frozen=True)
class DependsOn:
    """A sync of the same file that must be applied and healthy first."""

    __shorthand__: ClassVar[str] = "name"
    name: str = attr("name", "The other sync's metadata.name.", required=True)


@dataclass(frozen=True)
class Notify:
    """Where a pass's outcome is reported: a forge's commit status, a generic webhook, Slack,
    Microsoft Teams or Alertmanager; events filtered as Flux's Alert filters them."""

    type: ProviderType = attr(
        "type",
        "github, gitlab, gitea (also Forgejo), bitbucket (Cloud), bitbucketserver, azuredevops: a "
        "commit status on the commit the artifact was built from (Flux's provider names); generic: "
        "Flux's event JSON POSTed to address; slack: a Slack incoming-webhook message; msteams: an "
        "Adaptive Card (a Teams workflow URL); alertmanager: an alert while the sync fails, resolved "
        "when it recovers (address: Alertmanager's /api/v2/alerts).",
        required=True,
    )
    address: str | None = attr(
        "address",
        "generic, slack, msteams, alertmanager: the URL to POST to. A Secret's address entry wins "
        "(keep Slack's and Teams' webhook URLs, credentials, there). A forge: the repository's HTTPS "
        "URL (Flux's Provider address, e.g. https://gitea.example.com/OWNER/REPO): the host and the "
        "repository the token is sent for; an artifact whose source annotation names another "
        "repository is refused (a CommitStatusRefused Event). Plain http only to loopback.",
        pattern="^https?://",
    )
    secret_ref: str | None = attr(
        "secretRef",
        "A Secret of the runner namespace: token (a forge: the API token, required; bitbucket: "
        "user:app-password; generic: the HMAC key of the X-Signature header; alertmanager: a bearer "
        "token), username and password (bitbucketserver, alertmanager: basic auth) and address. "
        "Read when a notification is sent.",
        reference=True,
    )
    api_url: str | None = attr(
        "apiURL",
        "A forge: the REST API base URL, where the token is sent. Default: derived from address "
        "(gitlab https://HOST/api/v4, gitea https://HOST/api/v1, bitbucketserver "
        "https://HOST/rest/api/latest, azuredevops https://dev.azure.com/ORG, github "
        "https://api.github.com or https://HOST/api/v3); without address, github's and bitbucket's "
        "public APIs, and gitlab, gitea, bitbucketserver and azuredevops send nothing (set address "
        "or apiURL). With apiURL and no address, the repository is the artifact's, on apiURL's host "
        "only. Plain http only to loopback.",
        pattern="^https?://",
    )
    context: str | None = attr(
        "context",
        "A forge: the commit status context (default lockgate/{cluster}/{sync}, the Runner's "
        "clusterName and the sync's name); {cluster} and {sync} are replaced.",
    )
    target_url: str | None = attr("targetURL", "A forge: the status's link (e.g. a dashboard).")
    cert_secret_ref: str | None = attr(
        "certSecretRef",
        "A forge with a private CA: a Secret (same namespace as secretRef's) whose ca.crt entry "
        "holds the PEM CA certificate(s) the forge's TLS certificate must chain to, as Flux's "
        "Provider certSecretRef.",
        reference=True,
    )
    event_severity: Literal["info", "error"] = attr(
        "eventSeverity",
        "Events (not commit statuses): info sends every event, error only errors (Flux's Alert).",
        default="info",
    )
    inclusion_list: tuple[str, ...] = attr(
        "inclusionList",
        "Events: send only those whose message one of these Go regular expressions matches.",
        factory=tuple,
    )
    exclusion_list: tuple[str, ...] = attr(
        "exclusionList",
        "Events: drop those whose message one of these Go regular expressions matches (wins over "
        "inclusionList).",
        factory=tuple,
    )


@dataclass(frozen=True)
class Attest:
    """Sign a health attestation for each digest this sync makes healthy (issue 16)."""

    secret_ref: str | None = attr(
        "secretRef",
        "A Secret of the runner namespace holding the runner's cosign private key (entry cosign.key) "
        "and its password (entry cosign.password). Read when an attestation is written, held in "
        "memory only.",
        required=True,
        reference=True,
    )
    on_failure: bool = attr(
        "onFailure",
        "Also attest a digest that failed its health checks (predicate "
        "https://lockgate.dev/attestations/unhealthy/v1), so no downstream runner applies it.",
        default=False,
    )


@dataclass(frozen=True)
class SyncSpec:
    """What to keep converged: an OCI artifact, how to verify it, how to apply it, and when."""

    url: str = attr(
        "url",
        "The artifact: oci://REGISTRY/REPO, or oci-layout://DIR (an OCI image layout directory, "
        "e.g. a mirror copied by `lockgate copy`), with :TAG or @sha256:DIGEST.",
        required=True,
        pattern="^oci(-layout)?://",
    )
    semver: str | None = attr(
        "semver", "Pick the highest tag in this semver range (Flux OCIRepository rules)."
    )
    path: str | None = attr("path", "The directory of the artifact to apply (default: its root).")
    max_size: int = attr(
        "maxSize",
        "The largest artifact to extract, in bytes of files (as lockgate pull --max-size).",
        default=Limits.max_total_bytes,
        minimum=1,
    )
    max_files: int = attr(
        "maxFiles",
        "The most entries (files and directories) to extract (as lockgate pull --max-files).",
        default=Limits.max_files,
        minimum=1,
    )
    max_ratio: float = attr(
        "maxRatio",
        "The highest compression ratio to extract (a decompression bomb above; as lockgate pull "
        "--max-ratio).",
        default=Limits.max_ratio,
        exclusive_minimum=0,
    )
    namespace: str | None = attr(
        "namespace",
        "The runner namespace: where the inventory Secret, Events, Lease and referenced Secrets live "
        "(default: the Runner document's namespace, else the service account's, else lockgate-system).",
    )
    target_namespace: str | None = attr(
        "targetNamespace", "Set this namespace on every namespaced object (as Flux's targetNamespace)."
    )
    patches: tuple[Patch, ...] = attr(
        "patches",
        "kustomize patches for this cluster, appended after the artifact kustomization's own (a "
        "kustomization is generated for a directory of plain manifests), as Flux.",
        factory=tuple,
    )
    images: tuple[Image, ...] = attr(
        "images",
        "Image overrides, merged by name into the artifact kustomization's images (newTag and digest "
        "replace the file's together), as Flux.",
        factory=tuple,
    )
    name_prefix: str | None = attr("namePrefix", "Prefix every object's name (replaces the file's).")
    name_suffix: str | None = attr("nameSuffix", "Suffix every object's name (replaces the file's).")
    components: tuple[str, ...] = attr(
        "components",
        "kustomize Components to add, directories of the artifact relative to path (never URLs or "
        "paths leaving the artifact).",
        factory=tuple,
    )
    ignore_missing_components: bool = attr(
        "ignoreMissingComponents",
        "Leave out a component directory the artifact lacks instead of failing the pass.",
        default=False,
    )
    common_metadata: CommonMetadata | None = attr(
        "commonMetadata",
        "Labels and annotations set on every object as it is applied, after postBuild (never "
        "substituted), as Flux.",
    )
    prune: bool = attr("prune", "Delete objects that left the artifact.", default=False)
    prune_crds: bool = attr(
        "pruneCRDs",
        "Also delete the CustomResourceDefinitions Helm would keep (helm.sh/resource-policy: keep, which "
        "push --render sets on a chart's crds/) when they leave the artifact or the sync is deleted. "
        "Deleting a CRD deletes every custom resource of its kinds in the cluster; off, they are "
        "orphaned, as Helm leaves them.",
        default=False,
    )
    wait: bool = attr("wait", "Wait until every applied object is healthy.", default=False)
    timeout: float = attr("timeout", "How long to wait for health.", default=300.0, duration=True)
    force: bool = attr("force", "Recreate objects whose immutable fields changed.", default=False)
    allow_mass_prune: bool = attr(
        "allowMassPrune", "Allow a pass to prune more than maxPruneShare of the set.", default=False
    )
    max_prune_share: float = attr(
        "maxPruneShare",
        "The largest share of the previous set one pass may prune.",
        default=prune_plan.DEFAULT_MAX_SHARE,
        exclusive_minimum=0,
        maximum=1,
    )
    deletion_policy: Literal["MirrorPrune", "Delete", "WaitForTermination", "Orphan"] = attr(
        "deletionPolicy",
        "What happens to the sync's objects when it leaves the configuration lockgate serve runs, or "
        "on lockgate delete NAME (as Flux's): MirrorPrune deletes them when prune is true and orphans "
        "them otherwise; Delete deletes them; WaitForTermination deletes them and waits up to timeout "
        "until they are gone; Orphan leaves them. Deleting every object needs Delete, "
        "WaitForTermination or allowMassPrune (the mass-prune guard); objects annotated prune: "
        "disabled and objects another sync holds are kept.",
        default="MirrorPrune",
    )
    interval: float = attr("interval", "How often to check the source.", required=True, duration=True)
    retry_interval: float | None = attr(
        "retryInterval",
        "After a failure (default: interval), doubled per consecutive failure up to interval.",
        duration=True,
    )
    drift_interval: float = attr(
        "driftInterval",
        "A full pull, verify and apply while the digest is unchanged (drift correction, or "
        "detection: driftDetection).",
        default=3600.0,
        duration=True,
    )
    ignore: tuple[IgnoreRule, ...] = attr(
        "ignore",
        "Fields other writers own (an HPA's replicas, a webhook's annotation), as Flux's "
        "Kustomization spec.ignore: out of the drift comparison, and never reverted when the "
        "object is applied (left out of what is sent, or sent with the live value where leaving "
        "it out would delete it).",
        factory=tuple,
    )
    drift_detection: DriftDetection = attr(
        "driftDetection",
        "Correct drift (the default), only report it (warn), or neither; objects labelled or "
        "annotated lockgate.dev/driftDetection: disabled are left alone in any mode.",
        factory=DriftDetection,
    )
    depends_on: tuple[DependsOn, ...] = attr(
        "dependsOn",
        "Syncs that must be applied and healthy first (names, or {name: ...} as Flux).",
        factory=tuple,
    )
    suspend: bool = attr("suspend", "Do not run this sync on its schedule.", default=False)
    health_checks: tuple[HealthCheck, ...] = attr(
        "healthChecks", "Extra objects to wait for after applying.", factory=tuple
    )
    health_check_exprs: tuple[HealthCheckExpr, ...] = attr(
        "healthCheckExprs",
        "CEL expressions deciding the health of custom resources, in Flux's format: evaluated in the "
        "order inProgress, failed, current, the first true deciding (none true: InProgress); an "
        "evaluation error (a missing field) is Unknown, so the wait runs to its timeout.",
        factory=tuple,
    )
    rollback: Literal["none", "onHealthFailure"] = attr(
        "rollback",
        "onHealthFailure: re-apply the last healthy digest when a new one fails its health checks.",
        default="none",
    )
    service_account_name: str | None = attr(
        "serviceAccountName",
        "Make every request of the pass (apply, prune, wait, inventory, Events) as this "
        "ServiceAccount of the sync's namespace, by impersonation (as Flux's serviceAccountName).",
        pattern=NAME_PATTERN,
    )
    secret_ref: str | None = attr(
        "secretRef",
        "A kubernetes.io/dockerconfigjson Secret with the registry credentials (as Flux's OCIRepository). "
        "Read at each pass, held in memory only.",
        reference=True,
    )
    cert_secret_ref: str | None = attr(
        "certSecretRef",
        "A Secret with the registry's CA certificate (ca.crt, added to the system roots) and/or a "
        "client certificate and key (tls.crt, tls.key) for registries that verify clients, as Flux's "
        "OCIRepository. Read at each pass, held in memory only.",
        reference=True,
    )
    proxy_secret_ref: str | None = attr(
        "proxySecretRef",
        "A Secret with the HTTP(S) proxy to reach the registry through (address, and username and "
        "password for basic authentication), as Flux's OCIRepository; it replaces HTTPS_PROXY.",
        reference=True,
    )
    insecure: bool = attr(
        "insecure",
        "Reach the registry over plain http (as Flux's OCIRepository); a loopback registry is tried over "
        "https, then http, without it.",
        default=False,
    )
    provider: Literal["generic", "aws", "azure", "gcp"] = attr(
        "provider",
        "Registry credentials from the cloud's workload identity, as Flux's OCIRepository provider: "
        "aws (ECR), gcp (Artifact Registry, gcr.io), azure (ACR); generic uses secretRef or none. With "
        "serviceAccountName (or the Runner's defaultServiceAccount), the identity annotated on that "
        "ServiceAccount (a token requested for it with the cloud's audience), else the runner's own. "
        "Tokens are cached until shortly before they expire (docs/registries.md).",
        default="generic",
    )
    verify: Verify = attr("verify", "Signature verification; fails closed without a policy.", factory=Verify)
    post_build: PostBuild = attr(
        "postBuild",
        "Substitute ${var} in every object before it is applied (as Flux's Kustomization postBuild); "
        "an object labelled or annotated kustomize.toolkit.fluxcd.io/substitute: disabled (or "
        "lockgate.dev/substitute: disabled) is left as it is.",
        factory=PostBuild,
    )
    decryption: Decryption | None = attr(
        "decryption",
        "Decrypt SOPS-encrypted objects (a top-level sops block) and Secret entries holding SOPS "
        "documents with age, before substitution; an object annotated "
        "kustomize.toolkit.fluxcd.io/decrypt: Disabled is left as it is.",
    )
    attest: Attest | None = attr(
        "attest",
        "Once a digest is healthy here (wait or healthChecks), sign an in-toto attestation "
        "(https://lockgate.dev/attestations/healthy/v1: clusterName, sync, revision, healthyAt, "
        "objects) and store it with the artifact, once per digest and cluster.",
    )
    notify: tuple[Notify, ...] = attr(
        "notify",
        "Report each pass's outcome to these providers (besides the Runner's); delivery retries in "
        "the background and never fails or delays a pass.",
        factory=tuple,
    )


@dataclass(frozen=True)
class SyncDocument:
    """A Sync: one OCI artifact kept converged in the cluster."""

    api_version: Literal["lockgate.dev/v1alpha1"] = attr("apiVersion", "lockgate.dev/v1alpha1", required=True)
    kind: Literal["Sync"] = attr("kind", "Sync", required=True)
    metadata: Metadata = attr("metadata", "The sync's name.", required=True, factory=Metadata)
    spec: SyncSpec = attr("spec", "What to keep converged and how.", required=True, factory=SyncSpec)
