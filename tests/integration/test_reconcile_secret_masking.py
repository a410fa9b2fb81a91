"""Secrets masked by origin, not by kind (issue 21 item 5), against the real world.

A value that came from a ``substituteFrom`` Secret or from a SOPS decryption lands in a
Deployment's env, a ConfigMap or a custom kind; when it changes, the table, ``-o json``
(dry run and real), the Events and the inventory of ``reconcile``, and under ``serve`` the
status page's JSON, the notification sent and the log, show only Flux's masks while the
entry still says which field changed. Values from a ConfigMap or an inline ``substitute``
stay in clear, as do the object's other fields.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.integration import sops_support
from tests.integration.history_support import sync_file
from tests.integration.reconcile_support import (
    LOCKGATE,
    cli,
    configmap,
    deployment,
    dump,
    namespace,
    push_tree,
)
from tests.integration.serve_support import start_serve, sync_doc
from tests.world.kube import Cluster
from tests.world.process import free_port
from tests.world.recorder import Recorder
from tests.world.registry import Registry

pytestmark = pytest.mark.world

MASKED = ("*** (before)", "*** (after)")
#: the Secret's values, pass by pass: long ones, and a short one only its origin can catch
PASSWORDS = ("first-Pa55word-x1", "second-Pa55word-x2", "third-Pa55word-x3")
PINS = ("pZq1", "pZq2", "pZq3")


def _apply(cluster: Cluster, body: dict[str, Any]) -> None:
    cluster.kubectl("create", "namespace", body["metadata"]["namespace"], check=False)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))


def _secret(cluster: Cluster, ns: str, name: str, data: dict[str, str]) -> None:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    _apply(
        cluster,
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns}, "data": encoded},
    )


def _variables(cluster: Cluster, runner: str, turn: int, *, user: str, region: str) -> None:
    """The Secret (password, pin, and a region a later ConfigMap overrides) and the ConfigMap."""
    _secret(
        cluster, runner, "db", {"password": PASSWORDS[turn], "pin": PINS[turn], "region": f"secret-{turn}"}
    )
    _apply(cluster, configmap("vars", runner, {"user": user, "region": region}))


def _templates(ns: str) -> dict[str, str]:
    app = deployment("app", ns)
    app["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "PASSWORD", "value": "${password}"},
        {"name": "DB_URL", "value": "postgres://${user}:${password}@db:5432/app"},
        {"name": "PIN", "value": "${pin}"},
        {"name": "USER", "value": "${user}"},
        {"name": "REGION", "value": "${region}"},
    ]
    settings = configmap("settings", ns, {"password": "${password}", "pin": "pin-${pin}", "user": "${user}"})
    return {"app.yaml": dump(namespace(ns), app, settings)}


def _result(out: str) -> dict[str, Any]:
    """The one sync's result of ``reconcile --config ... -o json`` (a list, one per sync)."""
    (result,) = json.loads(out)
    assert isinstance(result, dict)
    return result


def _changes(document: dict[str, Any], kind: str, name: str) -> dict[str, tuple[Any, Any]]:
    (entry,) = [o for o in document["objects"] if o["kind"] == kind and o["name"] == name]
    return {c["path"]: (c.get("before"), c.get("after")) for c in entry.get("changes", [])}


def _nothing_secret(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text, f"{secret!r} shows in:\n{text[:4000]}"


def _stored(cluster: Cluster, runner: str, name: str) -> str:
    """The sync's Events and its inventory (history, last result), decoded."""
    events = cluster.kubectl("get", "events", "-n", runner, "-o", "json").stdout
    parent = json.loads(
        cluster.kubectl("get", "secret", f"lockgate-{name}", "-n", runner, "-o", "json").stdout
    )
    decoded = "".join(
        base64.b64decode(v).decode("utf-8", "replace") for v in (parent.get("data") or {}).values()
    )
    return events + json.dumps(parent.get("metadata", {})) + decoded


ENV = "spec.template.spec.containers[name=app].env"


def test_a_secret_substituted_into_a_deployment_and_a_configmap_then_changed_shows_only_masks(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    _variables(cluster, runner, 0, user="app-user-1", region="eu-west-1")
    url = push_tree(registry, unique, _templates(unique))
    post_build = {
        "substituteFrom": [{"kind": "Secret", "name": "db"}, {"kind": "ConfigMap", "name": "vars"}],
    }
    config = sync_file(tmp_path / "sync.yaml", unique, url, runner, postBuild=post_build)
    first = cli(cluster, "--config", str(config))
    assert first.code == 0, first.err
    env = {e["name"]: e["value"] for e in _container_env(cluster, unique)}
    assert env["DB_URL"] == f"postgres://app-user-1:{PASSWORDS[0]}@db:5432/app"  # applied in clear

    # the Secret changes (and the ConfigMap's values, which are not secret)
    _variables(cluster, runner, 1, user="app-user-2", region="eu-west-2")
    dry = cli(cluster, "--config", str(config), "--dry-run", "-o", "json")
    assert dry.code == 0, dry.err
    planned = _result(dry.out)
    deploy = _changes(planned, "Deployment", "app")
    for field in ("PASSWORD", "DB_URL", "PIN"):
        assert deploy[f"{ENV}[name={field}].value"] == MASKED, deploy
    assert deploy[f"{ENV}[name=USER].value"] == ("app-user-1", "app-user-2")
    assert deploy[f"{ENV}[name=REGION].value"] == ("eu-west-1", "eu-west-2")  # the ConfigMap won
    settings = _changes(planned, "ConfigMap", "settings")
    assert settings == {
        "data.password": MASKED,
        "data.pin": MASKED,
        "data.user": ("app-user-1", "app-user-2"),
    }
    _nothing_secret(dry.out + dry.err, *PASSWORDS[:2], *PINS[:2], "secret-0", "secret-1")

    applied = cli(cluster, "--config", str(config))
    assert applied.code == 0, applied.err
    assert f'{ENV}[name=PASSWORD].value: "*** (before)" -> "*** (after)"' in applied.out, applied.out
    assert 'data.pin: "*** (before)" -> "*** (after)"' in applied.out
    assert 'data.user: "app-user-1" -> "app-user-2"' in applied.out
    _nothing_secret(applied.out + applied.err, *PASSWORDS[:2], *PINS[:2])

    _variables(cluster, runner, 2, user="app-user-2", region="eu-west-2")
    again = cli(cluster, "--config", str(config), "-o", "json")
    assert again.code == 0, again.err
    deploy = _changes(_result(again.out), "Deployment", "app")
    assert {path: change for path, change in deploy.items()} == {
        f"{ENV}[name={field}].value": MASKED for field in ("PASSWORD", "DB_URL", "PIN")
    }
    _nothing_secret(again.out + again.err, *PASSWORDS, *PINS)
    _nothing_secret(_stored(cluster, runner, unique), *PASSWORDS, *PINS)


def _container_env(cluster: Cluster, ns: str) -> list[dict[str, str]]:
    live = json.loads(cluster.kubectl("get", "deployment", "app", "-n", ns, "-o", "json").stdout)
    env: list[dict[str, str]] = live["spec"]["template"]["spec"]["containers"][0]["env"]
    return env


def test_decrypted_values_in_a_configmap_and_a_custom_kind_show_only_masks(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    key = sops_support.age_key()
    _secret(cluster, runner, "sops-age", {"identity.agekey": key.identity})
    group = f"{unique}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"databases.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Database", "plural": "databases", "singular": "database"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }

    def artifact(turn: int) -> str:
        work = tmp_path / f"sops-{turn}"
        settings = sops_support.encrypt(
            work,
            "settings.yaml",
            dump(
                configmap(
                    "settings",
                    unique,
                    {"apiKey": PASSWORDS[turn], "pin": PINS[turn]},
                    labels={"turn": str(turn)},
                )
            ),
            key,
            "--encrypted-regex",
            "^data$",
        )
        database = sops_support.encrypt(
            work,
            "database.yaml",
            dump(
                {
                    "apiVersion": f"{group}/v1",
                    "kind": "Database",
                    "metadata": {"name": "db", "namespace": unique},
                    "spec": {"password": PASSWORDS[turn], "port": 5432 + turn, "size": f"size-{turn}"},
                }
            ),
            key,
            "--encrypted-regex",
            "^(password|port)$",
        )
        assert PASSWORDS[turn] not in settings + database
        return push_tree(
            registry,
            unique,
            {"crd.yaml": dump(crd, namespace(unique)), "settings.yaml": settings, "database.yaml": database},
        )

    decryption = {"provider": "sops", "secretRef": {"name": "sops-age"}}
    first = cli(
        cluster,
        "--config",
        str(sync_file(tmp_path / "s0.yaml", unique, artifact(0), runner, decryption=decryption)),
    )
    assert first.code == 0, first.err
    assert PASSWORDS[0] not in first.out + first.err

    config = sync_file(tmp_path / "s1.yaml", unique, artifact(1), runner, decryption=decryption)
    dry = cli(cluster, "--config", str(config), "--dry-run", "-o", "json")
    assert dry.code == 0, dry.err
    planned = _result(dry.out)
    assert _changes(planned, "ConfigMap", "settings") == {
        "data.apiKey": MASKED,
        "data.pin": MASKED,
        "metadata.labels.turn": ("0", "1"),
    }
    assert _changes(planned, "Database", "db") == {
        "spec.password": MASKED,
        "spec.port": MASKED,
        "spec.size": ("size-0", "size-1"),  # not encrypted: in clear
    }
    _nothing_secret(dry.out + dry.err, *PASSWORDS[:2], *PINS[:2])

    applied = cli(cluster, "--config", str(config))
    assert applied.code == 0, applied.err
    assert 'spec.password: "*** (before)" -> "*** (after)"' in applied.out, applied.out
    assert 'spec.port: "*** (before)" -> "*** (after)"' in applied.out
    assert 'data.pin: "*** (before)" -> "*** (after)"' in applied.out
    _nothing_secret(applied.out + applied.err, *PASSWORDS[:2], *PINS[:2], "5432", "5433")
    _nothing_secret(_stored(cluster, runner, unique), *PASSWORDS[:2], *PINS[:2])


def test_serve_shows_a_changed_secret_only_masked_on_the_page_in_notifications_events_and_log(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """The notification endpoint (a Flux generic webhook) is a local recorder: ``tests.world.recorder``."""
    runner, page_port = f"{unique}-r", free_port()
    _variables(cluster, runner, 0, user="app-user-1", region="eu-west-1")
    url = push_tree(registry, unique, _templates(unique))
    recorder = Recorder()
    post_build = {"substituteFrom": [{"kind": "Secret", "name": "db"}, {"kind": "ConfigMap", "name": "vars"}]}
    notify = [{"type": "generic", "address": recorder.url + "/flux"}]
    served = start_serve(
        cluster,
        tmp_path,
        [sync_doc("app", url.split("@")[0], runner, postBuild=post_build, notify=notify)],
        runner={"namespace": runner, "statusPage": {"address": f"127.0.0.1:{page_port}"}},
    )
    try:
        served.wait_sync_ready("app")
        _variables(cluster, runner, 1, user="app-user-2", region="eu-west-1")
        asked = subprocess.run(
            [*LOCKGATE, "sync", "app", "-n", runner, f"--kubeconfig={cluster.kubeconfig}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert asked.returncode == 0, asked.stderr
        served.wait_event(
            lambda e: e.get("msg") == "pass finished" and "configured" in str(e.get("summary", "")),
            what="the pass that applies the changed Secret",
        )
        recorder.wait_for(lambda seen: len(seen) >= 2, what="the created and the configured events")
        # the page's JSON holds the last change set (a running serve keeps it)
        detail = requests.get(f"http://127.0.0.1:{page_port}/api/syncs/app", timeout=5).json()
        page = json.dumps(detail)
        assert f"{ENV}[name=PASSWORD].value" in page and f"{ENV}[name=DB_URL].value" in page
        changes = [
            change
            for obj in detail["lastChange"]["objects"]
            for change in obj.get("changes", [])
            if change["path"].startswith(ENV) or change["path"].startswith("data.")
        ]
        by_path = {c["path"]: (c.get("before"), c.get("after")) for c in changes}
        assert by_path[f"{ENV}[name=PIN].value"] == MASKED, by_path
        assert by_path["data.password"] == MASKED
        assert by_path[f"{ENV}[name=USER].value"] == ("app-user-1", "app-user-2")
        sent = "".join(r.body.decode("utf-8", "replace") for r in recorder.requests())
        assert "Deployment" in sent
        _nothing_secret(page + sent, *PASSWORDS[:2], *PINS[:2])
        _nothing_secret(_stored(cluster, runner, "app"), *PASSWORDS[:2], *PINS[:2])
    finally:
        code = served.stop()
        recorder.stop()
    assert code == 0, served.tail()
    _nothing_secret(served.log.read_text(errors="replace"), *PASSWORDS[:2], *PINS[:2])


def test_a_refusal_quoting_a_secret_value_shows_it_masked(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """The API server quotes a label value it refuses; when that value came from a Secret, the
    error (printed, in ``-o json``, in the Event and the inventory) shows ``***`` instead."""
    runner = f"{unique}-r"
    _secret(cluster, runner, "team", {"team": "valid-team-label"})
    labelled = configmap("cfg", unique, {"k": "v"}, labels={"team": "${team}"})
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(unique), labelled)})
    post_build = {"substituteFrom": [{"kind": "Secret", "name": "team"}]}
    config = sync_file(tmp_path / "sync.yaml", unique, url, runner, postBuild=post_build)
    first = cli(cluster, "--config", str(config))
    assert first.code == 0, first.err

    refused = "n0t a label:Secret!"
    _secret(cluster, runner, "team", {"team": refused})
    run = cli(cluster, "--config", str(config), "-o", "json")
    assert run.code != 0, run.out
    error = _result(run.out)["error"]["message"]
    assert "Invalid value" in error and "***" in error, error
    _nothing_secret(run.out + run.err, refused)
    _nothing_secret(_stored(cluster, runner, unique), refused)
