"""What ``lockgate import`` carries of Flux's notification-controller objects, in use: a github
Alert's commit statuses keep Flux's exact context (a required status check stays green), and a
dockerhub Receiver keeps its hook path and triggers only the syncs of its resources.

GitHub's REST API is SaaS: the recording stand-in the notify tests use (``tests.world.recorder``)
takes its statuses. Flux's Alert, Provider and Receiver CRDs are installed; notification-
controller does not run (lockgate does its work after the import). The Provider's UID, which
Flux's context is made of, is the one the real API server gave it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from tests.integration.flux_support import Fleet, get_json, kubectl_apply
from tests.integration.reconcile_support import dump
from tests.integration.serve_support import start_serve
from tests.integration.test_flux_adopt import deployment
from tests.world.flux import FluxControllers
from tests.world.kube import Cluster
from tests.world.recorder import Recorder
from tests.world.registry import Registry

pytestmark = pytest.mark.world

NOTIFY_API = "notification.toolkit.fluxcd.io"
TOKEN = "ghp_fluxhandovertoken0123456789"
HOOK_TOKEN = "hub-receiver-token-0123456789abcdef"
SHAS = ("a" * 40, "b" * 40)


@pytest.fixture
def fleet(
    flux: FluxControllers, full_cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> Iterator[Fleet]:
    yield Fleet(full_cluster, registry, flux, unique[-6:], tmp_path)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    yield rec
    rec.stop()


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_an_imported_github_alert_posts_statuses_with_flux_s_context(
    fleet: Fleet, recorder: Recorder
) -> None:
    app, ns = fleet.name("web"), fleet.name("web")
    fleet.cluster.kubectl("create", "namespace", ns)
    for where in (fleet.flux_ns, fleet.runner_ns):  # lockgate's copy: what the report asks for
        fleet.cluster.kubectl(
            "create", "secret", "generic", "github-token", "-n", where, f"--from-literal=token={TOKEN}"
        )
    # the repository on the stand-in's host, as a GitHub Enterprise one is on its own: a provider
    # sends its token only to the host its address names (docs/security.md §17)
    built_from = ("--source", f"{recorder.url}/acme/app", "--revision")
    files = {"app.yaml": dump(deployment("web", env={"A": "1"}))}
    digest = fleet.push("web", files, *built_from, f"main@sha1:{SHAS[0]}")
    provider = {
        "apiVersion": f"{NOTIFY_API}/v1beta3",
        "kind": "Provider",
        "metadata": {"name": "github", "namespace": fleet.flux_ns},
        "spec": {
            "type": "github",
            "address": f"{recorder.url}/acme/app",
            "secretRef": {"name": "github-token"},
        },
    }
    alert = {
        "apiVersion": f"{NOTIFY_API}/v1beta3",
        "kind": "Alert",
        "metadata": {"name": "web-status", "namespace": fleet.flux_ns},
        "spec": {"providerRef": {"name": "github"}, "eventSources": [{"kind": "Kustomization", "name": app}]},
    }
    kubectl_apply(
        fleet.cluster, fleet.source("web"), fleet.kustomization("web", targetNamespace=ns), provider, alert
    )
    fleet.wait_applied("web", digest)
    live = get_json(fleet.cluster, f"providers.{NOTIFY_API}", "github", fleet.flux_ns)
    assert live is not None
    flux_context = f"kustomization/{app}/{live['metadata']['uid'].split('-')[0]}"

    imported = fleet.import_from_cluster()
    assert imported.code == 10, imported.err
    (sync,) = [d for d in _docs(fleet.work / "lockgate.yaml") if d["kind"] == "Sync"]
    assert sync["spec"]["notify"] == [
        {
            "type": "github",
            "address": f"{recorder.url}/acme/app",
            "apiURL": f"{recorder.url}/api/v3",
            "secretRef": {"name": "github-token"},
            "context": flux_context,
        }
    ]
    fleet.flux("suspend", "kustomization", app, "-n", fleet.flux_ns)
    fleet.lockgate("adopt", "--config", "lockgate.yaml")
    # the next release goes through lockgate: its status carries Flux's context
    fleet.push(
        "web", {"app.yaml": dump(deployment("web", env={"A": "2"}))}, *built_from, f"main@sha1:{SHAS[1]}"
    )
    fleet.lockgate("reconcile", "--config", "lockgate.yaml")
    path = f"/api/v3/repos/acme/app/statuses/{SHAS[1]}"
    posted = recorder.wait_for(lambda seen: any(r.path == path for r in seen), what=f"a status on {SHAS[1]}")
    statuses = [r for r in posted if r.path == path]
    assert {r.json()["context"] for r in statuses} == {flux_context}
    assert statuses[-1].json()["state"] == "success"
    assert statuses[-1].header("Authorization") == f"Bearer {TOKEN}"


def test_an_imported_dockerhub_receiver_keeps_its_path_and_triggers_only_its_syncs(
    fleet: Fleet, tmp_path: Path
) -> None:
    """Flux's path is /hook/ + sha256(token + name + namespace) with the Receiver's namespace:
    the webhook URL Docker Hub has keeps working once lockgate serves it."""
    for where in (fleet.flux_ns, fleet.runner_ns):
        fleet.cluster.kubectl(
            "create", "secret", "generic", "hub-token", "-n", where, f"--from-literal=token={HOOK_TOKEN}"
        )
    # sources on Docker Hub (Flux cannot reach them here: nothing needs to be applied for this)
    objects: list[dict[str, Any]] = []
    for app, repo in (("web", "acme/web"), ("mirror", "acme/web"), ("other", "acme/other")):
        source = fleet.source(app)
        source["spec"]["url"] = f"oci://docker.io/{repo}"
        source["spec"].pop("insecure")
        objects += [source, fleet.kustomization(app, targetNamespace=fleet.name(app))]
    receiver = {
        "apiVersion": f"{NOTIFY_API}/v1",
        "kind": "Receiver",
        "metadata": {"name": "hub", "namespace": fleet.flux_ns},
        "spec": {
            "type": "dockerhub",
            "secretRef": {"name": "hub-token"},
            "resources": [
                {
                    "apiVersion": "source.toolkit.fluxcd.io/v1",
                    "kind": "OCIRepository",
                    "name": fleet.name("web"),
                },
                {
                    "apiVersion": "source.toolkit.fluxcd.io/v1",
                    "kind": "OCIRepository",
                    "name": fleet.name("other"),
                },
            ],
        },
    }
    kubectl_apply(fleet.cluster, *objects, receiver)
    imported = fleet.import_from_cluster()
    assert imported.code == 10, imported.err
    docs = _docs(fleet.work / "lockgate.yaml")
    (runner,) = [d for d in docs if d["kind"] == "Runner"]
    assert runner["spec"]["receivers"] == [
        {
            "name": "hub",
            "type": "dockerhub",
            "secretRef": {"name": "hub-token"},
            "pathNamespace": fleet.flux_ns,
            "resources": [
                {"kind": "Sync", "name": fleet.name("other")},
                {"kind": "Sync", "name": fleet.name("web")},
            ],
        }
    ]
    flux_path = "/hook/" + hashlib.sha256(f"{HOOK_TOKEN}hub{fleet.flux_ns}".encode()).hexdigest()
    listed = fleet.lockgate("receivers", "--config", "lockgate.yaml", "-o", "json").json()
    assert listed == [{"name": "hub", "type": "dockerhub", "path": flux_path}]

    served = start_serve(
        fleet.cluster, tmp_path / "serve", [d for d in docs if d["kind"] == "Sync"], runner=runner["spec"]
    )
    try:
        payload = json.loads(
            (Path(__file__).parent.parent / "fixtures" / "webhooks" / "dockerhub.json").read_text()
        )
        payload["repository"]["repo_name"] = "acme/web"
        answer = requests.post(
            f"http://127.0.0.1:{served.webhook_port}{flux_path}",
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json"},
            timeout=10,
        )
        # web: listed and its repository; mirror: its repository, not listed; other: listed, not it
        assert answer.status_code == 200, answer.text
        assert answer.json()["triggered"] == [fleet.name("web")], answer.text
        wrong = requests.post(
            f"http://127.0.0.1:{served.webhook_port}/hook/{'0' * 64}", data=b"{}", timeout=10
        )
        assert wrong.status_code == 401
    finally:
        served.stop()
