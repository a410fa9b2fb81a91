"""postBuild substitution against the real world: variables inline and from the runner
namespace's ConfigMaps and Secrets, Flux's precedence, the per-object opt-out, strict failures.

The artifact holds ``${var}`` templates; the pass reads the sources at pass time through the
runner's client, substitutes each object before placement, and a failure names the object
(or the source and its field) and the variable, with nothing applied.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from tests.integration.history_support import sync_file
from tests.integration.reconcile_support import configmap, dump, get, namespace, push_tree
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def _create(cluster: Cluster, body: dict[str, Any]) -> None:
    cluster.kubectl("create", "namespace", body["metadata"]["namespace"], check=False)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))


def _secret(cluster: Cluster, ns: str, name: str, data: dict[str, str]) -> None:
    _create(
        cluster,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": ns},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        },
    )


def _pass(cluster: Cluster, tmp_path: Path, name: str, url: str, runner: str, post_build: Any) -> Result:
    path = sync_file(tmp_path / "syncs.yaml", name, url, runner, postBuild=post_build)
    (options,) = config.load(path).syncs
    return pipeline.reconcile(options, kube=Kube.from_kubeconfig(cluster.kubeconfig))


def test_variables_from_configmaps_secrets_and_inline_with_fluxs_precedence(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    _create(cluster, configmap("vars-a", runner, {"env": "from-a", "region": "eu", "tier": "a"}))
    _create(cluster, configmap("vars-b", runner, {"tier": "b", "multi": "one\ntwo\n"}))
    _secret(cluster, runner, "vars-s", {"password": "s3cret", "region": "from-secret"})
    templates = configmap(
        "app",
        unique,
        {
            "env": "${env}",
            "region": "${region}",
            "tier": "${tier}",
            "inline": "${inline}",
            "password": "${password}",
            "multi": "${multi}",
            "defaulted": "${missing:=fallback}",
            "upper": "${env^^}",
            "escaped": "$${env}",
            "bare": "$env",
        },
    )
    # as in Flux the object goes through YAML and back: an unquoted number becomes a number
    replicas = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "counted", "namespace": unique},
        "automountServiceAccountToken": "${automount}",
    }
    opted_out = configmap(
        "raw",
        unique,
        {"kept": "${nothing}"},
        annotations={"kustomize.toolkit.fluxcd.io/substitute": "disabled"},
    )
    opted_out_label = configmap(
        "raw2", unique, {"kept": "${nothing}"}, labels={"lockgate.dev/substitute": "disabled"}
    )
    url = push_tree(
        registry,
        unique,
        {
            "ns.yaml": dump({**namespace("${target}")}),
            "a.yaml": dump(templates, replicas, opted_out, opted_out_label),
        },
    )
    result = _pass(
        cluster,
        tmp_path,
        unique,
        url,
        runner,
        {
            "substitute": {"inline": "given", "tier": "inline-wins", "target": unique, "automount": "false"},
            "substituteFrom": [
                {"kind": "ConfigMap", "name": "vars-a"},
                {"kind": "ConfigMap", "name": "vars-b"},
                {"kind": "Secret", "name": "vars-s"},
                {"kind": "ConfigMap", "name": "absent", "optional": True},
            ],
        },
    )
    assert result.error is None, result.error.message
    app = get(cluster, "configmap", "app", unique)
    assert app is not None
    assert app["data"] == {
        "env": "from-a",
        "region": "from-secret",  # a later source wins
        "tier": "inline-wins",  # inline wins over every source
        "inline": "given",
        "password": "s3cret",
        "multi": "onetwo",  # newlines stripped
        "defaulted": "fallback",
        "upper": "FROM-A",
        "escaped": "${env}",
        "bare": "$env",
    }
    counted = get(cluster, "serviceaccount", "counted", unique)
    assert counted is not None and counted["automountServiceAccountToken"] is False
    for name in ("raw", "raw2"):
        raw = get(cluster, "configmap", name, unique)
        assert raw is not None and raw["data"] == {"kept": "${nothing}"}


def test_an_undefined_variable_fails_naming_object_and_variable_and_applies_nothing(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    url = push_tree(
        registry,
        unique,
        {
            "a.yaml": dump(
                namespace(unique),
                configmap("ok", unique, {"a": "${a}"}),
                configmap("bad", unique, {"b": "${nope}"}),
            )
        },
    )
    result = _pass(cluster, tmp_path, unique, url, runner, {"substitute": {"a": "1"}})
    assert result.error is not None
    message = result.error.message
    assert "ConfigMap/" + unique + "/bad" in message
    assert 'variable not set (strict mode): "nope"' in message
    assert get(cluster, "configmap", "ok", unique) is None


def test_an_invalid_name_and_a_missing_source_fail_with_fluxs_words(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    _create(cluster, configmap("bad-names", runner, {"not-valid": "x"}))
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(unique), configmap("c", unique, {"a": "1"}))})
    invalid = _pass(
        cluster,
        tmp_path,
        unique,
        url,
        runner,
        {"substituteFrom": [{"kind": "ConfigMap", "name": "bad-names"}]},
    )
    assert invalid.error is not None
    assert (
        "'not-valid' var name is invalid, must match '^[_[:alpha:]][_[:alpha:][:digit:]]*$'"
        in invalid.error.message
    )
    missing = _pass(
        cluster, tmp_path, unique, url, runner, {"substituteFrom": [{"kind": "Secret", "name": "gone"}]}
    )
    assert missing.error is not None
    assert f"Secret/{runner}/gone (spec.postBuild.substituteFrom[0]): not found" in missing.error.message
    assert get(cluster, "configmap", "c", unique) is None


def test_a_malformed_template_fails(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    url = push_tree(
        registry, unique, {"a.yaml": dump(namespace(unique), configmap("c", unique, {"a": "${a"}))}
    )
    result = _pass(cluster, tmp_path, unique, url, runner, {"substitute": {"a": "1"}})
    assert result.error is not None
    assert f"ConfigMap/{unique}/c" in result.error.message and "missing closing brace" in result.error.message
