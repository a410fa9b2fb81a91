"""One ``Sync`` document into ``SyncOptions``, every problem of it named by its field.

``config`` decodes the file and checks across documents; here each Sync's own settings are
checked and built: its URL and semver range, its verification policy and attestations
(through the shared ``lockgate.signing.options``), health expressions, ignore rules,
overlays and notification providers. Problems are appended to ``messages`` (file:line, the
document, the field) rather than raised, so a file's problems are reported all at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from lockgate import forge, located, registry, semver
from lockgate.artifact.limits import Limits
from lockgate.errors import LockgateError, UsageError
from lockgate.forge import destination, remote
from lockgate.registry import cloud
from lockgate.signing import buildclaims, github
from lockgate.signing.buildclaims import BuildClaims
from lockgate.signing.github import GitHubClaims
from lockgate.signing.options import VerifyOptions, build_policy, field_spelling, policy_warnings
from runner.pipeline import (
    attesting,
    decrypt,
    eventfilter,
    layoutroots,
    notifications,
    overlays,
    source,
    substitute,
)
from runner.pipeline.documents import (
    AttestationRequirement,
    Notify,
    SyncDocument,
    SyncSpec,
    Verify,
)
from runner.pipeline.options import ObjectRef, Schedule, SyncOptions, runner_namespace
from runner.pipeline.runnerdoc import RunnerSettings
from runner.plan import deletion, drift, health_exprs, ignore, prune_plan
from runner.sandbox import pool

if TYPE_CHECKING:
    from lockgate.signing.policy import Policy


@dataclass(frozen=True)
class SyncEntry:
    """A decoded Sync document and where it stands in its file."""

    document: located.Document
    value: SyncDocument

    @property
    def label(self) -> str:
        return f"Sync/{self.value.metadata.name}"

    def where(self, path: located.Path) -> str:
        return f"{self.document.file}:{self.document.line_of(path)}: {self.label}"


def _check_source(sync: SyncEntry, messages: list[str]) -> None:
    """``spec.url`` and ``spec.semver`` as a pass reads them, checked now; each error names its field."""
    spec = sync.value.spec
    try:
        registry.parse(spec.url)
    except LockgateError as exc:
        messages.append(f"{sync.where(('spec', 'url'))}: spec.url: {exc.message}")
    signed = spec.verify.signed_repository
    if signed is not None:
        try:
            registry.repository_name(signed, "spec.verify.signedRepository")
        except LockgateError as exc:
            messages.append(f"{sync.where(('spec', 'verify', 'signedRepository'))}: {exc.message}")
    if spec.semver is not None:
        try:
            semver.Constraints.parse(spec.semver)
        except semver.SemverError as exc:
            messages.append(f"{sync.where(('spec', 'semver'))}: spec.semver: {spec.semver!r}: {exc}")
    if spec.provider != "generic":
        where = sync.where(("spec", "provider"))
        if spec.secret_ref is not None:
            messages.append(
                f"{where}: spec.provider {spec.provider} mints the credentials; drop spec.secretRef"
            )
        problem = cloud.misfit(spec.provider, spec.url)
        if problem is not None:
            messages.append(f"{where}: spec.provider: {problem}")


def _policy(sync: SyncEntry, messages: list[str]) -> Policy | None:
    """The verification policy of ``spec.verify``; a Sync must name one (or skip verification)."""
    verify = sync.value.spec.verify
    options = VerifyOptions(
        key=Path(verify.key) if verify.key else None,
        identity=verify.identity,
        identity_regexp=verify.identity_regexp,
        issuer=verify.issuer,
        issuer_regexp=verify.issuer_regexp,
        github=_pins(verify),
        build=_build_pins(verify),
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


def options(
    sync: SyncEntry,
    runner: RunnerSettings,
    *,
    dry_run: bool,
    messages: list[str],
    directory: PurePath | None = None,
) -> SyncOptions | None:
    """The sync's options; None, with every reason in ``messages``, when its spec is refused.
    ``directory``: the config file's own, a platform sync's default layout root."""
    spec: SyncSpec = sync.value.spec
    verify = spec.verify
    found = len(messages)
    _check_source(sync, messages)
    layout = layoutroots.allowed(
        spec.url, runner_namespace(spec.namespace or runner.namespace), runner, directory
    )
    if isinstance(layout, str):
        messages.append(f"{sync.where(('spec', 'url'))}: spec.url: {layout}")
    policy = _policy(sync, messages)
    attestations, warned = _attestations(sync, runner.cluster_name, messages)
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
            cert_secret_ref=spec.cert_secret_ref,
            proxy_secret_ref=spec.proxy_secret_ref,
            insecure=spec.insecure,
            verify_secret_ref=verify.secret_ref,
            attestations=attestations,
            warnings=warnings + warned,
            limits=Limits(max_total_bytes=spec.max_size, max_files=spec.max_files, max_ratio=spec.max_ratio),
            allow_remote_bases=runner.allow_remote_bases,
            overlay=overlay,
            signed_repository=None
            if verify.signed_repository is None
            else registry.repository_name(verify.signed_repository, "spec.verify.signedRepository"),
            provider=spec.provider,
            identity_account=(spec.service_account_name or runner.default_service_account)
            if spec.provider != "generic"
            else None,
            layout_root=layout.root if isinstance(layout, layoutroots.Allowed) else None,
            layout_setting=layout.setting if isinstance(layout, layoutroots.Allowed) else "",
        ),
        namespace=spec.namespace or runner.namespace,
        target_namespace=spec.target_namespace,
        prune=spec.prune,
        wait=spec.wait,
        timeout=spec.timeout,
        force=spec.force,
        dry_run=dry_run,
        prune_options=prune_plan.PruneOptions(
            max_share=spec.max_prune_share, allow_mass_prune=spec.allow_mass_prune, prune_crds=spec.prune_crds
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


def _health_exprs(sync: SyncEntry, messages: list[str]) -> health_exprs.CustomHealth | None:
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
    return None if errors else health_exprs.compile_all(specs, engine=pool.shared())


def _ignore_rules(sync: SyncEntry, messages: list[str]) -> tuple[ignore.Rule, ...]:
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


def _build_pins(fields: Verify | AttestationRequirement) -> BuildClaims:
    """The source/build extension fields (``sourceRepositoryURI``...) as the policy's pins."""
    return BuildClaims(**{c.attribute: getattr(fields, c.attribute) for c in buildclaims.CLAIMS})


def _attestations(
    sync: SyncEntry, own_cluster: str, messages: list[str]
) -> tuple[tuple[source.AttestationSpec, ...], tuple[str, ...]]:
    """``spec.verify.attestations``: each names exactly one of key, secretRef and a keyless
    identity; a key file is read now; a quorum must be reachable (``_quorum``). Also the
    warnings about the keyless policies."""
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
            build=_build_pins(item),
            trusted_root=Path(spec.verify.trusted_root) if spec.verify.trusted_root else None,
        )
        if [item.key is not None, item.secret_ref is not None, keyless.keyless].count(True) != 1:
            messages.append(
                f"{where}: {field} needs exactly one of key, secretRef (the attester's public key) "
                "and identity/issuer (keyless)"
            )
            continue
        healthy = item.predicate_type == source.AttestationSpec.predicate_type
        if healthy and not item.cluster and not item.clusters:
            messages.append(
                f"{where}: spec.verify.attestations[{number}].cluster is required for health attestations "
                "(the attesting Runner's clusterName), or clusters for a quorum"
            )
        if healthy and item.cluster and item.cluster == own_cluster:
            messages.append(
                f"{sync.where(('spec', 'verify', 'attestations', number, 'cluster'))}: {field}.cluster: "
                f"{own_cluster} is this Runner's own clusterName, which attests only after it applied: "
                "name the cluster of an earlier stage"
            )
        min_clusters = _quorum(sync, number, own_cluster, healthy=healthy, messages=messages)
        shared_key = item.key is not None and item.bind_keys_to_clusters is False
        if item.bind_keys_to_clusters is not None and item.secret_ref is None and not shared_key:
            messages.append(
                f"{sync.where(('spec', 'verify', 'attestations', number, 'bindKeysToClusters'))}: "
                f"{field}.bindKeysToClusters applies to secretRef, a Secret whose entries "
                "<clusterName>.pub bind each key to its cluster: put the attesters' keys in one "
                "(with key, only false is said: one key shared by the clusters)"
            )
        if item.clusters and item.key is not None and not shared_key:
            one_key = (
                f"a quorum checked against one key (key) trusts it for every cluster of "
                f"{', '.join(item.clusters)}: any runner holding it can attest healthy as all of them; "
                "give each runner its own key, in a Secret of <clusterName>.pub entries (secretRef)"
            )
            if min_clusters > 1:  # one key would make the quorum alone: refused unless said
                messages.append(
                    f"{where}: {field}: {one_key}, or set bindKeysToClusters: false to accept one key "
                    "shared by the stage's runners"
                )
            else:
                warnings.append(f"{where}: {field}: {one_key}")
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
                clusters=item.clusters,
                min_clusters=min_clusters,
                max_failures=item.max_failures,
                own_cluster=own_cluster,
                bind_keys=item.bind_keys_to_clusters,
            )
        )
    return tuple(found), tuple(warnings)


def _quorum(sync: SyncEntry, number: int, own_cluster: str, *, healthy: bool, messages: list[str]) -> int:
    """``clusters``, ``minClusters`` and ``maxFailures`` of attestations[number], checked: only
    for health attestations, instead of ``cluster``, each entry able to match a clusterName,
    ``minClusters`` set with a pattern and no more than the names listed (less this Runner's
    own, which never counts). Returns ``minClusters`` (default: every name listed)."""
    from lockgate.signing import quorum

    item = sync.value.spec.verify.attestations[number]
    field = f"spec.verify.attestations[{number}]"

    def refuse(name: str, why: str, index: int | None = None) -> None:
        at = sync.where(
            ("spec", "verify", "attestations", number, name, *(() if index is None else (index,)))
        )
        messages.append(f"{at}: {field}.{name}{'' if index is None else f'[{index}]'}: {why}")

    if not item.clusters:
        for name, value in (("minClusters", item.min_clusters), ("maxFailures", item.max_failures or None)):
            if value is not None:
                refuse(name, "applies to a quorum: list the clusters in clusters")
        return 0
    if not healthy:
        refuse("clusters", "a quorum applies to health attestations only (no predicateType)")
    if item.cluster:
        refuse("clusters", "set cluster (one cluster) or clusters (a quorum), not both")
    for index, entry in enumerate(item.clusters):
        if not entry or any(c == "/" or c.isspace() for c in entry):
            refuse("clusters", f"{entry!r} can never match a clusterName (no '/', no spaces)", index)
    selection = quorum.Selection(item.clusters, own=own_cluster)
    listed = len(selection.names)
    own = f" ({own_cluster} is this Runner's own clusterName, which never counts)"
    own = own if own_cluster in item.clusters else ""
    if not selection.closed:
        if item.min_clusters is None:
            refuse(
                "minClusters", f"set how many of {selection} must attest healthy (clusters holds a pattern)"
            )
        return item.min_clusters or 0
    if item.min_clusters is not None and item.min_clusters > listed:
        refuse(
            "minClusters",
            f"{item.min_clusters} is more than the {listed} cluster(s) listed{own}: it could never be met",
        )
    elif listed == 0:
        refuse("clusters", f"lists no cluster but this Runner's own{own}")
    return listed if item.min_clusters is None else item.min_clusters


def _providers(
    sync: SyncEntry, runner: RunnerSettings, messages: list[str]
) -> tuple[notifications.Provider, ...]:
    """The sync's own providers, then the Runner's (their Secrets in the Runner's namespace)."""
    name = sync.value.metadata.name
    own = [
        (n, None, f"{sync.where(('spec', 'notify', i))}: spec.notify[{i}]", f"spec.notify[{i}]")
        for i, n in enumerate(sync.value.spec.notify)
    ]
    shared = [
        (n, runner.namespace, f"Runner: spec.notify[{i}]", f"Runner: spec.notify[{i}]")
        for i, n in enumerate(runner.notify)
    ]
    providers = []
    for notify, secret_namespace, where, label in [*own, *shared]:
        problem = _notify_problem(notify)
        if problem:
            messages.append(f"{where}: {problem}")
            continue
        pinned = None
        if notify.type in notifications.FORGE_TYPES:
            try:
                pinned = forge.pin(
                    remote.forge_name(notify.type), address=notify.address, api_url=notify.api_url
                )
            except destination.PinError as exc:
                messages.append(f"{where}: {exc}")
                continue
        providers.append(
            notifications.Provider(
                type=notify.type,
                address=notify.address,
                secret_ref=notify.secret_ref,
                secret_namespace=secret_namespace,
                pin=pinned,
                where=label,
                context=notifications.context_for(notify.context, cluster=runner.cluster_name, sync=name),
                target_url=notify.target_url,
                cert_secret_ref=notify.cert_secret_ref,
                events=_event_filter(notify),
            )
        )
    return tuple(providers)


def _event_filter(notify: Notify) -> eventfilter.EventFilter:
    return eventfilter.EventFilter(notify.event_severity, notify.inclusion_list, notify.exclusion_list)


def _notify_problem(notify: Notify) -> str:
    if notify.type in notifications.FORGE_TYPES and notify.secret_ref is None:
        entries = "'username' and 'password' entries" if notify.type == "bitbucketserver" else ""
        what = f"'token' entry (or {entries})" if entries else "'token' entry"
        return f"a {notify.type} provider needs secretRef, a Secret whose {what} is the token"
    if notify.type not in notifications.FORGE_TYPES and notify.address is None and notify.secret_ref is None:
        return f"a {notify.type} provider needs address, or secretRef to a Secret with an 'address' entry"
    events = _event_filter(notify)
    if events.filters and notify.type not in eventfilter.EVENT_PROVIDERS:
        return (
            f"eventSeverity, inclusionList and exclusionList filter events; a {notify.type} provider "
            "posts every pass's commit status: remove them"
        )
    return "; ".join(eventfilter.problems(events))
