"""--render: kustomize build and helm template in CI, so the artifact holds plain YAML."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.integration.artifacts_support import lockgate
from tests.world.binaries import binary
from tests.world.registry import Registry


def _kustomization(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamePrefix: prod-\n"
        "resources: [cm.yaml]\n"
    )
    (root / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  k: v\n")
    return root


def _chart(root: Path) -> Path:
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 0.1.0\n")
    (root / "values.yaml").write_text("replicas: 1\n")
    (root / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\n"
        "data:\n  replicas: {{ .Values.replicas | quote }}\n"
    )
    return root


def _pulled_text(reg: Registry, ref: str, out: Path) -> str:
    run = lockgate("pull", ref, "-O", str(out))
    assert run.code == 0, run.err
    assert [p.name for p in out.iterdir()] == ["manifests.yaml"]
    return (out / "manifests.yaml").read_text()


def test_kustomize_render(registry: Registry, unique: str, tmp_path: Path) -> None:
    src = _kustomization(tmp_path / "k")
    env = {"LOCKGATE_KUSTOMIZE": str(binary("kustomize"))}
    ref = registry.oci(unique, ":v1")
    run = lockgate("push", str(src), ref, "--render", env=env)
    assert run.code == 0, run.err
    assert "name: prod-app" in _pulled_text(registry, ref, tmp_path / "out")
    same = lockgate("diff", str(src), ref, "--render", env=env)
    assert same.code == 0 and "no differences" in same.out


def test_helm_render_with_values(registry: Registry, unique: str, tmp_path: Path) -> None:
    chart = _chart(tmp_path / "demo")
    (tmp_path / "prod.yaml").write_text("replicas: 5\n")
    env = {"LOCKGATE_HELM": str(binary("helm"))}
    ref = registry.oci(unique, ":v1")
    run = lockgate(
        "push",
        str(chart),
        ref,
        "--render",
        "--values",
        str(tmp_path / "prod.yaml"),
        "--output",
        "json",
        env=env,
    )
    assert run.code == 0, run.err
    assert json.loads(run.out)["status"] == "pushed"
    text = _pulled_text(registry, ref, tmp_path / "out")
    assert "name: demo-cfg" in text and 'replicas: "5"' in text


def test_unrendered_chart_is_packed_as_is(registry: Registry, unique: str, tmp_path: Path) -> None:
    chart = _chart(tmp_path / "demo")
    run = lockgate("push", str(chart), registry.oci(unique, ":raw"))
    assert run.code == 0, run.err


@pytest.mark.parametrize("tool", ["kustomize", "helm"])
def test_missing_renderer_is_a_clear_error(
    unique: str, tmp_path: Path, tool: str, registry: Registry
) -> None:
    src = _kustomization(tmp_path / "k") if tool == "kustomize" else _chart(tmp_path / "c")
    run = lockgate(
        "build", str(src), "--render", env={"PATH": "/nonexistent", f"LOCKGATE_{tool.upper()}": ""}
    )
    assert run.code == 8
    assert (
        f"--render needs {tool}, which is not on PATH: install {tool} or set LOCKGATE_{tool.upper()}"
        in run.err
    )


def test_render_of_a_plain_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n")
    run = lockgate("build", str(tmp_path), "--render")
    assert run.code == 2 and "neither a kustomization.yaml nor a Chart.yaml" in run.err


def test_helm_render_as_helm_install_users_expect(registry: Registry, unique: str, tmp_path: Path) -> None:
    """helm create's chart: its test Pod is skipped; release name, namespace, --set and --values
    apply; another hook keeps its annotation (the runner runs it as a hook), with a notice."""
    helm = binary("helm")
    made = subprocess.run(
        [str(helm), "create", "web"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert made.returncode == 0, made.stderr
    chart = tmp_path / "web"
    assert (chart / "templates" / "tests" / "test-connection.yaml").is_file()
    (chart / "templates" / "migrate.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-migrate\n"
        "  namespace: {{ .Release.Namespace }}\n"
        "  annotations:\n    helm.sh/hook: pre-install\ndata: {}\n"
    )
    (tmp_path / "prod.yaml").write_text("service:\n  port: 8080\n")
    ref = registry.oci(unique, ":v1")
    run = lockgate(
        "push",
        str(chart),
        ref,
        "--render",
        "--release-name",
        "shop",
        "--namespace",
        "prod",
        "--set",
        "replicaCount=3",
        "--values",
        str(tmp_path / "prod.yaml"),
        env={"LOCKGATE_HELM": str(helm)},
    )
    assert run.code == 0, run.err
    assert "1 Helm hook object(s) keep their annotations: the runner runs pre-install" in run.err, run.err
    assert "ConfigMap/shop-migrate (pre-install)" in run.err
    docs = [d for d in yaml.safe_load_all(_pulled_text(registry, ref, tmp_path / "out")) if d]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("Pod", "shop-web-test-connection") not in kinds  # the test hook is skipped
    assert ("Deployment", "shop-web") in kinds and ("ConfigMap", "shop-migrate") in kinds
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 3
    migrate = next(d for d in docs if d["metadata"]["name"] == "shop-migrate")
    assert migrate["metadata"]["namespace"] == "prod"
    service = next(d for d in docs if d["kind"] == "Service")
    assert service["spec"]["ports"][0]["port"] == 8080
    bad = lockgate("push", str(chart), ref, "--render", "--set", "novalue", env={"LOCKGATE_HELM": str(helm)})
    assert bad.code == 2 and "--set 'novalue': expected KEY=VALUE" in bad.err
    plain = lockgate("push", str(chart), ref, "--release-name", "x")
    assert plain.code == 2 and "need --render" in plain.err
