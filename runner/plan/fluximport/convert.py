"""Flux objects in, a lockgate config, an images config and a report out: ``lockgate import``.

Pure. Each Kustomization of an OCIRepository becomes a Sync named as ``naming`` decides,
annotated ``lockgate.dev/flux-kustomization: NAMESPACE/NAME`` (what ``lockgate adopt``
follows back to the Kustomization and its inventory); the kustomize-controller's flags and
the Receivers become the Runner document; Alerts become the syncs' ``notify`` entries. A
Secret, ConfigMap or ServiceAccount a Flux object names in its own namespace is read by
lockgate from the runner namespace: each one is a row saying where to copy it. The output
depends only on the objects and the options (sorted, no time), so two runs are byte-equal
and the cluster and the files give the same config for the same objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.plan.fluximport import alerts, controller, images, naming, receivers, render, replacements, source
from runner.plan.fluximport.kustomization import map_kustomization
from runner.plan.fluximport.objects import API_VERSION_SYNC, KUSTOMIZE, FluxObject, get
from runner.plan.fluximport.report import Report, RowClass

#: the Sync annotation naming the Kustomization it came from (``lockgate adopt`` reads it)
FROM_KUSTOMIZATION = "lockgate.dev/flux-kustomization"
SOURCE_KINDS = ("OCIRepository", "GitRepository", "Bucket", "HelmRepository", "HelmChart", "ExternalArtifact")
NOTIFICATION_KINDS = ("Alert", "Provider", "Receiver")


@dataclass(frozen=True)
class ImportOptions:
    #: where lockgate's runner keeps its inventories and reads the Secrets syncs name
    runner_namespace: str = "lockgate-system"
    #: write ``verify.insecureSkip`` for OCIRepositories without ``verify`` (else they are refused)
    allow_unsigned: bool = False
    #: ``--rename NAMESPACE/NAME=SYNC``
    renames: Mapping[tuple[str, str], str] = field(default_factory=dict)
    #: where the replacements' artifacts go (``oci://REGISTRY/PATH``)
    artifact_prefix: str = "oci://REGISTRY/fleet"


@dataclass
class Imported:
    config: str
    #: the ``lockgate images`` config ("" : no image automation)
    images: str
    report: Report
    #: OCIRepositories without ``verify`` (refused unless ``allow_unsigned``)
    unsigned: list[str]


def _references(
    items: Iterable[tuple[str, str, str, str, str]], runner_namespace: str, report: Report
) -> None:
    """(namespace, kind, field, object, name): a row for each one outside the runner namespace."""
    for namespace, kind, where, obj, name in items:
        if namespace == runner_namespace:
            continue
        verb = "impersonated" if kind == "ServiceAccount" else "read"
        todo = "create it there with the same RBAC" if kind == "ServiceAccount" else "copy it there"
        report.add(
            obj,
            where,
            RowClass.SEMANTIC,
            f"{kind} {name} is {verb} in the runner namespace {runner_namespace}, not {namespace}: {todo}",
        )


def _controller(objects: Sequence[FluxObject]) -> FluxObject | None:
    for obj in objects:
        if obj.kind == "Deployment" and obj.name == controller.DEPLOYMENT:
            return obj
    return None


def convert(objects: Sequence[FluxObject], options: ImportOptions = ImportOptions()) -> Imported:
    report = Report()
    by_kind: dict[str, list[FluxObject]] = {}
    for obj in sorted(objects, key=lambda o: (o.kind, o.namespace, o.name)):
        by_kind.setdefault(obj.kind, []).append(obj)
    sources = {o.key: o for kind in SOURCE_KINDS for o in by_kind.get(kind, [])}
    kustomizations = [o for o in by_kind.get("Kustomization", []) if o.group == KUSTOMIZE]
    releases = by_kind.get("HelmRelease", [])
    named = [naming.Named("Kustomization", k.namespace, k.name) for k in kustomizations]
    named += [naming.Named("HelmRelease", r.namespace, r.name) for r in releases]
    names = naming.assign(named, report, renames=options.renames)

    def sync_of(namespace: str, name: str) -> str | None:
        return names.get(naming.Named("Kustomization", namespace, name)) or names.get(
            naming.Named("HelmRelease", namespace, name)
        )

    used: set[tuple[str, str, str]] = set()
    syncs: list[tuple[FluxObject, FluxObject, dict[str, Any]]] = []
    unsigned: list[str] = []
    refs: list[tuple[str, str, str, str, str]] = []
    for ks in kustomizations:
        sync = names[naming.Named("Kustomization", ks.namespace, ks.name)]
        kind = str(get(ks.spec, "sourceRef", "kind") or "")
        src_key = (
            kind,
            str(get(ks.spec, "sourceRef", "namespace") or ks.namespace),
            str(get(ks.spec, "sourceRef", "name")),
        )
        used.add(src_key)
        src = sources.get(src_key)
        if kind != "OCIRepository":
            report.replacements.append(
                replacements.git_source(
                    ks, src, report, sync=sync, prefix=options.artifact_prefix, sync_of=sync_of
                )
            )
            continue
        if src is None:
            report.add(
                ks.ref,
                "spec.sourceRef",
                RowClass.UNSUPPORTED,
                f"OCIRepository {src_key[1]}/{src_key[2]} not found",
            )
            continue
        mapped = source.map_source(src, report, allow_unsigned=options.allow_unsigned)
        applied = map_kustomization(ks, report, sync_of=sync_of)
        if mapped.unsupported:
            report.add(
                src.ref, "spec", RowClass.UNSUPPORTED, f"{mapped.unsupported}; {ks.ref} is not carried"
            )
            continue
        if applied.unsupported:
            report.add(ks.ref, "spec", RowClass.UNSUPPORTED, f"{applied.unsupported}; not carried")
            continue
        if mapped.unsigned and not options.allow_unsigned:
            unsigned.append(f"{src.ref} (read by {ks.ref})")
        refs += [(src.namespace, "Secret", f, src.ref, n) for f, n in mapped.secrets.items()]
        refs += [(ks.namespace, kind, f, ks.ref, n) for (kind, f), n in applied.references.items()]
        spec = {**mapped.spec, **applied.spec}
        if mapped.spec.get("suspend") or applied.spec.get("suspend"):
            spec["suspend"] = True
        syncs.append((ks, src, spec))
        report.syncs[sync] = f"{ks.ref}, {src.ref}"
    imported = [
        alerts.Imported(
            ks.namespace,
            ks.name,
            names[naming.Named("Kustomization", ks.namespace, ks.name)],
            ks.labels,
            (src.namespace, src.name),
        )
        for ks, src, _ in syncs
    ]
    providers = {(p.namespace, p.name): p for p in by_kind.get("Provider", [])}
    notes = alerts.map_alerts(by_kind.get("Alert", []), providers, imported, report)
    hooks = receivers.map_receivers(by_kind.get("Receiver", []), imported, report)
    refs += [(ns, "Secret", f, o, n) for ns, f, o, n in [*notes.secrets, *hooks.secrets]]
    for release in releases:
        chart_ref = release.spec.get("chartRef") or {}
        if chart_ref:
            used.add(
                (
                    str(chart_ref.get("kind")),
                    str(chart_ref.get("namespace") or release.namespace),
                    str(chart_ref.get("name")),
                )
            )
        chart_source = get(release.spec, "chart", "spec", "sourceRef") or {}
        if chart_source:
            used.add(
                (
                    str(chart_source.get("kind")),
                    str(chart_source.get("namespace") or release.namespace),
                    str(chart_source.get("name")),
                )
            )
        sync = names[naming.Named("HelmRelease", release.namespace, release.name)]
        report.replacements.append(
            replacements.helm_release(
                release, sources, report, sync=sync, prefix=options.artifact_prefix, sync_of=sync_of
            )
        )
    for key, obj in sorted(sources.items()):
        if key not in used and obj.kind != "HelmChart":
            report.add(obj.ref, "spec", RowClass.DROPPED, "read by no imported Kustomization or HelmRelease")
    handled = {
        "Kustomization",
        "HelmRelease",
        "Deployment",
        *SOURCE_KINDS,
        *NOTIFICATION_KINDS,
        *images.KINDS,
    }
    for kind in sorted(set(by_kind) - handled):
        for obj in by_kind[kind]:
            report.add(obj.ref, "kind", RowClass.UNSUPPORTED, f"{kind} objects are not carried")
    _references(refs, options.runner_namespace, report)
    runner_spec: dict[str, Any] = {"namespace": options.runner_namespace}
    runner_spec.update(controller.runner_settings(_controller(by_kind.get("Deployment", [])), report))
    if hooks.entries:
        runner_spec["receivers"] = hooks.entries
    docs = [
        render.Document(
            {
                "apiVersion": API_VERSION_SYNC,
                "kind": "Runner",
                "metadata": {"name": "lockgate"},
                "spec": runner_spec,
            },
            ("the runner's settings, from kustomize-controller's flags and the Receivers",),
        )
    ]
    for ks, src, spec in syncs:
        sync = names[naming.Named("Kustomization", ks.namespace, ks.name)]
        notify = notes.by_sync.get(sync)
        if notify:
            spec["notify"] = notify
        metadata = {"name": sync, "annotations": {FROM_KUSTOMIZATION: f"{ks.namespace}/{ks.name}"}}
        docs.append(
            render.Document(
                {
                    "apiVersion": API_VERSION_SYNC,
                    "kind": "Sync",
                    "metadata": metadata,
                    "spec": render.ordered(spec),
                },
                (f"from {ks.ref} and {src.ref}",),
            )
        )
    header = (
        "lockgate config imported from Flux by lockgate import: review the report before lockgate adopt",
        "(docs/migrate-from-flux.md)",
    )
    automation = images.map_images(
        by_kind.get("ImageRepository", [])
        + by_kind.get("ImagePolicy", [])
        + by_kind.get("ImageUpdateAutomation", []),
        report,
    )
    if automation is not None:
        report.workflow = automation.workflow
    return Imported(
        config=render.documents(docs, header=header),
        images=automation.config if automation else "",
        report=report.sorted(),
        unsigned=sorted(unsigned),
    )
