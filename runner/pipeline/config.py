"""What to reconcile, from flags or from a ``--config`` file of ``Sync`` and ``Runner`` documents.

A Sync document (``apiVersion: lockgate.dev/v1alpha1``, ``kind: Sync``) holds the flags'
settings and the schedule, in camelCase under ``spec``; ``metadata.name`` is the sync's name.
The kinds are declared in ``runner.pipeline.documents`` and decoded by ``lockgate.model``, so
every error names file:line, the document (``Sync/web``) and the field; the checks across
documents (unique names, ``dependsOn`` targets and cycles, one Runner) and each Sync's own
(its URL, semver range, verification policy, attestations, providers, ignore rules) are here, and a file's
problems are reported all at once, whichever check found them. Both routes
produce ``reconcile.SyncOptions``, so the CLI stays one library call per sync; the
verification options become a policy through the shared ``lockgate.signing.options``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockgate import located, model, registry, semver
from lockgate.artifact.limits import Limits
from lockgate.errors import LockgateError, UsageError
from lockgate.model import parse_duration
from lockgate.redact import scrub
from lockgate.signing import github
from lockgate.signing.github import GitHubClaims
from lockgate.signing.options import Spelling, VerifyOptions, build_policy, field_spelling, policy_warnings
from runner.pipeline import attesting, decrypt, notifications, overlays, source, substitute
from runner.pipeline.documents import (
    API_VERSION,
    KINDS,
    AttestationRequirement,
    Notify,
    RunnerDocument,
    RunnerSettings,
    SyncDocument,
    SyncSpec,
    Verify,
    WebhookSettings,
)
from runner.pipeline.reconcile import RESERVED_PREFIX, ObjectRef, Schedule, SyncOptions, runner_namespace
from runner.plan import deletion, drift, health_exprs, ignore, prune_plan

if TYPE_CHECKING:
    from lockgate.signing.policy import Policy

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


def _shared_digest(syncs: list[_Sync], runners: list[located.Document]) -> str:
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
    concurrency: int = 8,
    decryption_secret: str | None = None,
    limits: Limits | None = None,
    allow_remote_bases: bool = False,
) -> SyncOptions:
    if not 0 < max_prune_share <= 1:
        raise UsageError(f"--max-prune-share {max_prune_share}: expected a share in (0, 1]")
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
        ),
        namespace=namespace,
        target_namespace=target_namespace,
        prune=prune,
        wait=wait,
        timeout=parse_duration(timeout),
        force=force,
        dry_run=dry_run,
        prune_options=prune_plan.PruneOptions(max_share=max_prune_share, allow_mass_prune=allow_mass_prune),
        concurrency=concurrency,
        decryption=None if decryption_secret is None else decrypt.Decryption(secret_ref=decryption_secret),
    )


@dataclass(frozen=True)
class _Sync:
    document: located.Document
    value: SyncDocument

    @property
    def label(self) -> str:
        return f"Sync/{self.value.metadata.name}"

    def where(self, path: located.Path) -> str:
        return f"{self.document.file}:{self.document.line_of(path)}: {self.label}"


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
    syncs: list[_Sync], first: dict[str, _Sync], runner: RunnerSettings, messages: list[str]
) -> None:
    """``noCrossNamespaceRefs``: a dependsOn may only name a sync of the same namespace.

    The Secret and ConfigMap references need no check: they hold a name only and are read in
    the sync's own namespace (``spec.namespace``, else the Runner's)."""

    def namespace(sync: _Sync) -> str:
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
    syncs: list[_Sync],
    runners: list[located.Document],
    messages: list[str],
    *,
    complete: bool,
    lockdown: RunnerSettings | None = None,
) -> None:
    """The checks across documents: unique names, dependsOn targets and cycles, one Runner,
    and under ``lockdown`` (a Runner with noCrossNamespaceRefs) dependsOn within a namespace.

    ``complete``: every document decoded, so a dependsOn name not found is really unknown."""
    first: dict[str, _Sync] = {}
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


def _check_source(sync: _Sync, messages: list[str]) -> None:
    """``spec.url`` and ``spec.semver`` as a pass reads them, checked now; each error names its field."""
    spec = sync.value.spec
    try:
        registry.parse(spec.url)
    except LockgateError as exc:
        messages.append(f"{sync.where(('spec', 'url'))}: spec.url: {exc.message}")
    if spec.semver is not None:
        try:
            semver.Constraints.parse(spec.semver)
        except semver.SemverError as exc:
            messages.append(f"{sync.where(('spec', 'semver'))}: spec.semver: {spec.semver!r}: {exc}")


def _policy(sync: _Sync, messages: list[str]) -> Policy | None:
    """The verification policy of ``spec.verify``; a Sync must name one (or skip verification)."""
    verify = sync.value.spec.verify
    options = VerifyOptions(
        key=Path(verify.key) if verify.key else None,
        identity=verify.identity,
        identity_regexp=verify.identity_regexp,
        issuer=verify.issuer,
        issuer_regexp=verify.issuer_regexp,
        github=_pins(verify),
        trusted_root=Path(verify.trusted_root) if verify.trusted_root else None,
        insecure_skip=verify.insecure_skip,
    )
    if verify.secret_ref is not None:
        if options.key or options.keyless or options.insecure_skip:
            messages.append(
                f"{sync.where(('spec', 'verify', 'secretRef'))}: spec.verify.secretRef cannot be combined "
                "with spec.verify.key, the keyless fields or spec.verify.insecureSkip"
            )
        return None
    try:
        policy = build_policy(options, source.FIELDS)
    except UsageError as exc:
        named = exc.message if exc.message.startswith("spec.verify") else f"spec.verify: {exc.message}"
        messages.append(f"{sync.where(('spec', 'verify'))}: {named}")
        return None
    if policy is None and not options.insecure_skip:
        messages.append(
            f"{sync.where(('spec', 'verify'))}: spec.verify: no verification policy: set spec.verify.key, "
            "spec.verify.secretRef, or spec.verify.identity (or identityRegexp) and spec.verify.issuer "
            "(or issuerRegexp); spec.verify.insecureSkip: true applies unsigned artifacts (not recommended)"
        )
    return policy


def _options(
    sync: _Sync, runner: RunnerSettings, *, dry_run: bool, messages: list[str]
) -> SyncOptions | None:
    """The sync's options; None, with every reason in ``messages``, when its spec is refused."""
    spec: SyncSpec = sync.value.spec
    verify = spec.verify
    found = len(messages)
    _check_source(sync, messages)
    policy = _policy(sync, messages)
    attestations, warned = _attestations(sync, messages)
    providers = _providers(sync, runner, messages)
    overlay, common_metadata = overlays.from_spec(spec, sync.where, messages)
    custom_health = _health_exprs(sync, messages)
    ignore_rules = _ignore_rules(sync, messages)
    if len(messages) > found:
        return None
    warnings = tuple(f"{sync.where(('spec', 'verify'))}: {w}" for w in policy_warnings(policy, source.FIELDS))
    return SyncOptions(
        name=sync.value.metadata.name,
        source=source.SourceSpec(
            url=spec.url,
            semver=spec.semver,
            path=spec.path,
            policy=policy,
            insecure_skip_verify=verify.insecure_skip,
            spelling=source.FIELDS,
            secret_ref=spec.secret_ref,
            verify_secret_ref=verify.secret_ref,
            attestations=attestations,
            warnings=warnings + warned,
            limits=Limits(max_total_bytes=spec.max_size, max_files=spec.max_files, max_ratio=spec.max_ratio),
            allow_remote_bases=runner.allow_remote_bases,
            overlay=overlay,
        ),
        namespace=spec.namespace or runner.namespace,
        target_namespace=spec.target_namespace,
        prune=spec.prune,
        wait=spec.wait,
        timeout=spec.timeout,
        force=spec.force,
        dry_run=dry_run,
        prune_options=prune_plan.PruneOptions(
            max_share=spec.max_prune_share, allow_mass_prune=spec.allow_mass_prune
        ),
        deletion_policy=deletion.Policy(spec.deletion_policy),
        schedule=Schedule(
            interval=spec.interval,
            retry_interval=spec.retry_interval,
            drift_interval=spec.drift_interval,
            depends_on=tuple(d.name for d in spec.depends_on),
            suspend=spec.suspend,
        ),
        health_checks=tuple(
            ObjectRef(api_version=h.api_version, kind=h.kind, name=h.name, namespace=h.namespace or "")
            for h in spec.health_checks
        ),
        health_exprs=custom_health,
        rollback=spec.rollback,
        service_account_name=spec.service_account_name or runner.default_service_account,
        post_build=substitute.PostBuild(
            substitute=dict(spec.post_build.substitute),
            substitute_from=tuple(
                substitute.Source(kind=s.kind, name=s.name, optional=s.optional)
                for s in spec.post_build.substitute_from
            ),
            always=spec.post_build.substitute_strategy == "Always",
        ),
        decryption=None
        if spec.decryption is None
        else decrypt.Decryption(
            secret_ref=spec.decryption.secret_ref,
            provider=spec.decryption.provider,
            check_mac=spec.decryption.check_mac,
        ),
        common_metadata=common_metadata,
        notify=providers,
        attest=None
        if spec.attest is None or spec.attest.secret_ref is None
        else attesting.AttestOptions(
            secret_ref=spec.attest.secret_ref, cluster=runner.cluster_name, on_failure=spec.attest.on_failure
        ),
        ignore=ignore_rules,
        drift_detection=drift.Mode(spec.drift_detection.mode),
    )


def _health_exprs(sync: _Sync, messages: list[str]) -> health_exprs.CustomHealth | None:
    """``spec.healthCheckExprs`` compiled now, so an expression that does not compile is an error
    of the file (with its line), not of a pass."""
    items = sync.value.spec.health_check_exprs
    if not items:
        return None
    specs = [
        health_exprs.HealthExprSpec(
            api_version=e.api_version,
            current=e.current,
            kind=e.kind or "",
            in_progress=e.in_progress or "",
            failed=e.failed or "",
        )
        for e in items
    ]
    errors = health_exprs.compile_each(specs)
    for error in errors:
        path: located.Path = ("spec", "healthCheckExprs", error.index, *((error.name,) if error.name else ()))
        messages.append(f"{sync.where(path)}: spec.healthCheckExprs{error.field}: {error.message}")
    return None if errors else health_exprs.compile_all(specs)


def _ignore_rules(sync: _Sync, messages: list[str]) -> tuple[ignore.Rule, ...]:
    """``spec.ignore``: each path a JSON pointer to a field, each target's patterns and selectors
    compiled now; every problem names its field."""
    rules = []
    for number, item in enumerate(sync.value.spec.ignore):
        at: located.Path = ("spec", "ignore", number)
        paths = []
        if not item.paths:
            messages.append(f"{sync.where(at)}: spec.ignore[{number}].paths: name at least one field")
        for index, text in enumerate(item.paths):
            try:
                paths.append(ignore.pointer(text))
            except ignore.RuleError as exc:
                where = sync.where((*at, "paths", index))
                messages.append(f"{where}: spec.ignore[{number}].paths[{index}]: {exc}")
        target = None
        if item.target is not None:
            spec = item.target
            try:
                target = ignore.Target(
                    group=spec.group,
                    version=spec.version,
                    kind=spec.kind,
                    name=spec.name,
                    namespace=spec.namespace,
                    label_selector=spec.label_selector,
                    annotation_selector=spec.annotation_selector,
                )
            except ignore.RuleError as exc:
                where = sync.where((*at, "target", exc.field))
                messages.append(f"{where}: spec.ignore[{number}].target.{exc.field}: {exc}")
        rules.append(ignore.Rule(tuple(paths), target))
    return tuple(rules)


def _pins(fields: Verify | AttestationRequirement) -> GitHubClaims:
    """The ``github*`` fields (attribute ``github_<claim>``) as the policy's pins."""
    return GitHubClaims(**{c.attribute: getattr(fields, f"github_{c.attribute}") for c in github.CLAIMS})


def _attestations(
    sync: _Sync, messages: list[str]
) -> tuple[tuple[source.AttestationSpec, ...], tuple[str, ...]]:
    """``spec.verify.attestations``: each names exactly one of key, secretRef and a keyless
    identity; a key file is read now. Also the warnings about the keyless policies."""
    from lockgate.signing import attest
    from lockgate.signing.policy import KeyPolicy

    spec = sync.value.spec
    found = []
    warnings: list[str] = []
    for number, item in enumerate(spec.verify.attestations):
        where = sync.where(("spec", "verify", "attestations", number))
        field = f"spec.verify.attestations[{number}]"
        keyless = VerifyOptions(
            identity=item.identity,
            identity_regexp=item.identity_regexp,
            issuer=item.issuer,
            issuer_regexp=item.issuer_regexp,
            github=_pins(item),
            trusted_root=Path(spec.verify.trusted_root) if spec.verify.trusted_root else None,
        )
        if [item.key is not None, item.secret_ref is not None, keyless.keyless].count(True) != 1:
            messages.append(
                f"{where}: {field} needs exactly one of key, secretRef (the attester's public key) "
                "and identity/issuer (keyless)"
            )
            continue
        healthy = item.predicate_type == source.AttestationSpec.predicate_type
        if healthy and not item.cluster:
            messages.append(
                f"{where}: spec.verify.attestations[{number}].cluster is required for health attestations "
                "(the attesting Runner's clusterName)"
            )
        if not healthy and item.min_age:
            messages.append(
                f"{where}: spec.verify.attestations[{number}].minAge applies to health attestations only"
            )
        policy: attest.AttestationPolicy | None = None
        try:
            if keyless.keyless:
                spelled = field_spelling(f"{field}.")
                policy = build_policy(keyless, spelled)
                warnings += [f"{where}: {w}" for w in policy_warnings(policy, spelled)]
            if item.key is not None:
                try:
                    policy = KeyPolicy.from_file(Path(item.key))
                except UsageError as exc:
                    raise UsageError(f"spec.verify.attestations[{number}].key: {exc.message}") from None
        except UsageError as exc:
            messages.append(f"{where}: {exc.message}")
            continue
        found.append(
            source.AttestationSpec(
                cluster=item.cluster,
                policy=policy,
                secret_ref=item.secret_ref,
                min_age=item.min_age,
                predicate_type=item.predicate_type,
            )
        )
    return tuple(found), tuple(warnings)


def _providers(
    sync: _Sync, runner: RunnerSettings, messages: list[str]
) -> tuple[notifications.Provider, ...]:
    """The sync's own providers, then the Runner's (their Secrets in the Runner's namespace)."""
    name = sync.value.metadata.name
    own = [
        (n, None, f"{sync.where(('spec', 'notify', i))}: spec.notify[{i}]")
        for i, n in enumerate(sync.value.spec.notify)
    ]
    shared = [(n, runner.namespace, f"Runner: spec.notify[{i}]") for i, n in enumerate(runner.notify)]
    providers = []
    for notify, secret_namespace, where in [*own, *shared]:
        problem = _notify_problem(notify)
        if problem:
            messages.append(f"{where}: {problem}")
            continue
        providers.append(
            notifications.Provider(
                type=notify.type,
                address=notify.address,
                secret_ref=notify.secret_ref,
                secret_namespace=secret_namespace,
                api_url=(notify.api_url or notifications.DEFAULT_GITHUB_API).rstrip("/"),
                context=notifications.context_for(notify.context, cluster=runner.cluster_name, sync=name),
                target_url=notify.target_url,
            )
        )
    return tuple(providers)


def _notify_problem(notify: Notify) -> str:
    if notify.type == "github" and notify.secret_ref is None:
        return "a github provider needs secretRef, a Secret whose 'token' entry is the token"
    if notify.type != "github" and notify.address is None and notify.secret_ref is None:
        return f"a {notify.type} provider needs address, or secretRef to a Secret with an 'address' entry"
    return ""


def load(path: Path, *, dry_run: bool = False) -> Config:
    """The Syncs and the Runner settings of ``path``; every problem of the file in one ``UsageError``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--config {path}: {exc.strerror}") from None
    return parse(data, str(path), dry_run=dry_run)


def parse(data: bytes, name: str, *, dry_run: bool = False) -> Config:
    """``load`` of a file's bytes; ``name`` is where they came from, in every error."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"--config {name}: not UTF-8 text") from None
    docs = located.documents(text, name)
    messages: list[str] = []
    syncs: list[_Sync] = []
    runners: list[tuple[located.Document, RunnerDocument]] = []
    for doc in docs:
        decoded = _decode(doc, messages)
        if isinstance(decoded, SyncDocument):
            syncs.append(_Sync(doc, decoded))
        elif isinstance(decoded, RunnerDocument):
            runners.append((doc, decoded))
    settings = runners[0][1].spec if runners else None
    lockdown = settings if settings is not None and settings.no_cross_namespace_refs else None
    _across(syncs, [doc for doc, _ in runners], messages, complete=not messages, lockdown=lockdown)
    if not messages and not syncs:
        messages.append(f"{name}: no Sync documents")
    # every document's own checks too, so one run lists all of the file's problems
    runner = runners[0][1].spec if runners else RunnerSettings()
    options = [_options(sync, runner, dry_run=dry_run, messages=messages) for sync in syncs]
    model.raise_all(messages)
    return Config(
        syncs=[o for o in options if o is not None],
        runner=runner,
        digest="sha256:" + hashlib.sha256(data).hexdigest(),
        shared_digest=_shared_digest(syncs, [doc for doc, _ in runners]),
    )
