"""Alerts, Providers, Receivers, image automation and HelmReleases in ``lockgate import``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.plan.fluximport import alerts, convert, images
from tests.unit.runner.plan.fluximport.support import fleet, kustomization, objs, ocirepository
from tests.world import binaries

ROOT = Path(__file__).resolve().parents[5]
UID = "8d2a9f3c-1b2c-4d5e-8f90-a1b2c3d4e5f6"


def provider(kind: str, name: str = "p", uid: str = UID, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "notification.toolkit.fluxcd.io/v1beta3",
        "kind": "Provider",
        "metadata": {"name": name, "namespace": "flux-system", "uid": uid},
        "spec": {"type": kind, **spec},
    }


def alert(provider_name: str = "p", name: str = "a", **spec: Any) -> dict[str, Any]:
    body = {"providerRef": {"name": provider_name}, "eventSources": [{"kind": "Kustomization", "name": "*"}]}
    return {
        "apiVersion": "notification.toolkit.fluxcd.io/v1beta3",
        "kind": "Alert",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {**body, **spec},
    }


def _sync_specs(result: convert.Imported) -> dict[str, dict[str, Any]]:
    return {
        d["metadata"]["name"]: d["spec"] for d in yaml.safe_load_all(result.config) if d["kind"] == "Sync"
    }


def test_a_github_alert_keeps_flux_s_exact_commit_status_context() -> None:
    docs = objs(
        ocirepository("web"), kustomization("web"), ocirepository("API"), kustomization("API"),
        provider("github", address="https://github.com/acme/app", secretRef={"name": "gh"}),
        alert(),
    )  # fmt: skip
    specs = _sync_specs(convert.convert(docs))
    assert specs["web"]["notify"] == [
        {
            "type": "github",
            "address": "https://github.com/acme/app",
            "secretRef": {"name": "gh"},
            "context": "kustomization/web/8d2a9f3c",
        }
    ]
    # lower case, as notification-controller writes it, whatever the sync was renamed to
    assert specs["api"]["notify"][0]["context"] == "kustomization/api/8d2a9f3c"
    assert alerts.context_of(docs[4], "Kustomization", "API") == "kustomization/api/8d2a9f3c"


@pytest.mark.parametrize(
    ("kind", "address", "api"),
    [
        ("github", "https://github.com/acme/app", None),
        ("github", "https://ghe.acme.example/acme/app", "https://ghe.acme.example/api/v3"),
        ("gitlab", "https://gitlab.acme.example/g/app", "https://gitlab.acme.example/api/v4"),
        ("gitea", "https://gitea.acme.example/o/app", "https://gitea.acme.example/api/v1"),
        ("gitea", "http://127.0.0.1:3000/o/app", "http://127.0.0.1:3000/api/v1"),
        ("bitbucketserver", "https://bb.acme.example/scm/k/app", "https://bb.acme.example/rest/api/latest"),
        ("bitbucket", "https://bitbucket.org/ws/app", None),
        ("azuredevops", "https://dev.azure.com/org/p/_git/app", None),
    ],
)
def test_a_forge_s_api_is_the_address_s_host(kind: str, address: str, api: str | None) -> None:
    docs = objs(
        ocirepository(), kustomization(), provider(kind, address=address, secretRef={"name": "t"}), alert()
    )
    entry = _sync_specs(convert.convert(docs))["app"]["notify"][0]
    assert entry.get("apiURL") == api and entry["address"] == address and entry["type"] == kind
    assert entry.get("genre") == ("fluxcd" if kind == "azuredevops" else None)  # Flux's status genre


def test_from_files_the_context_is_asked_for() -> None:
    docs = objs(ocirepository(), kustomization(), provider("gitlab", uid=""), alert())
    result = convert.convert(docs)
    assert "context" not in _sync_specs(result)["app"]["notify"][0]
    assert [r.klass.value for r in result.report.rows if r.object == "Alert flux-system/a"] == ["semantic"]


def test_event_providers_keep_the_alert_s_filters() -> None:
    docs = objs(
        ocirepository(), kustomization(),
        provider("generic-hmac", address="https://hooks.example.com/x", secretRef={"name": "hmac"}),
        alert(eventSeverity="error", inclusionList=["failed"], exclusionList=["waiting"]),
    )  # fmt: skip
    assert _sync_specs(convert.convert(docs))["app"]["notify"] == [
        {
            "type": "generic",
            "address": "https://hooks.example.com/x",
            "secretRef": {"name": "hmac"},
            "eventSeverity": "error",
            "inclusionList": ["failed"],
            "exclusionList": ["waiting"],
        }
    ]


def test_alert_sources_select_by_name_and_labels() -> None:
    web = kustomization("web")
    web["metadata"]["labels"] = {"team": "web"}
    docs = objs(
        ocirepository("web"), web, ocirepository("db"), kustomization("db"),
        provider("slack", address="https://hooks.slack.com/x"),
        alert(eventSources=[{"kind": "Kustomization", "name": "*", "matchLabels": {"team": "web"}}]),
        alert(
            name="b",
            eventSources=[{"kind": "Kustomization", "name": "gone"}, {"kind": "HelmRelease", "name": "x"}],
        ),
    )  # fmt: skip
    result = convert.convert(docs)
    specs = _sync_specs(result)
    assert "notify" in specs["web"] and "notify" not in specs["db"]
    assert {(r.field, r.klass.value) for r in result.report.rows if r.object == "Alert flux-system/b"} == {
        ("spec.eventSources[0]", "dropped"),
        ("spec.eventSources[1]", "dropped"),
    }


@pytest.mark.parametrize(
    ("spec", "klass"),
    [
        ({"type": "discord"}, "unsupported"),
        ({"type": "github", "commitStatusExpr": "'x'"}, "unsupported"),
        ({"type": "slack", "suspend": True}, "dropped"),
    ],
)
def test_providers_that_cannot_be_carried(spec: dict[str, Any], klass: str) -> None:
    kind = spec.pop("type")
    docs = objs(ocirepository(), kustomization(), provider(kind, **spec), alert())
    result = convert.convert(docs)
    assert "notify" not in _sync_specs(result)["app"]
    assert klass in {r.klass.value for r in result.report.rows if r.object == "Provider flux-system/p"}


def receiver(kind: str = "dockerhub", **spec: Any) -> dict[str, Any]:
    body = {
        "type": kind,
        "secretRef": {"name": "hook"},
        "resources": [{"kind": "OCIRepository", "name": "app"}],
    }
    return {
        "apiVersion": "notification.toolkit.fluxcd.io/v1",
        "kind": "Receiver",
        "metadata": {"name": "hub", "namespace": "flux-system"},
        "spec": {**body, **spec},
    }


def test_a_receiver_keeps_its_path_and_its_syncs() -> None:
    docs = objs(ocirepository(), kustomization(), ocirepository("other"), kustomization("other"), receiver())
    runner = next(d for d in yaml.safe_load_all(convert.convert(docs).config) if d["kind"] == "Runner")
    assert runner["spec"]["receivers"] == [
        {
            "name": "hub",
            "type": "dockerhub",
            "secretRef": {"name": "hook"},
            "pathNamespace": "flux-system",
            "resources": [{"kind": "Sync", "name": "app"}],
        }
    ]


def test_a_receiver_naming_nothing_imported_is_not_written_as_every_sync() -> None:
    docs = objs(
        ocirepository(), kustomization(), receiver(resources=[{"kind": "ImageRepository", "name": "x"}])
    )
    result = convert.convert(docs)
    runner = next(d for d in yaml.safe_load_all(result.config) if d["kind"] == "Runner")
    assert "receivers" not in runner["spec"]
    assert ("spec.resources", "dropped") in {(r.field, r.klass.value) for r in result.report.rows}


def test_a_forge_receiver_is_not_carried() -> None:
    result = convert.convert(objs(ocirepository(), kustomization(), receiver("github")))
    assert ("Receiver flux-system/hub", "unsupported") in {
        (r.object, r.klass.value) for r in result.report.rows
    }


def test_image_automation_becomes_an_images_config_and_a_workflow() -> None:
    result = convert.convert(fleet())
    docs = list(yaml.safe_load_all(result.images))
    assert [d["kind"] for d in docs] == ["ImageRepository", "ImagePolicy", "ImageUpdateAutomation"]
    assert all("status" not in d and "uid" not in d["metadata"] for d in docs)
    assert "certSecretRef" not in docs[0]["spec"]  # not read by lockgate images: a row
    workflow = yaml.safe_load(result.report.workflow)
    assert workflow["on"]["schedule"] == [{"cron": "*/10 * * * *"}]  # the shortest ImageRepository interval
    assert workflow["jobs"]["images"]["uses"] == images.REUSABLE


def test_the_image_workflow_passes_actionlint(tmp_path: Path) -> None:
    """The snippet calls the shipped reusable workflow with inputs it declares (actionlint
    checks ``with:`` against the called workflow when it is local)."""
    workflow = convert.convert(fleet()).report.workflow
    project = tmp_path / "project"
    (project / ".github" / "workflows").mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", str(project)], check=True)
    shutil.copy(
        ROOT / "workflows" / "image-updates.yml", project / ".github" / "workflows" / "image-updates.yml"
    )
    local = workflow.replace(images.REUSABLE, "./.github/workflows/image-updates.yml")
    assert local != workflow
    (project / ".github" / "workflows" / "images.yml").write_text(local)
    linted = subprocess.run(
        [binaries.binary("actionlint"), "-no-color"], cwd=project, capture_output=True, text=True
    )
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_a_helm_release_says_the_command_and_sync_that_replace_it() -> None:
    result = convert.convert(fleet())
    (helm,) = [r for r in result.report.replacements if r.object == "HelmRelease flux-system/podinfo"]
    assert helm.commands[0] == (
        "helm pull podinfo --repo https://stefanprodan.github.io/podinfo --version '6.5.*' --untar "
        "--untardir charts"
    )
    assert helm.commands[-1] == (
        "lockgate push charts/podinfo oci://REGISTRY/fleet/helm/podinfo:latest --render --release-name "
        "podinfo-podinfo --namespace podinfo --values podinfo-values.yaml "
        "--set 'redis.password=${redisPassword}' --sign keyless"
    )
    assert yaml.safe_load(helm.files["podinfo-values.yaml"]) == {"replicaCount": 2}
    spec = helm.sync["spec"]
    assert spec["postBuild"] == {"substituteFrom": [{"kind": "Secret", "name": "podinfo-secrets"}]}
    assert spec["patches"][0]["target"] == {"kind": "Deployment"}
    assert (spec["prune"], spec["wait"], spec["timeout"]) == (True, True, "5m")
    assert any("helm list" in note for note in helm.notes)
    rows = {
        (r.field, r.klass.value) for r in result.report.rows if r.object == "HelmRelease flux-system/podinfo"
    }
    assert {
        ("spec.postRenderers", "semantic"),
        ("spec.upgrade", "dropped"),
        ("spec.valuesFrom[1]", "dropped"),
    } <= rows


def test_a_helm_release_of_an_oci_chart() -> None:
    chart = ocirepository(
        "podinfo-chart", url="oci://ghcr.io/stefanprodan/charts/podinfo", ref={"tag": "6.5.0"}, verify=None,
        layerSelector={"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
                       "operation": "copy"},
    )  # fmt: skip
    release = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "podinfo", "namespace": "apps"},
        "spec": {
            "interval": "10m",
            "chartRef": {"kind": "OCIRepository", "name": "podinfo-chart", "namespace": "flux-system"},
            "dependsOn": [{"name": "db"}],
        },
    }
    result = convert.convert(objs(chart, release, ocirepository("db", "apps"), kustomization("db", "apps")))
    (helm,) = result.report.replacements
    assert helm.commands[0] == (
        "helm pull oci://ghcr.io/stefanprodan/charts/podinfo --version 6.5.0 --untar --untardir charts"
    )
    assert helm.commands[-1].startswith(
        "lockgate push charts/podinfo oci://REGISTRY/fleet/helm/podinfo:latest"
    )
    assert helm.sync["spec"]["dependsOn"] == ["db"]
    assert result.unsigned == []  # the chart's OCIRepository is not a sync's source
