"""What to reconcile, from flags or from a ``--config`` file of ``Sync`` and ``Runner`` documents.

A Sync document (``apiVersion: lockgate.dev/v1alpha1``, ``kind: Sync``) holds the flags'
settings and the schedule, in camelCase under ``spec``; ``metadata.name`` is the sync's name.
The kinds are declared in ``runner.pipeline.documents`` and decoded by ``lockgate.model``, so
every error names file:line, the document (``Sync/web``) and the field; the checks across
documents (unique names, ``dependsOn`` targets and cycles, one Runner) are here, each Sync's
own (its URL, semver range, verification policy, attestations, providers, ignore rules...) in
``syncdoc``, and a file's problems are reported all at once, whichever check found them. Both
routes produce ``options.SyncOptions``, so the CLI stays one library call per sync; the
verification options become a policy through the shared ``lockgate.signing.options``.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePath

from lockgate import located, model, registry
from lockgate.artifact.limits import Limits
from lockgate.errors import LockgateError, UsageError
from lockgate.helm import published
from lockgate.model import parse_duration
from lockgate.redact import scrub
from lockgate.registry import cloud
from lockgate.signing.options import Spelling, VerifyOptions, build_policy, policy_warnings
from runner.pipeline import decrypt, layoutroots, source, syncdoc
from runner.pipeline.documents import API_VERSION, SyncDocument
from runner.pipeline.options import RESERVED_PREFIX, SyncOptions, runner_namespace
from runner.pipeline.runnerdoc import KINDS, RunnerDocument, RunnerSettings, WebhookSettings
from runner.plan import prune_plan

__all__ = [
    "API_VERSION",
    "Config",
    "RunnerSettings",
    "WebhookSettings",
    "load",
    "parse_duration",
    "sync_options",
]


@dataclass(frozen=True)
class Config:
    """A loaded ``--config`` file."""

    #: in file order
    syncs: list[SyncOptions]
    #: the Runner document's settings; the defaults when there is none
    runner: RunnerSettings
    #: ``sha256:<hex>`` of the file's bytes, to tell a changed file from a touched one
    digest: str
    #: ``sha256:<hex>`` of what replicas must agree on to share the syncs: the Sync documents
    #: and the Runner settings other than ``PER_REPLICA`` (comments and order do not count)
    shared_digest: str = ""


#: Runner settings each replica may set for itself (its own listeners, log and pace)
PER_REPLICA = frozenset(
    {"metricsAddress", "webhookAddress", "statusPage", "logFormat", "concurrency", "maxBodyBytes"}
)


def _shared_digest(syncs: list[syncdoc.SyncEntry], runners: list[located.Document]) -> str:
    spec = (runners[0].value.get("spec") or {}) if runners else {}
    shared = {
        "runner": {k: v for k, v in spec.items() if k not in PER_REPLICA},
        "syncs": sorted((s.document.value for s in syncs), key=lambda doc: str(doc["metadata"]["name"])),
    }
    canonical = json.dumps(shared, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def sync_options(
    *,
    name: str,
    url: str,
    verify: VerifyOptions,
    spelling: Spelling = source.FLAGS,
    semver: str | None = None,
    path: str | None = None,
    namespace: str | None = None,
    target_namespace: str | None = None,
    prune: bool = False,
    wait: bool = False,
    timeout: str = "5m",
    force: bool = False,
    dry_run: bool = False,
    allow_mass_prune: bool = False,
    max_prune_share: float = prune_plan.DEFAULT_MAX_SHARE,
    prune_crds: bool = False,
    concurrency: int = 8,
    decryption_secret: str | None = None,
    limits: Limits | None = None,
    allow_remote_bases: bool = False,
    signed_repository: str | None = None,
    provider: str = "generic",
) -> SyncOptions:
    if not 0 < max_prune_share <= 1:
        raise UsageError(f"--max-prune-share {max_prune_share}: expected a share in (0, 1]")
    misfit = cloud.misfit(provider, url)
    if misfit is not None:
        raise UsageError(f"--provider: {misfit}")
    policy = build_policy(verify, spelling)
    if policy is None and not verify.insecure_skip:
        raise UsageError(source.missing_policy(spelling))
    return SyncOptions(
        name=name,
        source=source.SourceSpec(
            url=url,
            semver=semver,
            path=path,
            policy=policy,
            insecure_skip_verify=verify.insecure_skip,
            spelling=spelling,
            warnings=policy_warnings(policy, spelling),
            limits=limits or Limits(),
            allow_remote_bases=allow_remote_bases,
            signed_repository=None
            if signed_repository is None
            else registry.repository_name(signed_repository, "--verify-signed-repository"),
            provider=provider,
        ),
        namespace=namespace,
        target_namespace=target_namespace,
        prune=prune,
        wait=wait,
        timeout=parse_duration(timeout),
        force=force,
        dry_run=dry_run,
        prune_options=prune_plan.PruneOptions(
            max_share=max_prune_share, allow_mass_prune=allow_mass_prune, prune_crds=prune_crds
        ),
        concurrency=concurrency,
        decryption=None if decryption_secret is None else decrypt.Decryption(secret_ref=decryption_secret),
    )


def _decode(doc: located.Document, messages: list[str]) -> SyncDocument | RunnerDocument | None:
    value = doc.value
    if not isinstance(value, dict):
        messages.append(
            f"{doc.file}:{doc.line}: expected a Sync or Runner document (a mapping), got "
            f"{model.describe(value)}"
        )
        return None
    kind = value.get("kind")
    name = (value.get("metadata") or {}).get("name") if isinstance(value.get("metadata"), dict) else None
    label = f"{kind}/{name}" if isinstance(kind, str) and isinstance(name, str) else str(kind or "document")
    problems = model.Problems(doc, label)
    if value.get("apiVersion") != API_VERSION:
        found = value.get("apiVersion")
        problems.add(
            ("apiVersion",),
            f"expected {API_VERSION}, got {found!r}"
            if found
            else f"required field is missing (expected {API_VERSION})",
        )
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        choices = " or ".join(KINDS)
        problems.add(
            ("kind",),
            f"expected {choices}, got {kind!r}" if kind else f"required field is missing ({choices})",
        )
    if problems.messages or cls is None:
        messages.extend(problems.messages)
        return None
    decoded = model.decode(cls, value, problems)
    messages.extend(problems.messages)
    return decoded if isinstance(decoded, SyncDocument | RunnerDocument) else None


def _cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """The first dependency cycle, in file order, as ``[a, b, a]``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for upstream in graph.get(name, []):
            if state.get(upstream) == 1:
                return [*path[path.index(upstream) :], upstream]
            if upstream in graph and state.get(upstream) is None:
                found = visit(upstream)
                if found:
                    return found
        path.pop()
        state[name] = 2
        return None

    for name in graph:
        if state.get(name) is None:
            found = visit(name)
            if found:
                return found
    return None


def _has_tag_or_digest(url: str) -> bool:
    try:
        ref = registry.parse(url)
    except LockgateError:
        return False  # the URL's own error is reported where it is parsed
    return ref.tag is not None or ref.digest is not None


def _same_namespace(
    syncs: list[syncdoc.SyncEntry],
    first: dict[str, syncdoc.SyncEntry],
    runner: RunnerSettings,
    messages: list[str],
) -> None:
    """``noCrossNamespaceRefs``: a dependsOn may only name a sync of the same namespace.

    The Secret and ConfigMap references need no check: they hold a name only and are read in
    the sync's own namespace (``spec.namespace``, else the Runner's)."""

    def namespace(sync: syncdoc.SyncEntry) -> str:
        return runner_namespace(sync.value.spec.namespace or runner.namespace)

    for sync in syncs:
        for index, dep in enumerate(sync.value.spec.depends_on):
            upstream = first.get(dep.name)
            if upstream is None or namespace(upstream) == namespace(sync):
                continue
            path: located.Path = ("spec", "dependsOn", index)
            messages.append(
                f"{sync.where(path)}: spec.dependsOn[{index}]: Sync/{dep.name} is in namespace "
                f"{namespace(upstream)}, not in this sync's namespace {namespace(sync)}: cross-namespace "
                "references are blocked by the Runner's noCrossNamespaceRefs"
            )


def _across(
    syncs: list[syncdoc.SyncEntry],
    runners: list[located.Document],
    messages: list[str],
    *,
    complete: bool,
    lockdown: RunnerSettings | None = None,
) -> None:
    """The checks across documents: unique names, dependsOn targets and cycles, one Runner,
    and under ``lockdown`` (a Runner with noCrossNamespaceRefs) dependsOn within a namespace.

    ``complete``: every document decoded, so a dependsOn name not found is really unknown."""
    first: dict[str, syncdoc.SyncEntry] = {}
    for sync in syncs:
        name = sync.value.metadata.name
        if name.startswith(RESERVED_PREFIX):
            messages.append(
                f"{sync.where(('metadata', 'name'))}: metadata.name: {name!r} starts with "
                f"{RESERVED_PREFIX!r}, which is reserved (the Lease lockgate-{name} would be a "
                "replica's membership Lease); choose another name"
            )
        spec = sync.value.spec
        if spec.semver is not None and _has_tag_or_digest(spec.url):
            messages.append(
                f"{sync.where(('spec', 'semver'))}: spec.semver: spec.url {scrub(spec.url)} already "
                "names a tag or digest; drop it from the URL to let semver pick, or drop spec.semver"
            )
        if name in first:
            earlier = first[name].document
            messages.append(
                f"{sync.where(('metadata', 'name'))}: metadata.name: duplicate name {name!r} "
                f"(first at {earlier.file}:{earlier.line_of(('metadata', 'name'))}); "
                "sync names must be unique"
            )
        else:
            first[name] = sync
    for extra in runners[1:]:
        messages.append(
            f"{extra.file}:{extra.line}: Runner: at most one Runner document per file "
            f"(the first is at line {runners[0].line})"
        )
    for sync in syncs if complete else ():
        for index, dep in enumerate(sync.value.spec.depends_on):
            if dep.name not in first:
                close = difflib.get_close_matches(dep.name, list(first), n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                path: located.Path = ("spec", "dependsOn", index)
                messages.append(
                    f"{sync.where(path)}: spec.dependsOn[{index}]: "
                    f"no Sync named {dep.name!r} in this file{hint}"
                )
    if complete and lockdown is not None:
        _same_namespace(syncs, first, lockdown, messages)
    graph = {s.value.metadata.name: [d.name for d in s.value.spec.depends_on] for s in first.values()}
    cycle = _cycle(graph)
    if cycle:
        sync = first[cycle[0]]
        messages.append(
            f"{sync.where(('spec', 'dependsOn'))}: spec.dependsOn: dependency cycle {' -> '.join(cycle)}"
        )


def _receivers(doc: located.Document, runner: RunnerSettings, names: set[str], messages: list[str]) -> None:
    """A Runner's receivers have unique names and name syncs of this file (or ``*``)."""
    seen: set[str] = set()
    for index, receiver in enumerate(runner.receivers):
        if receiver.name in seen:
            where = f"{doc.file}:{doc.line_of(('spec', 'receivers', index, 'name'))}"
            messages.append(f"{where}: spec.receivers[{index}].name: duplicate receiver {receiver.name!r}")
        seen.add(receiver.name)
        for at, resource in enumerate(receiver.resources):
            if resource.name != "*" and resource.name not in names:
                close = difflib.get_close_matches(resource.name, sorted(names), n=1)
                hint = f"; did you mean {close[0]}?" if close else " (or * for every sync)"
                where = f"{doc.file}:{doc.line_of(('spec', 'receivers', index, 'resources', at, 'name'))}"
                messages.append(
                    f"{where}: spec.receivers[{index}].resources[{at}].name: no Sync named "
                    f"{resource.name!r} in this file{hint}"
                )


def _capabilities(doc: located.Document, runner: RunnerSettings, messages: list[str]) -> None:
    """``spec.capabilities``: a repository (no tag: the clusterName is the tag), a signing key,
    and a clusterName that can be a tag."""
    options = runner.capabilities
    if options.url is None:
        return

    def where(*path: str) -> str:
        return f"{doc.file}:{doc.line_of(('spec', *path))}"

    if options.signing_secret_ref is None:
        messages.append(
            f"{where('capabilities')}: spec.capabilities.signingSecretRef: required with url (the Secret "
            "holding the runner's cosign.key and cosign.password that signs what it publishes)"
        )
    if _has_tag_or_digest(options.url):
        messages.append(
            f"{where('capabilities', 'url')}: spec.capabilities.url: name the repository only (no tag or "
            "digest): each cluster publishes at the tag named after its clusterName"
        )
    try:
        published.check_tag(runner.cluster_name, f"{where('clusterName')}: spec.clusterName")
    except LockgateError as exc:
        messages.append(exc.message)


def load(path: Path, *, dry_run: bool = False) -> Config:
    """The Syncs and the Runner settings of ``path``; every problem of the file in one ``UsageError``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--config {path}: {exc.strerror}") from None
    # the file's directory as named (a mounted ConfigMap's file is a link into ..data: not followed)
    directory = PurePath(os.path.abspath(path)).parent
    return parse(data, str(path), dry_run=dry_run, directory=directory)


def parse(data: bytes, name: str, *, dry_run: bool = False, directory: PurePath | None = None) -> Config:
    """``load`` of a file's bytes; ``name`` is where they came from, in every error, and
    ``directory`` the file's own (the platform syncs' default layout root; None: none)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"--config {name}: not UTF-8 text") from None
    docs = located.documents(text, name)
    messages: list[str] = []
    syncs: list[syncdoc.SyncEntry] = []
    runners: list[tuple[located.Document, RunnerDocument]] = []
    for doc in docs:
        decoded = _decode(doc, messages)
        if isinstance(decoded, SyncDocument):
            syncs.append(syncdoc.SyncEntry(doc, decoded))
        elif isinstance(decoded, RunnerDocument):
            runners.append((doc, decoded))
    settings = runners[0][1].spec if runners else None
    lockdown = settings if settings is not None and settings.no_cross_namespace_refs else None
    _across(syncs, [doc for doc, _ in runners], messages, complete=not messages, lockdown=lockdown)
    if runners and not messages:
        _receivers(runners[0][0], runners[0][1].spec, {s.value.metadata.name for s in syncs}, messages)
        _capabilities(runners[0][0], runners[0][1].spec, messages)
    if not messages and not syncs:
        messages.append(f"{name}: no Sync documents")
    # every document's own checks too, so one run lists all of the file's problems
    runner = runners[0][1].spec if runners else RunnerSettings()
    for entry, number, why in layoutroots.problems(runner):
        doc = runners[0][0]
        at = doc.line_of(("spec", "layoutRoots", entry, "paths", number))
        messages.append(f"{doc.file}:{at}: Runner: spec.layoutRoots[{entry}].paths[{number}]: {why}")
    options = [
        syncdoc.options(sync, runner, dry_run=dry_run, messages=messages, directory=directory)
        for sync in syncs
    ]
    model.raise_all(messages)
    # where every sync of the file keeps its records: no sync's artifact may take their names
    namespaces = frozenset(runner_namespace(o.namespace) for o in options if o is not None) | {
        runner_namespace(runner.namespace)
    }
    return Config(
        syncs=[dataclasses.replace(o, runner_namespaces=namespaces) for o in options if o is not None],
        runner=runner,
        digest="sha256:" + hashlib.sha256(data).hexdigest(),
        shared_digest=_shared_digest(syncs, [doc for doc, _ in runners]),
    )
