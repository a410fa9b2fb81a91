"""``lockgate import``'s conversion of a whole fleet: what the config holds, that it loads,
that it is the same bytes every time and from either place, and what the report says."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.pipeline import config
from runner.plan.fluximport import convert, objects
from runner.plan.fluximport.objects import FluxObject
from runner.plan.fluximport.report import RowClass
from tests.unit.runner.plan.fluximport.support import (
    as_the_cluster_has_it,
    fleet,
    fleet_documents,
    kustomization,
    objs,
    ocirepository,
)


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def _syncs(text: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in _docs(text) if d["kind"] == "Sync"}


def _rows(result: convert.Imported) -> set[tuple[str, str, str]]:
    return {(r.object, r.field, r.klass.value) for r in result.report.rows}


def test_the_fleet_becomes_a_config_that_loads(tmp_path: Path) -> None:
    result = convert.convert(fleet())
    path = tmp_path / "lockgate.yaml"
    path.write_text(result.config)
    loaded = config.load(path)
    assert [s.name for s in loaded.syncs] == ["frontend", "team-b-backend", "team-c-backend"]
    assert loaded.runner.namespace == "lockgate-system"
    assert [r.name for r in loaded.runner.receivers] == ["hub"]
    assert result.unsigned == []


def test_each_field_lands_where_the_sync_reads_it() -> None:
    syncs = _syncs(convert.convert(fleet()).config)
    frontend = syncs["frontend"]["spec"]
    assert syncs["frontend"]["metadata"]["annotations"] == {
        convert.FROM_KUSTOMIZATION: "flux-system/frontend"
    }
    assert frontend["url"] == "oci://ghcr.io/acme/manifests/frontend"
    assert frontend["semver"] == ">=1.0.0"
    assert frontend["path"] == "deploy"  # Flux's ./ stripped
    assert (frontend["interval"], frontend["driftInterval"], frontend["timeout"]) == ("5m", "10m", "9m30s")
    assert frontend["dependsOn"] == ["team-b-backend"]  # the namespaced name, rewritten
    assert frontend["patches"][0]["target"] == {"kind": "Deployment", "name": "web"}
    assert frontend["images"] == [{"name": "ghcr.io/acme/frontend", "newTag": "1.4.2"}]
    assert frontend["components"] == ["../components/tls"]
    assert frontend["commonMetadata"] == {"labels": {"env": "prod"}}
    assert frontend["healthChecks"] == [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "frontend"}
    ]
    # anchored at both ends already: carried as written
    assert frontend["verify"]["identityRegexp"].startswith("^https://github")
    backend = syncs["team-b-backend"]["spec"]
    assert backend["url"] == "oci://ghcr.io/acme/manifests/backend:stable"
    assert (backend["retryInterval"], backend["timeout"], backend["prune"]) == ("2m", "3m", False)
    assert backend["verify"] == {"secretRef": {"name": "cosign-keys"}}
    assert backend["postBuild"]["substituteFrom"] == [{"kind": "ConfigMap", "name": "cluster-vars"}]
    assert backend["decryption"] == {"provider": "sops", "secretRef": {"name": "sops-age"}}
    assert backend["serviceAccountName"] == "deployer"
    assert syncs["team-c-backend"]["spec"]["url"].endswith("/backend-c:latest")  # no ref: latest


def test_two_runs_give_the_same_bytes_whatever_the_order() -> None:
    first = convert.convert(fleet())
    shuffled = fleet()
    random.Random(7).shuffle(shuffled)
    second = convert.convert(shuffled)
    assert first.config == second.config
    assert first.images == second.images
    assert first.report.json_text() == second.report.json_text()
    assert first.report.table() == second.report.table()


def test_the_cluster_and_the_files_agree_on_the_same_objects() -> None:
    """The API server fills CRD defaults, uid and status in: none of it changes the output
    (the Provider's uid aside, which only the cluster has and which names the status context)."""
    docs = [d for d in fleet_documents() if d["kind"] != "Provider"]
    from_files = convert.convert([objects.from_document(d) for d in docs])
    from_cluster = convert.convert([objects.from_document(as_the_cluster_has_it(d)) for d in docs])
    assert from_cluster.config == from_files.config
    assert from_cluster.report.json_text() == from_files.report.json_text()


def test_every_class_of_row_is_reported_on_the_fleet() -> None:
    result = convert.convert(fleet())
    rows = _rows(result)
    assert ("Kustomization team-b/backend", "metadata.name", "renamed") in rows
    assert ("Kustomization team-b/backend", "spec.retryInterval", "semantic") in rows
    assert ("Kustomization flux-system/flux-system", "spec.sourceRef", "unsupported") in rows
    assert ("Provider flux-system/slack", "spec.channel", "dropped") in rows
    assert ("HelmRelease flux-system/podinfo", "spec", "unsupported") in rows
    assert ("OCIRepository team-b/backend", "spec.verify.secretRef", "semantic") in rows
    assert result.report.to_json()["counts"]["security"] == 0


def test_an_unsigned_source_is_refused_unless_allowed() -> None:
    docs = objs(ocirepository(verify=None), kustomization())
    refused = convert.convert(docs)
    assert refused.unsigned == ["OCIRepository flux-system/app (read by Kustomization flux-system/app)"]
    allowed = convert.convert(docs, convert.ImportOptions(allow_unsigned=True))
    assert allowed.unsigned == []
    assert _syncs(allowed.config)["app"]["spec"]["verify"] == {"insecureSkip": True}
    assert ("OCIRepository flux-system/app", "spec.verify", "security") in _rows(allowed)


def test_a_plain_pair_in_the_runner_namespace_carries_everything() -> None:
    """Exit 0's case: nothing dropped, nothing changed in meaning, nothing to copy."""
    docs = objs(
        ocirepository(namespace="lockgate-system"),
        kustomization(namespace="lockgate-system"),
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "kustomize-controller", "namespace": "flux-system"},
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "manager", "args": ["--no-remote-bases=true"]}]}
                }
            },
        },
    )
    result = convert.convert(docs)
    assert result.report.rows == []
    assert _syncs(result.config)["app"]["spec"] == {
        "url": "oci://registry.example.com/app:v1",
        "interval": "5m",
        "driftInterval": "10m",
        "timeout": "9m30s",
        "prune": True,
        "verify": {"secretRef": {"name": "keys"}},
    }


def test_without_the_controller_deployment_lockgate_s_defaults_stay() -> None:
    result = convert.convert(objs(ocirepository(), kustomization()))
    runner = _docs(result.config)[0]
    assert runner["kind"] == "Runner" and "allowRemoteBases" not in runner["spec"]
    assert ("Deployment flux-system/kustomize-controller", "spec.template.spec.containers[manager].args",
            "semantic") in _rows(result)  # fmt: skip


def test_a_controller_allowing_remote_bases_is_a_security_row() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "kustomize-controller", "namespace": "flux-system"},
        "spec": {"template": {"spec": {"containers": [{"name": "manager", "args": [
            "--default-service-account=deployer", "--no-cross-namespace-refs=true", "--concurrent=8",
            "--watch-label-selector=team=a", "--brand-new-flag=1",
        ]}]}}},
    }  # fmt: skip
    result = convert.convert(objs(ocirepository(), kustomization(), deployment))
    runner = _docs(result.config)[0]["spec"]
    assert runner["allowRemoteBases"] is True
    assert runner["defaultServiceAccount"] == "deployer"
    assert runner["noCrossNamespaceRefs"] is True
    assert runner["concurrency"] == 8
    fields = {(f, c) for o, f, c in _rows(result) if o.startswith("Deployment")}
    where = "spec.template.spec.containers[manager].args"
    assert (f"{where}: --no-remote-bases", "security") in fields
    assert (f"{where}: --watch-label-selector", "dropped") in fields
    assert (f"{where}: --brand-new-flag", "dropped") in fields


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"kubeConfig": {"secretRef": {"name": "remote"}}}, "kubeConfig"),
        ({"decryption": {"provider": "sops", "serviceAccountName": "kms"}}, "decryption.serviceAccountName"),
    ],
)
def test_a_kustomization_lockgate_cannot_run_is_left_out(spec: dict[str, Any], reason: str) -> None:
    result = convert.convert(objs(ocirepository(), kustomization(**spec)))
    assert _syncs(result.config) == {}
    (row,) = [r for r in result.report.rows if r.klass is RowClass.UNSUPPORTED]
    assert row.object == "Kustomization flux-system/app" and reason in row.message


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"ref": {"semver": "1.x", "semverFilter": ".*-rc.*"}}, "semverFilter"),
        ({"layerSelector": {"operation": "copy"}}, "operation copy"),
        ({"verify": {"provider": "notation"}}, "notation"),
        (
            {"verify": {"provider": "cosign", "trustedRootSecretRef": {"name": "root"}}},
            "trustedRootSecretRef",
        ),
        (
            {"verify": {"provider": "cosign", "matchOIDCIdentity": [{"issuer": "a", "subject": "b"}] * 2}},
            "2 entries",
        ),
    ],
)
def test_a_source_lockgate_cannot_read_is_left_out(spec: dict[str, Any], reason: str) -> None:
    result = convert.convert(objs(ocirepository(**spec), kustomization()))
    assert _syncs(result.config) == {}
    (row,) = [r for r in result.report.rows if r.klass is RowClass.UNSUPPORTED]
    assert row.object == "OCIRepository flux-system/app" and reason in row.message


def test_a_field_newer_than_this_import_is_reported_not_ignored() -> None:
    result = convert.convert(objs(ocirepository(shinyNew=True), kustomization(alsoNew="x")))
    rows = _rows(result)
    assert ("OCIRepository flux-system/app", "spec.shinyNew", "dropped") in rows
    assert ("Kustomization flux-system/app", "spec.alsoNew", "dropped") in rows


def test_other_kinds_are_reported() -> None:
    stray: dict[str, Any] = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "ExternalArtifact",
        "metadata": {"name": "x", "namespace": "flux-system"},
        "spec": {},
    }
    unused = ocirepository(name="chart-only")
    result = convert.convert(objs(ocirepository(), kustomization(), stray, unused))
    rows = _rows(result)
    assert ("OCIRepository flux-system/chart-only", "spec", "dropped") in rows
    assert ("ExternalArtifact flux-system/x", "spec", "dropped") in rows


def test_flux_objects_survive_a_round_trip_through_from_document() -> None:
    doc = kustomization(name="x")
    obj: FluxObject = objects.from_document(doc)
    assert (obj.kind, obj.namespace, obj.name, obj.group) == (
        "Kustomization",
        "flux-system",
        "x",
        "kustomize.toolkit.fluxcd.io",
    )
