"""What replaces the Flux objects a Sync cannot read: Kustomizations of a GitRepository or
Bucket, and HelmReleases (``helm.toolkit.fluxcd.io/v2``).

Pure. A Sync applies a signed OCI artifact; what Flux builds in the cluster from Git or from
a chart is built in CI instead: ``lockgate push`` of the Kustomization's path, or ``helm
pull`` then ``lockgate push --render`` of the chart with the release's name, namespace and
values. The replacement says the commands, the values file, and the Sync that then applies
the artifact. A ``valuesFrom`` entry with a ``targetPath`` is carried as a ``--set`` of a
``${VAR}`` that the Sync's ``postBuild.substituteFrom`` fills from the same ConfigMap or
Secret at apply time (the value never enters the artifact); a whole values document from a
ConfigMap or Secret cannot be (it is read in CI). What Helm in the cluster did that a
rendered artifact does not — post-renderers before install, remediation, ``helm list`` —
is said in the replacement's notes and the report.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from runner.plan.fluximport import render
from runner.plan.fluximport.kustomization import map_kustomization
from runner.plan.fluximport.objects import API_VERSION_SYNC, FluxObject, format_duration, get, parse_duration
from runner.plan.fluximport.report import Replacement, Report, RowClass

_VAR = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
#: what a keyless policy must be filled in with (the workflow that pushes)
VERIFY_PLACEHOLDER = {
    "issuer": "https://token.actions.githubusercontent.com",
    "identity": "https://github.com/OWNER/REPO/.github/workflows/publish.yml@refs/heads/main",
}
HELM_DEFAULT_TIMEOUT = 300.0


def _sync(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION_SYNC,
        "kind": "Sync",
        "metadata": {"name": name},
        "spec": render.ordered(spec),
    }


def git_source(
    ks: FluxObject,
    source: FluxObject | None,
    report: Report,
    *,
    sync: str,
    prefix: str,
    sync_of: Callable[[str, str], str | None],
) -> Replacement:
    """A Kustomization of a GitRepository, Bucket or ExternalArtifact: push its path in CI."""
    kind = str(get(ks.spec, "sourceRef", "kind"))
    origin = f"{kind} {source.namespace}/{source.name}" if source else f"{kind} (not found)"
    report.add(
        ks.ref,
        "spec.sourceRef",
        RowClass.UNSUPPORTED,
        f"{origin}: a Sync applies signed OCI artifacts; push the path from CI instead (the "
        "replacement below)",
    )
    scratch = Report()  # the Sync's own rows belong to the replacement, said once on the Kustomization
    applied = map_kustomization(ks, scratch, sync_of=sync_of)
    path = applied.spec.pop("path", None) or "."
    url = f"{prefix}/{sync}:latest"
    interval = parse_duration(str(ks.spec.get("interval", ""))) or 600.0
    spec = {
        "url": url,
        "interval": format_duration(min(interval, 300.0)),
        "verify": dict(VERIFY_PLACEHOLDER),
        **applied.spec,
    }
    checkout = ""
    if source is not None and source.kind == "GitRepository":
        ref = source.spec.get("ref") or {}
        branch = ref.get("branch") or ref.get("tag") or ref.get("name") or "main"
        checkout = f"in the CI of {source.spec.get('url', 'the repository')} (ref {branch}): "
    return Replacement(
        object=ks.ref,
        commands=(f"{checkout}lockgate push {shlex.quote(path)} {url} --sign keyless",),
        sync=_sync(sync, spec),
        notes=("verify names the workflow that pushes: fill in its repository and ref",),
    )


def _chart_commands(hr: FluxObject, sources: Mapping[tuple[str, str, str], FluxObject]) -> tuple[str, str]:
    """The command that fetches the chart, and the chart directory it leaves."""
    chart_ref = hr.spec.get("chartRef")
    if isinstance(chart_ref, Mapping):
        kind, name = str(chart_ref.get("kind", "")), str(chart_ref.get("name", ""))
        ns = str(chart_ref.get("namespace") or hr.namespace)
        source = sources.get((kind, ns, name))
        if kind == "OCIRepository" and source is not None:
            url = str(source.spec.get("url", ""))
            version = get(source.spec, "ref", "tag") or get(source.spec, "ref", "semver") or ""
            chart = url.rstrip("/").rsplit("/", 1)[-1]
            flag = f" --version {shlex.quote(str(version))}" if version else ""
            return f"helm pull {url}{flag} --untar --untardir charts", f"charts/{chart}"
        return f"# fetch the chart of {kind} {ns}/{name} into charts/{name}", f"charts/{name}"
    chart = str(get(hr.spec, "chart", "spec", "chart") or hr.name)
    version = get(hr.spec, "chart", "spec", "version")
    ref = get(hr.spec, "chart", "spec", "sourceRef") or {}
    kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
    ns = str(ref.get("namespace") or hr.namespace)
    source = sources.get((kind, ns, name))
    flag = f" --version {shlex.quote(str(version))}" if version and version != "*" else ""
    if kind == "HelmRepository" and source is not None:
        url = str(source.spec.get("url", "")).rstrip("/")
        if source.spec.get("type") == "oci" or url.startswith("oci://"):
            return f"helm pull {url}/{chart}{flag} --untar --untardir charts", f"charts/{chart}"
        return f"helm pull {chart} --repo {url}{flag} --untar --untardir charts", f"charts/{chart}"
    if kind in ("GitRepository", "Bucket") and source is not None:
        return f"# the chart is {chart} in {kind} {ns}/{name}: check it out in CI", chart
    return f"# fetch chart {chart} of {kind} {ns}/{name} into charts/{chart}", f"charts/{chart}"


def helm_release(
    hr: FluxObject,
    sources: Mapping[tuple[str, str, str], FluxObject],
    report: Report,
    *,
    sync: str,
    prefix: str,
    sync_of: Callable[[str, str], str | None],
) -> Replacement:
    spec = hr.spec
    report.add(
        hr.ref,
        "spec",
        RowClass.UNSUPPORTED,
        "a HelmRelease is rendered in CI (lockgate push --render) and applied as a Sync: the replacement "
        "below",
    )
    notes: list[str] = [
        "helm list, helm history and tools reading Helm's release Secrets see no release: lockgate status "
        "shows the sync's revisions",
    ]
    fetch, chart_dir = _chart_commands(hr, sources)
    release = str(spec.get("releaseName") or "")
    target = str(spec.get("targetNamespace") or "")
    release = release or (f"{target}-{hr.name}" if target else hr.name)
    namespace = target or hr.namespace
    values_file = f"{sync}-values.yaml"
    url = f"{prefix}/helm/{sync}:latest"
    push = [
        "lockgate",
        "push",
        chart_dir,
        url,
        "--render",
        "--release-name",
        release,
        "--namespace",
        namespace,
    ]
    if isinstance(spec.get("values"), Mapping) and spec["values"]:
        push += ["--values", values_file]
    sync_spec: dict[str, Any] = {"url": url}
    interval = parse_duration(str(spec.get("interval", ""))) or 600.0
    sync_spec["interval"] = format_duration(min(interval, 300.0))
    sync_spec["verify"] = dict(VERIFY_PLACEHOLDER)
    sync_spec["prune"] = True
    wait = not get(spec, "install", "disableWait") and not get(spec, "upgrade", "disableWait")
    if wait:
        sync_spec["wait"] = True
    timeout = parse_duration(str(spec.get("timeout", ""))) or HELM_DEFAULT_TIMEOUT
    sync_spec["timeout"] = format_duration(timeout)
    substitute_from: list[dict[str, Any]] = []
    for index, ref in enumerate(spec.get("valuesFrom") or []):
        kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
        key = str(ref.get("valuesKey") or "values.yaml")
        path = ref.get("targetPath")
        where = f"spec.valuesFrom[{index}]"
        if path and _VAR.match(key):
            push += ["--set", f"{path}=${{{key}}}"]
            entry: dict[str, Any] = {"kind": kind, "name": name}
            if ref.get("optional"):
                entry["optional"] = True
            if entry not in substitute_from:
                substitute_from.append(entry)
            report.add(
                hr.ref,
                where,
                RowClass.SEMANTIC,
                f"{kind} {hr.namespace}/{name} key {key}: rendered as ${{{key}}} at {path} and substituted "
                "at apply (postBuild.substituteFrom); a template that transforms the value (b64enc, quote, "
                "toYaml) sees ${...} instead",
            )
        else:
            report.add(
                hr.ref,
                where,
                RowClass.DROPPED,
                f"{kind} {hr.namespace}/{name} key {key}: a values document from the cluster cannot be "
                "rendered in CI; put the values in the repository (encrypted with SOPS if secret)",
            )
    if substitute_from:
        sync_spec["postBuild"] = {"substituteFrom": substitute_from}
    patches: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    for renderer in spec.get("postRenderers") or []:
        kustomize = renderer.get("kustomize") or {}
        patches += [dict(p) for p in kustomize.get("patches") or []]
        images += [dict(i) for i in kustomize.get("images") or []]
    if patches or images:
        if patches:
            sync_spec["patches"] = patches
        if images:
            sync_spec["images"] = images
        report.add(
            hr.ref,
            "spec.postRenderers",
            RowClass.SEMANTIC,
            "carried as the Sync's patches and images: applied to the rendered objects at apply time, after "
            "Helm's hooks were planned, not by Helm before install",
        )
    for name, why in (
        ("install", "install remediation (retries, uninstall on failure): lockgate retries each interval"),
        ("upgrade", "upgrade remediation (retries, rollback): lockgate's is rollback: onHealthFailure"),
        ("rollback", "Helm rollback options: lockgate's rollback re-applies the last healthy digest"),
        ("uninstall", "uninstall options: deleting the Sync follows its deletionPolicy"),
        ("test", "Helm tests: push --render skips test hooks"),
        ("maxHistory", "lockgate keeps its own history of revisions"),
        ("storageNamespace", "no Helm release Secrets are written"),
        ("persistentClient", "no meaning for a rendered artifact"),
        ("kubeConfig", "lockgate applies to the cluster its runner runs in"),
    ):
        if spec.get(name):
            report.add(hr.ref, f"spec.{name}", RowClass.DROPPED, why)
    drift = get(spec, "driftDetection", "mode")
    if drift in ("enabled", "warn"):
        sync_spec["driftDetection"] = {"mode": "warn" if drift == "warn" else "enabled"}
    elif drift in (None, "disabled"):
        report.add(
            hr.ref,
            "spec.driftDetection",
            RowClass.SEMANTIC,
            "Helm leaves drift alone by default; a Sync corrects it (driftDetection.mode: enabled)",
        )
    deps = []
    for dep in spec.get("dependsOn") or []:
        target_sync = sync_of(str(dep.get("namespace") or hr.namespace), str(dep.get("name", "")))
        if target_sync:
            deps.append(target_sync)
    if deps:
        sync_spec["dependsOn"] = deps
    if spec.get("serviceAccountName"):
        sync_spec["serviceAccountName"] = str(spec["serviceAccountName"])
    if spec.get("suspend"):
        sync_spec["suspend"] = True
    notes.append(
        "a chart whose templates call lookup, or read .Capabilities, renders differently in CI: check it "
        "before moving it (docs/migrate-from-flux.md)"
    )
    commands = [fetch]
    if "--values" in push:
        commands.append(f"# write {values_file} (below), then")
    commands.append(" ".join(shlex.quote(p) if "$" in p else p for p in push) + " --sign keyless")
    files = {values_file: render.dump(dict(spec["values"]))} if "--values" in push else {}
    return Replacement(
        object=hr.ref, commands=tuple(commands), sync=_sync(sync, sync_spec), notes=tuple(notes), files=files
    )
