"""Alerts and their Providers (``notification.toolkit.fluxcd.io/v1beta3``) as ``notify`` entries.

Pure. Each Alert becomes one ``notify`` entry on every sync its event sources name (a ``*``
source is every imported Kustomization of the namespace its ``matchLabels`` select). A forge
Provider posts commit statuses: Flux names them ``<kind>/<name>/<first segment of the
Provider's UID>`` in lower case (notification-controller ``generateDefaultCommitStatus``),
and branch protection requires that exact name, so the entry's ``context`` is written
literally (lockgate's template has no ``{cluster}``/``{sync}`` in it then). A file holds no
UID: from files the context is said in the report, to be set by hand or by importing from
the cluster. The Provider's ``address`` (the repository its token is for) is carried as
``address``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.plan.fluximport.objects import FluxObject, ref_name
from runner.plan.fluximport.report import Report, RowClass

FORGES = frozenset({"github", "gitlab", "gitea", "bitbucket", "bitbucketserver", "azuredevops"})
EVENTS = frozenset({"generic", "generic-hmac", "slack", "msteams", "alertmanager"})
#: the REST API root of a forge at a host (lockgate's apiURL), when it is not the default
_API_ROOTS: dict[str, Callable[[str], str]] = {
    "github": lambda root: f"{root}/api/v3",
    "gitlab": lambda root: f"{root}/api/v4",
    "gitea": lambda root: f"{root}/api/v1",
    "bitbucketserver": lambda root: f"{root}/rest/api/latest",
}
#: the host of an http(s) URL (no ``urllib`` in the pure layer)
_HOST = re.compile(r"^(?P<scheme>https?)://(?:[^@/]*@)?(?P<host>[^:/?#]+)(?P<port>:[0-9]+)?")
_DEFAULT_HOSTS = {"github": "github.com", "bitbucket": "bitbucket.org", "azuredevops": "dev.azure.com"}


@dataclass(frozen=True)
class Imported:
    """A Kustomization imported as a sync: what an Alert's event sources are matched against."""

    namespace: str
    name: str
    sync: str
    labels: Mapping[str, str]
    #: the OCIRepository it reads: (namespace, name)
    source: tuple[str, str]


@dataclass
class Notifications:
    #: sync name -> its notify entries, in a stable order
    by_sync: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: Secrets the entries name: (namespace, field, object, name)
    secrets: list[tuple[str, str, str, str]] = field(default_factory=list)


def context_of(provider: FluxObject, kind: str, name: str) -> str:
    return f"{kind}/{name}/{provider.uid.split('-')[0]}".lower()


def _api_url(kind: str, address: str) -> str | None:
    found = _HOST.match(address)
    if found is None or kind not in _API_ROOTS or found["host"].lower() == _DEFAULT_HOSTS.get(kind):
        return None
    return _API_ROOTS[kind](f"{found['scheme']}://{found['host'].lower()}{found['port'] or ''}")


def _provider_entry(provider: FluxObject, report: Report, out: Notifications) -> dict[str, Any] | None:
    """The provider's part of a notify entry; None when it is not carried."""
    spec = provider.spec
    kind = str(spec.get("type", ""))
    if spec.get("suspend"):
        report.add(provider.ref, "spec.suspend", RowClass.DROPPED, "suspended: its alerts are not carried")
        return None
    if kind not in FORGES | EVENTS:
        report.add(
            provider.ref,
            "spec.type",
            RowClass.UNSUPPORTED,
            f"{kind!r}: lockgate notifies {', '.join(sorted(FORGES | EVENTS))}; its alerts are not carried",
        )
        return None
    if spec.get("commitStatusExpr"):
        report.add(
            provider.ref,
            "spec.commitStatusExpr",
            RowClass.UNSUPPORTED,
            "a CEL commit status name: lockgate's context is a fixed string per sync; its alerts are not "
            "carried",
        )
        return None
    entry: dict[str, Any] = {"type": "generic" if kind == "generic-hmac" else kind}
    address = str(spec.get("address") or "")
    if address:
        entry["address"] = address
        api = _api_url(kind, address) if kind in FORGES else None
        if api:
            entry["apiURL"] = api
    for name in ("secretRef", "certSecretRef"):
        secret = ref_name(spec.get(name))
        if secret:
            entry[name] = {"name": secret}
            out.secrets.append((provider.namespace, f"spec.{name}", provider.ref, secret))
    if kind == "generic" and entry.get("secretRef"):
        report.add(
            provider.ref,
            "spec.secretRef",
            RowClass.SEMANTIC,
            "lockgate's generic provider reads the Secret's address entry and signs with its token entry "
            "(X-Signature, as generic-hmac); a headers entry is not sent",
        )
    if kind == "alertmanager":
        report.add(
            provider.ref,
            "spec.type",
            RowClass.SEMANTIC,
            "lockgate fires one alert while a sync fails and resolves it when the sync recovers, instead of "
            "one alert per event",
        )
    if kind == "azuredevops":
        entry["genre"] = "fluxcd"  # Flux's status context is {genre: fluxcd, name: ...}
    for name, why in (
        ("channel", "Slack and Teams webhooks post to the channel they were made for"),
        ("username", "Slack and Teams webhooks post as the name they were made with"),
        ("timeout", "lockgate's delivery has its own timeouts and retries"),
        ("proxy", "lockgate posts directly or through HTTPS_PROXY"),
        ("proxySecretRef", "lockgate posts directly or through HTTPS_PROXY"),
        ("serviceAccountName", "a token from a ServiceAccount (workload identity) is not supported"),
    ):
        if spec.get(name):
            report.add(provider.ref, f"spec.{name}", RowClass.DROPPED, why)
    return entry


def _sources(alert: FluxObject, report: Report, imported: Sequence[Imported], forge: bool) -> list[Imported]:
    found: list[Imported] = []
    for index, source in enumerate(alert.spec.get("eventSources") or []):
        kind, name = str(source.get("kind", "")), str(source.get("name", ""))
        namespace = str(source.get("namespace") or alert.namespace)
        labels = source.get("matchLabels") or {}
        where = f"spec.eventSources[{index}]"
        if kind == "Kustomization":
            hits = [
                i
                for i in imported
                if i.namespace == namespace
                and (name == "*" or i.name == name)
                and all(i.labels.get(k) == str(v) for k, v in labels.items())
            ]
            if not hits and name != "*":
                report.add(
                    alert.ref, where, RowClass.DROPPED, f"Kustomization {namespace}/{name} is not imported"
                )
            found += hits
        elif kind == "OCIRepository" and not forge:
            hits = [i for i in imported if i.source[0] == namespace and (name == "*" or i.source[1] == name)]
            report.add(
                alert.ref,
                where,
                RowClass.SEMANTIC,
                f"OCIRepository {namespace}/{name}: lockgate tells each pass of the syncs reading it "
                "(fetch, verify and apply), not the fetch alone",
            )
            found += hits
        else:
            report.add(
                alert.ref,
                where,
                RowClass.DROPPED,
                f"{kind} events: lockgate tells the passes of its syncs only",
            )
    unique = {(i.namespace, i.name): i for i in found}
    return [unique[k] for k in sorted(unique)]


def map_alerts(
    alerts: Sequence[FluxObject],
    providers: Mapping[tuple[str, str], FluxObject],
    imported: Sequence[Imported],
    report: Report,
) -> Notifications:
    out = Notifications()
    entries: dict[tuple[str, str], dict[str, Any] | None] = {}
    for alert in sorted(alerts, key=lambda a: a.key):
        if alert.spec.get("suspend"):
            report.add(alert.ref, "spec.suspend", RowClass.DROPPED, "suspended: not carried")
            continue
        provider_name = ref_name(alert.spec.get("providerRef")) or ""
        provider = providers.get((alert.namespace, provider_name))
        if provider is None:
            report.add(
                alert.ref,
                "spec.providerRef",
                RowClass.DROPPED,
                f"Provider {alert.namespace}/{provider_name} not found",
            )
            continue
        if provider.key[1:] not in entries:
            entries[provider.key[1:]] = _provider_entry(provider, report, out)
        base = entries[provider.key[1:]]
        if base is None:
            continue
        forge = str(provider.spec.get("type")) in FORGES
        severity = str(alert.spec.get("eventSeverity") or "info")
        inclusion = [str(x) for x in alert.spec.get("inclusionList") or []]
        exclusion = [str(x) for x in alert.spec.get("exclusionList") or []]
        if forge and (severity != "info" or inclusion or exclusion):
            report.add(
                alert.ref,
                "spec.eventSeverity",
                RowClass.SEMANTIC,
                "a commit status is posted for every pass: the event filters do not apply to it",
            )
        for name in ("eventMetadata", "summary"):
            if alert.spec.get(name):
                report.add(
                    alert.ref, f"spec.{name}", RowClass.DROPPED, "lockgate's events carry no extra metadata"
                )
        targets = _sources(alert, report, imported, forge)
        if forge and targets and not provider.uid:
            report.add(
                alert.ref,
                "spec.providerRef",
                RowClass.SEMANTIC,
                f"Flux's commit status context is kustomization/NAME/<first segment of Provider "
                f"{provider.namespace}/{provider.name}'s UID>, which a file does not hold: import "
                "--from-cluster writes it, or set context on each notify entry (a required status check "
                "names it)",
            )
        for target in targets:
            entry = dict(base)
            if forge and provider.uid:
                entry["context"] = context_of(provider, "Kustomization", target.name)
            if not forge:
                if severity != "info":
                    entry["eventSeverity"] = severity
                if inclusion:
                    entry["inclusionList"] = inclusion
                if exclusion:
                    entry["exclusionList"] = exclusion
            listed = out.by_sync.setdefault(target.sync, [])
            if entry not in listed:
                listed.append(entry)
    return out
