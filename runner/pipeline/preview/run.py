"""``lockgate preview`` as one library call: every cluster's syncs of PATH's repository, previewed.

For each ``--cluster`` file (``targets``), each Sync of the repository PATH is published to:
what the cluster runs (``running``: the attested digest, else the tag), both revisions rendered
as the sync renders them (``render``), and the next pass planned from the two
(``runner.plan.preview.plan``), with the hazards a reviewer must see. A target that cannot be
previewed (PATH does not render for that sync's overlay, the registry refuses) keeps its error
and the others go on. Registry clients are shared per host, and one attestation reader per
repository holds every cluster's attester, so each referrer is fetched and verified once for
the whole preview; targets are planned a few at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from lockgate import registry
from lockgate.artifact import metadata, pack
from lockgate.artifact.limits import Limits
from lockgate.errors import LockgateError, RenderError, UsageError
from lockgate.fleet.evidence import Reader
from lockgate.forge import comments, job
from lockgate.registry import oci
from lockgate.signing.attest import AttestationPolicy
from lockgate.signing.policy import KeyPolicy
from runner.pipeline.options import SyncOptions
from runner.pipeline.preview import render, running, targets
from runner.plan.desired import Desired
from runner.plan.preview import plan as planner
from runner.plan.preview import report
from runner.plan.preview.model import Basis, Hazard, HazardKind, Preview, Target

#: targets rendered at once (each may run kustomize)
CONCURRENCY = 4

ClientFor = Callable[[registry.Reference], registry.RegistryClient]


@dataclass(frozen=True)
class Request:
    path: Path
    clusters: tuple[str, ...]
    #: the repository PATH is published to (``oci://REGISTRY/REPO``); None: by source annotation
    url: str | None = None
    #: cluster label -> public key of its runner's attestations
    attester_keys: tuple[tuple[str, Path], ...] = ()
    #: a keyless identity attesting for every cluster
    keyless: AttestationPolicy | None = None
    #: read the configuration files at this Git revision too, to tell a change of who may sign
    base: str | None = None
    pack_options: pack.PackOptions = field(default_factory=pack.PackOptions)
    limits: Limits = field(default_factory=Limits)


def _attesters(request: Request, clusters: list[targets.Cluster]) -> dict[str, AttestationPolicy]:
    """Each cluster's attester: its key, bound to the name its runner writes, or the identity."""
    by_label = {c.label: c for c in clusters}
    found: dict[str, AttestationPolicy] = {}
    for label, path in request.attester_keys:
        cluster = by_label.get(label)
        if cluster is None:
            raise UsageError(
                f"--attester-key {label}={path}: no --cluster is named {label!r} "
                f"(the clusters are {', '.join(sorted(by_label))})"
            )
        found[label] = replace(KeyPolicy.from_file(path), cluster=cluster.attests_as)
    if request.keyless is not None:
        for label in by_label:
            found.setdefault(label, request.keyless)
    return found


class _Registries:
    """One client per registry host, one attestation reader per repository."""

    def __init__(self, client_for: ClientFor, policies: list[AttestationPolicy]) -> None:
        self._client_for = client_for
        self._policies = policies
        self._lock = threading.Lock()
        self._clients: dict[str, registry.RegistryClient] = {}
        self._readers: dict[str, Reader] = {}
        self._sources: dict[str, str] = {}
        self.lookups = running.Lookups()

    def client(self, ref: registry.Reference) -> registry.RegistryClient:
        with self._lock:
            if ref.host not in self._clients:
                self._clients[ref.host] = self._client_for(ref)
            return self._clients[ref.host]

    def reader(self, ref: registry.Reference) -> Reader | None:
        if not self._policies:
            return None
        with self._lock:
            if ref.name not in self._readers:
                self._readers[ref.name] = Reader(self._clients[ref.host], ref.repository, self._policies)
            return self._readers[ref.name]

    def source_of(self, ref: registry.Reference, digest: str) -> str:
        """The ``org.opencontainers.image.source`` of the manifest ``digest`` ("" when none)."""
        key = f"{ref.name}@{digest}"
        with self._lock:
            if key in self._sources:
                return self._sources[key]
        fetched = self.client(ref).get_manifest(ref.repository, digest)
        annotations = oci.read(fetched.content, f"manifest {key}").get("annotations") or {}
        value = str(annotations.get(metadata.SOURCE, ""))
        with self._lock:
            self._sources[key] = value
        return value

    @property
    def counts(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for client in self._clients.values():
            for verb, count in client.counts.items():
                total[verb] = total.get(verb, 0) + count
        return total


def _normal(source: str) -> str:
    return source.strip().rstrip("/").removesuffix(".git").lower()


def _verify_change(cluster: targets.Cluster, options: SyncOptions) -> list[Hazard]:
    before = targets.base_sync(cluster, options.name)
    if before is None:
        return []
    was, now = targets.who_may_sign(before.source), targets.who_may_sign(options.source)
    if was == now:
        return []
    return [Hazard(HazardKind.VERIFY_POLICY, f"who may sign changes: was {was}; now {now}")]


def _preview_one(
    cluster: targets.Cluster,
    options: SyncOptions,
    local: Path,
    workspace: render.Workspace,
    registries: _Registries,
    attester: bool,
    shown: str,
) -> Target:
    target = Target(
        cluster=cluster.label, config=str(cluster.file), sync=options.name, url=options.source.url
    )
    try:
        ref = registry.parse(options.source.url)
        client = registries.client(ref)
        found = running.find(
            options,
            label=cluster.label,
            client=client,
            reader=registries.reader(ref) if attester else None,
            lookups=registries.lookups,
        )
        target.running = found.running
        old: list[Desired] = []
        if found.running.digest:
            pulled = workspace.pulled(client, ref, found.running.digest, options.source.limits)
            old, _ = render.desired(pulled, workspace, options)
        new, notes = render.desired(local, workspace, options)
        if not new and not options.prune:
            where = f"{shown}/{options.source.path}" if options.source.path else shown
            raise RenderError(f"{where} holds no objects for the sync {options.name}, which does not prune")
        settings = planner.Settings(
            prune=options.prune,
            prune_options=options.prune_options,
            force=options.force,
            set_id=render.set_id(options),
            installing=found.running.basis is Basis.NONE,
        )
        planned = planner.plan(old, new, settings)
        gate = targets.gate(options)
        more = [f"applied there only once the digest has: {gate}"] if gate else []
        target.changeset = planned.changeset
        target.hooks, target.waves, target.refused = planned.hooks, planned.waves, planned.refused
        target.hazards = (*found.hazards, *_verify_change(cluster, options), *planned.hazards)
        target.notes = (*notes, *planned.notes, *more)
    except LockgateError as exc:
        target.error = exc
    return target


@dataclass(frozen=True)
class Done:
    preview: Preview
    #: the registry requests the preview made, per HTTP verb
    requests: dict[str, int]
    #: what became of the pull-request comment (None: not asked for)
    posted: comments.Posted | None = None


def run(
    request: Request,
    *,
    client_for: ClientFor,
    comment: bool = False,
    comment_key: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Done:
    """The preview; with ``comment``, its Markdown kept as one comment on the job's pull request
    (``env`` says which: ``lockgate.forge.job``), checked before anything is read."""
    pull_request = job.detect(env or {}) if comment else None
    preview, counts = _preview(request, client_for)
    if pull_request is None:
        return Done(preview, counts)
    one = comments.one_comment(
        pull_request.repository, pull_request.number, pull_request.token, api_root=pull_request.api_root
    )
    key = comment_key or pull_request.key
    return Done(preview, counts, comments.post(one, key, report.markdown(preview)))


def _preview(request: Request, client_for: ClientFor) -> tuple[Preview, dict[str, int]]:
    clusters = targets.load(request.clusters, base=request.base)
    attesters = _attesters(request, clusters)
    policies = list({id(policy): policy for policy in attesters.values()}.values())
    registries = _Registries(client_for, policies)
    wanted_source = None
    if request.url is None:
        wanted_source = metadata.detect(request.path).source
        if not wanted_source:
            raise UsageError(
                f"{request.path}: which repository is it published to? pass --url oci://REGISTRY/REPO "
                "(no source repository is known for PATH: not a Git checkout with an origin)"
            )
    chosen = [
        (cluster, options)
        for cluster in clusters
        for options in cluster.loaded.syncs
        if request.url is None or targets.same_repository(options.source.url, request.url)
    ]
    preview = Preview(path=str(request.path))
    with render.Workspace() as workspace:
        local = workspace.local(request.path, request.pack_options, request.limits)
        with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
            made = list(
                pool.map(
                    lambda pair: _preview_one(
                        pair[0],
                        pair[1],
                        local,
                        workspace,
                        registries,
                        pair[0].label in attesters,
                        str(request.path),
                    ),
                    chosen,
                )
            )
    if wanted_source is not None:
        made = [t for t in made if _matches_source(t, registries, wanted_source)]
    preview.targets = made
    if not made:
        where = f"--url {request.url}" if request.url else f"the source {wanted_source}"
        listed = ", ".join(f"{c.label}/{s.name} ({s.source.url})" for c in clusters for s in c.loaded.syncs)
        raise UsageError(f"no sync of the --cluster files takes {where}: {listed}")
    notes: list[str] = []
    if wanted_source is not None:
        notes.append(f"syncs chosen by the source their artifact was built from: {wanted_source}")
    taken = {(t.cluster, t.sync) for t in made}
    others = [
        f"{c.label}/{s.name}" for c in clusters for s in c.loaded.syncs if (c.label, s.name) not in taken
    ]
    if others:
        notes.append(f"{len(others)} syncs take other repositories and are left out: {', '.join(others)}")
    preview.notes = tuple(notes)
    return preview, registries.counts


def _matches_source(target: Target, registries: _Registries, wanted: str) -> bool:
    if target.error is not None or not target.running.digest:
        return False
    try:
        found = registries.source_of(registry.parse(target.url), target.running.digest)
    except LockgateError:
        return False
    return _normal(found) == _normal(wanted)
