"""Acquire the manifests of one pass: resolve, verify, pull by digest, extract, render, load.

The reference is resolved once (a tag, the highest tag in a semver range with Flux
OCIRepository semantics, or a digest) and everything after uses the digest. Verification
fails closed: without a policy the pass is refused unless the caller explicitly skips it.
Pulling, rendering and semver selection are the shared core's (``lockgate.artifact.pull``,
``lockgate.render``, ``lockgate.semver``); a Sync's overlay is written into the
kustomization first (``overlays``). Nothing here writes to the cluster, so a refused
artifact leaves the cluster as it was; the only cluster reads are the Secrets a Sync names
(``spec.secretRef``, ``spec.verify.secretRef``, and ``spec.certSecretRef`` and
``spec.proxySecretRef`` through ``transportrefs``), through ``secretrefs.SecretReader``; an
attestation requirement's keys are bound to their clusters there; a quorum of more than one
cluster over keys bound to none is refused (usage, naming the Secret and the entries to
rename), unless ``bindKeysToClusters: false`` says so, and a quorum of one is warned about
once per process.
"""

from __future__ import annotations

import datetime as dt
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lockgate import manifests, registry, render, semver
from lockgate.artifact import pull
from lockgate.artifact.limits import Limits
from lockgate.artifact.manifest import NotFluxArtifact
from lockgate.errors import RenderError, ResolveError, UsageError, VerificationError
from lockgate.manifests import K8sObject
from lockgate.registry.beneath import Tree
from lockgate.signing import buildclaims, github
from lockgate.signing.options import Spelling, field_spelling
from runner.pipeline import cloudidentity, overlays, transportrefs
from runner.pipeline.secretrefs import SecretReader
from runner.pipeline.timings import Timings
from runner.plan import overlay as overlay_plan
from runner.plan.overlay import Overlay

if TYPE_CHECKING:
    # cryptography and the signing modules cost start-up; imported when a pass verifies
    from lockgate.signing import attest
    from lockgate.signing.policy import Policy
    from lockgate.signing.requirements import Requirement

REVISION_ANNOTATION = "org.opencontainers.image.revision"
SOURCE_ANNOTATION = "org.opencontainers.image.source"
_PURPOSE = "the artifact holds a kustomization, and building it"
#: ``lockgate reconcile`` flags
FLAGS = Spelling(
    key="--verify-key",
    identity="--verify-identity",
    identity_regexp="--verify-identity-regexp",
    issuer="--verify-issuer",
    issuer_regexp="--verify-issuer-regexp",
    insecure_skip="--insecure-skip-verify",
    github=github.names("flag", "--verify-"),
    build=buildclaims.names("flag", "--verify-"),
)
#: a Sync document's ``spec.verify``
FIELDS = field_spelling("spec.verify.")


@dataclass(frozen=True)
class AttestationSpec:
    """``spec.verify.attestations[]``: an attestation the digest must have (promotion)."""

    cluster: str | None
    #: the attester's key (``key``) or keyless identity, or None when keys are read from ``secret_ref``
    policy: attest.AttestationPolicy | None = None
    secret_ref: str | None = None
    min_age: float = 0.0
    predicate_type: str = "https://lockgate.dev/attestations/healthy/v1"
    #: a quorum instead of ``cluster``: names and patterns, how many must be healthy, how many may fail
    clusters: tuple[str, ...] = ()
    min_clusters: int = 0
    max_failures: int = 0
    #: the Runner's own clusterName, which never counts towards its quorum
    own_cluster: str | None = None
    #: ``bindKeysToClusters``: bind ``secret_ref``'s keys to the clusters their entries name
    #: (None: those named after a selected cluster; ``lockgate.signing.keybinding``)
    bind_keys: bool | None = None


class Waiting(Exception):
    """No digest of the source has the attestations required yet: nothing is applied.

    Not a failure (the pass applies nothing and says what it waits for)."""

    def __init__(self, reason: str, *, url: str, digest: str, revision: str) -> None:
        super().__init__(reason)
        self.reason, self.url, self.digest, self.revision = reason, url, digest, revision


@dataclass(frozen=True)
class SourceSpec:
    url: str
    semver: str | None = None
    path: str | None = None
    policy: Policy | None = None
    insecure_skip_verify: bool = False
    #: how the verification options were written (flags or Sync fields), for errors
    spelling: Spelling = FLAGS
    #: a kubernetes.io/dockerconfigjson Secret with the registry credentials (``spec.secretRef``)
    secret_ref: str | None = None
    #: Flux's ``certSecretRef`` (ca.crt, tls.crt, tls.key), ``proxySecretRef`` and ``insecure``
    cert_secret_ref: str | None = None
    proxy_secret_ref: str | None = None
    insecure: bool = False
    #: ``reconcile``'s and ``rollback``'s ``--ca-file``/``--cert-file``/``--key-file``; a
    #: ``cert_secret_ref`` replaces them (not a Sync field: the command line's, like the environment)
    flags: registry.TransportOptions | None = field(default=None, repr=False, compare=False)
    #: a Secret of ``*.pub`` cosign keys, any one verifying (``spec.verify.secretRef``); replaces ``policy``
    verify_secret_ref: str | None = None
    #: health attestations every applied digest must have (``spec.verify.attestations``)
    attestations: tuple[AttestationSpec, ...] = ()
    #: what loading the policies found worth saying (an unpinned GitHub workflow identity);
    #: ``reconcile`` prints them to stderr, ``serve`` logs them
    warnings: tuple[str, ...] = ()
    #: the extraction bounds, as ``lockgate pull``'s (``--max-size``, ``--max-files``, ``--max-ratio``)
    limits: Limits = field(default_factory=Limits)
    #: let a kustomization in the artifact fetch remote resources (the Runner's ``allowRemoteBases``)
    allow_remote_bases: bool = False
    #: the Sync's patches, images, name prefix and suffix, components (``runner.plan.overlay``)
    overlay: Overlay | None = None
    #: the repository key signatures name when ``url`` is a mirror (``spec.verify.signedRepository``)
    signed_repository: str | None = None
    #: ``spec.provider``: registry credentials from this cloud's workload identity
    provider: str = "generic"
    #: with a provider, the ServiceAccount (``spec.serviceAccountName``) whose annotated identity is used
    identity_account: str | None = None
    #: an ``oci-layout://`` url's allowed root (``runner.pipeline.layoutroots``), and the setting
    #: that allows it; None: any directory (the command line's own choice)
    layout_root: str | None = None
    layout_setting: str = ""

    def layout_tree(self) -> Tree | None:
        """What a layout store reads and writes through: the allowed root, never a link out of it."""
        if self.layout_root is None:
            return None
        return Tree(Path(self.layout_root), setting=self.layout_setting)

    @property
    def needs_secrets(self) -> bool:
        return (
            self.secret_ref is not None
            or self.cert_secret_ref is not None
            or self.proxy_secret_ref is not None
            or self.identity_account is not None
            or self.verify_secret_ref is not None
            or any(a.secret_ref is not None for a in self.attestations)
        )


@dataclass(frozen=True)
class Fetched:
    reference: registry.Reference
    digest: str
    #: Flux's OCIRepository revision: ``<tag>@sha256:<hex>``, or ``sha256:<hex>`` for a digest ref
    revision: str
    source_revision: str
    verified_by: str
    objects: list[K8sObject]
    #: the artifact's ``org.opencontainers.image.source`` annotation (the repository it was built from)
    source_url: str = ""
    #: a newer version in the semver range that still lacks its attestations, and why
    waiting: str = ""
    #: what a person should know about the build (``Built.notes``)
    notes: tuple[str, ...] = ()
    #: the attestations that let the digest through ``spec.verify.attestations``, one per requirement
    admitted: tuple[str, ...] = ()
    #: the registry client the pass used (its credentials), for writing the pass's attestation
    client: registry.RegistryClient | None = field(default=None, repr=False, compare=False)

    @property
    def url(self) -> str:
        return self.reference.pinned(self.digest)


def resolve(spec: SourceSpec, client: registry.RegistryClient) -> registry.Reference:
    """The reference with its tag chosen (semver), not yet its digest."""
    ref = registry.parse(spec.url)
    if spec.semver:
        constraints = _constraints(spec, ref)
        tags = client.list_tags(ref.repository)
        tag = semver.highest_in_range(constraints, tags)
        if tag is None:
            raise ResolveError(
                f"{ref}: no tag matches the semver range {spec.semver!r} ({len(tags)} tags listed)"
            )
        ref = ref.with_tag(tag)
    return ref


def _constraints(spec: SourceSpec, ref: registry.Reference) -> semver.Constraints:
    if ref.digest:
        raise UsageError("--semver and a digest reference are exclusive: the digest already pins it")
    try:
        return semver.Constraints.parse(str(spec.semver))
    except semver.SemverError as exc:
        raise UsageError(f"--semver {spec.semver!r}: {exc}") from None


def _revision(ref: registry.Reference, digest: str) -> str:
    return f"{ref.tag}@{digest}" if ref.tag and not ref.digest else digest


def _requirements(spec: SourceSpec, secrets: SecretReader | None) -> tuple[Requirement, ...]:
    from lockgate.signing.requirements import Requirement

    found = []
    for number, item in enumerate(spec.attestations):
        policy = item.policy
        if item.secret_ref is not None:
            field = f"spec.verify.attestations[{number}].secretRef.name"
            if secrets is None:
                raise UsageError(f"{field} names a Secret, but this pass has no cluster to read it from")
            policy = _attesters(secrets, item, field)
        if policy is None:
            raise UsageError(f"spec.verify.attestations[{number}]: set key or secretRef")
        need = None
        if item.clusters:
            from lockgate.signing import quorum

            selection = quorum.Selection(item.clusters, own=item.own_cluster)
            need = quorum.Quorum(selection, min_clusters=item.min_clusters, max_failures=item.max_failures)
        found.append(
            Requirement(
                cluster=item.cluster,
                policy=policy,
                min_age=item.min_age,
                predicate_type=item.predicate_type,
                quorum=need,
            )
        )
    return tuple(found)


#: the unbound-key warnings already logged, so a pass every minute says it once
_WARNED: set[str] = set()


def _attesters(secrets: SecretReader, item: AttestationSpec, field: str) -> attest.KeyPolicies:
    """An attestation requirement's key set, each key bound to the cluster its entry names as
    ``bindKeysToClusters`` says; the warning about unbound keys is logged once per process."""
    from lockgate.signing import keybinding

    assert item.secret_ref is not None
    selects = keybinding.selector(cluster=item.cluster, clusters=item.clusters)
    policy = secrets.key_policy(item.secret_ref, field=field, bind=item.bind_keys, selects=selects)
    # the Secret is read at each pass, so a key set a quorum cannot trust is refused here
    refusal = keybinding.unbound_refusal(policy, min_clusters=item.min_clusters, bind=item.bind_keys)
    if refusal is not None:
        raise UsageError(f"{field}: {refusal}")
    warning = keybinding.unbound_warning(policy, quorum=bool(item.clusters), bind=item.bind_keys)
    if warning is not None and f"{field}: {warning}" not in _WARNED:
        _WARNED.add(f"{field}: {warning}")
        logging.getLogger(__name__).warning("%s: %s", field, warning)
    return policy


def requirements(spec: SourceSpec, secrets: SecretReader | None) -> tuple[Requirement, ...]:
    """The attestations ``spec`` requires, their keys read from their Secrets (the status
    page checks the fleet against them too)."""
    return _requirements(spec, secrets)


def choose(
    spec: SourceSpec,
    client: registry.RegistryClient,
    requirements: tuple[Requirement, ...],
) -> tuple[registry.Reference, str, str, tuple[str, ...]]:
    """(reference, digest, what a newer version waits for, the attestations that admitted it) of
    the digest to apply.

    With a tag (or digest) its digest must meet every requirement; with semver the highest
    version that meets them wins. ``Waiting`` when none does; a digest attested as failing
    is never chosen. What the newest refused digest waits for is said once every candidate
    looked at has been read, so a quorum can name the clusters that attested those but not it."""
    from lockgate.signing.requirements import check_requirements

    ref = registry.parse(spec.url)
    if spec.semver:
        constraints = _constraints(spec, ref)
        candidates = [
            ref.with_tag(tag)
            for tag in semver.in_range_descending(constraints, client.list_tags(ref.repository))
        ]
    else:
        candidates = [resolve(spec, client)]
    reads: dict[tuple[str, int], attest.Found] = {}
    now = dt.datetime.now(dt.UTC)  # one instant for every verdict of the pass
    newest: tuple[registry.Reference, str] | None = None  # the highest refused, and its digest
    chosen: tuple[registry.Reference, str] | None = None
    admitted: tuple[str, ...] = ()
    for candidate in candidates:
        digest = client.resolve(candidate)
        verdicts = check_requirements(
            client, candidate.repository, digest, requirements, now=now, reads=reads
        )
        if all(v.ok for v in verdicts):
            chosen = (candidate, digest)
            admitted = tuple(v.reason for v in verdicts if v.reason)
            break
        newest = newest or (candidate, digest)
    if newest is None:
        if chosen is None:
            raise ResolveError(f"{ref}: no tag matches the semver range {spec.semver!r}")
        return chosen[0], chosen[1], "", admitted
    waits, digest = newest
    # every digest it needs was read above: no request is made again, and the verdicts are the same
    verdicts = check_requirements(client, waits.repository, digest, requirements, now=now, reads=reads)
    reason = f"{_revision(waits, digest)}: " + "; ".join(v.reason for v in verdicts if not v.ok)
    if chosen is not None:
        return chosen[0], chosen[1], reason, admitted
    url = waits.pinned(digest)
    raise Waiting(reason, url=url, digest=digest, revision=_revision(waits, digest))


def missing_policy(s: Spelling) -> str:
    """Why a source without a verification policy is refused: a usage error (exit 2), as in
    ``lockgate verify``, since what is missing is the user's setting, not a signature."""
    return (
        f"no verification policy: set {s.key}, or {s.identity} and {s.issuer}, "
        f"or {s.insecure_skip} to apply unsigned artifacts (not recommended)"
    )


def _pin(
    spec: SourceSpec, ref: registry.Reference, client: registry.RegistryClient, policy: Policy | None
) -> tuple[str, str]:
    """(digest, who verified it); verification comes first and fails closed."""
    if policy is not None:
        # imported here: sigstore costs a third of a second of start-up, needed only to verify
        from lockgate.signing import verify as verify_mod

        verified = verify_mod.verify(ref, policy, client=client, signed_repository=spec.signed_repository)
        return verified.digest, verified.signer
    if not spec.insecure_skip_verify:
        raise UsageError(f"{ref}: {missing_policy(spec.spelling)}")
    return client.resolve(ref), f"nobody ({spec.spelling.insecure_skip})"


#: how objects that kustomize built name their origin (``kustomize build apps:12``)
KUSTOMIZE_ORIGIN = "kustomize build "


@dataclass(frozen=True)
class Built:
    objects: list[K8sObject]
    #: what a person should know about the build (an overlay patch that selected nothing)
    notes: tuple[str, ...] = ()


def render_objects(root: Path, path: str | None, *, allow_remote_bases: bool = False) -> list[K8sObject]:
    """``build`` without an overlay: the objects only."""
    return build(root, path, allow_remote_bases=allow_remote_bases).objects


def build(
    root: Path, path: str | None, *, allow_remote_bases: bool = False, overlay: Overlay | None = None
) -> Built:
    """The objects under ``root/path``: ``kustomize build`` when it holds a kustomization, which
    may only read files of the artifact unless ``allow_remote_bases``. A Sync's ``overlay`` is
    written into that kustomization first, or into one generated for plain manifests
    (``overlays.write``); ``root`` is a temporary copy, as Flux's working directory."""
    base = root.resolve()
    directory = (base / path).resolve() if path else base
    if not directory.is_relative_to(base):
        raise UsageError(f"--path {path!r} leaves the artifact")
    if not directory.exists():
        raise RenderError(f"--path {path!r}: the artifact has no such directory")
    kind = render.kind_of(directory)
    if kind == "helm":
        raise RenderError(
            f"{path or '.'}: the artifact holds a Helm chart (Chart.yaml), not manifests; push the "
            "chart with `lockgate push --render` so the rendered objects are applied"
        )
    notes: list[str] = []
    if overlay is not None and overlay.wanted:
        overlays.write(directory, base, overlay)
        kind = "kustomize"
    if kind == "kustomize":
        shown = path or "."
        text = render.kustomize_build(
            directory, purpose=_PURPOSE, shown=shown, root=base, allow_remote=allow_remote_bases
        )
        objects = manifests.load_text(text, f"{KUSTOMIZE_ORIGIN}{shown}")
        if overlay is not None and overlay.wanted:
            objects, notes = overlay_plan.unmatched(objects, overlay)
    else:
        objects = manifests.load([directory], relative_to=base)
    seen: dict[manifests.ObjectKey, K8sObject] = {}
    for obj in objects:
        if obj.key in seen:
            raise RenderError(f"{obj.origin}: duplicate object {obj.key} (first at {seen[obj.key].origin})")
        seen[obj.key] = obj
    return Built(objects, tuple(notes))


def _reader(spec: SourceSpec, secrets: SecretReader | None) -> SecretReader:
    if secrets is None:
        if spec.identity_account and not spec.secret_ref:
            raise UsageError(
                "spec.serviceAccountName with spec.provider names the ServiceAccount whose cloud "
                "identity pulls, but this pass has no cluster to read it from"
            )
        field = "spec.secretRef" if spec.secret_ref else "spec.verify.secretRef"
        raise UsageError(f"{field} names a Secret, but this pass has no cluster to read it from")
    return secrets


def transport_options(spec: SourceSpec, secrets: SecretReader | None) -> registry.TransportOptions:
    """``spec.certSecretRef``, ``spec.proxySecretRef`` and ``spec.insecure``, read now."""
    return transportrefs.options_for(
        insecure=spec.insecure,
        cert_secret_ref=spec.cert_secret_ref,
        proxy_secret_ref=spec.proxy_secret_ref,
        secrets=secrets,
        flags=spec.flags,
    )


def fetch(
    spec: SourceSpec,
    *,
    client: registry.RegistryClient | None = None,
    secrets: SecretReader | None = None,
    timings: Timings | None = None,
) -> Fetched:
    """Resolve, verify, pull by digest, extract into a temporary directory and load the objects.

    ``secrets`` reads the Secrets ``spec`` names (credentials, keys) in the sync's runner
    namespace; it is needed only when the spec names one. ``timings`` gets the phases
    ``resolve``, ``verify``, ``pull`` (with extraction) and ``build``.
    """
    timings = timings or Timings()
    base = registry.parse(spec.url)
    if client is None:
        creds = None
        if spec.secret_ref is not None:
            creds = _reader(spec, secrets).registry_credentials(spec.secret_ref, base.host)
        options = transport_options(spec, secrets)
        identity = None
        if spec.identity_account is not None:
            reader = _reader(spec, secrets)
            account, provider = spec.identity_account, spec.provider
            identity = cloudidentity.identity(reader.kube, reader.namespace, account, provider)
        client = registry.RegistryClient.for_reference(
            base,
            credentials=creds,
            options=options,
            provider=spec.provider,
            identity=identity,
            insecure=spec.insecure,
            layout_tree=spec.layout_tree(),
        )
    policy = spec.policy
    if spec.verify_secret_ref is not None:
        policy = _reader(spec, secrets).key_policy(spec.verify_secret_ref)
    waiting = ""
    admitted: tuple[str, ...] = ()
    if spec.attestations:
        with timings.phase("resolve"):
            ref, digest, waiting, admitted = choose(spec, client, _requirements(spec, secrets))
        with timings.phase("verify"):
            pinned, signer = _pin(spec, ref.with_digest(digest), client, policy)
        if pinned != digest:
            raise VerificationError(f"{ref} moved to {pinned} while its attestations were checked; retry")
    else:
        with timings.phase("resolve"):
            ref = resolve(spec, client)
        with timings.phase("verify"):
            digest, signer = _pin(spec, ref, client, policy)
    with tempfile.TemporaryDirectory(prefix="lockgate-reconcile-") as tmp:
        try:
            with timings.phase("pull"):
                pulled = pull.pull(client, ref, Path(tmp) / "artifact", digest=digest, limits=spec.limits)
        except NotFluxArtifact as exc:
            # reconcile has no --media-type: say how to publish what it can apply
            raise ResolveError(
                f"{exc.where}: layer media type {exc.media_type} is not a tar+gzip layer, so this is "
                "not a Flux artifact; publish the manifests with `lockgate push` (or `flux push "
                "artifact`) and reconcile that"
            ) from None
        remote, artifact = spec.allow_remote_bases, Path(tmp) / "artifact"
        with timings.phase("build"):
            rendered = build(artifact, spec.path, allow_remote_bases=remote, overlay=spec.overlay)
    revision = _revision(ref, digest)
    return Fetched(
        reference=ref,
        digest=digest,
        revision=revision,
        source_revision=pulled.resolved.manifest.annotations.get(REVISION_ANNOTATION, ""),
        verified_by=signer,
        objects=rendered.objects,
        notes=rendered.notes,
        source_url=pulled.resolved.manifest.annotations.get(SOURCE_ANNOTATION, ""),
        waiting=waiting,
        admitted=admitted,
        client=client,
    )


def current_digest(
    spec: SourceSpec, client: registry.RegistryClient, *, secrets: SecretReader | None = None
) -> str:
    """The digest the source points to now: one HEAD for a tag, a tag list and a HEAD for semver.

    The cheap check ``serve`` makes between full passes; nothing is pulled or verified. With
    ``attestations`` it is the digest a pass would choose (the attestations are read, so a
    soak that has passed makes a full pass, and an older version that stays applied does
    not), or the newest one waiting when none has them (``secrets`` reads their keys).
    """
    if spec.attestations:
        try:
            return choose(spec, client, _requirements(spec, secrets))[1]
        except Waiting as waiting:
            return waiting.digest
    return client.resolve(resolve(spec, client))
