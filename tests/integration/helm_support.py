"""Real charts for the Helm tests, packaged the way users have them: one shipping its CRDs in
``crds/`` with custom resources of them in ``templates/``, one calling ``lookup`` from a
``define`` in a subchart, one gating a custom resource on ``.Capabilities.APIVersions.Has``."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.integration.artifacts_support import Run, lockgate
from tests.world.binaries import binary


def helm_env() -> dict[str, str]:
    return {"LOCKGATE_HELM": str(binary("helm"))}


def crd(group: str, kind: str = "Widget") -> dict[str, Any]:
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
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


def operator_chart(root: Path, group: str, *, configmaps: int = 4) -> Path:
    """A chart with its CRD in ``crds/`` (two documents in one file: the CRD and a second one),
    a Widget of it and ``configmaps`` ConfigMaps; ``widget: false`` leaves the Widget out."""
    (root / "templates").mkdir(parents=True)
    (root / "crds").mkdir()
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: operator\nversion: 0.1.0\n")
    (root / "values.yaml").write_text("widget: true\n")
    (root / "crds" / "crds.yaml").write_text(
        "---\n" + yaml.safe_dump_all([crd(group), crd(group, "Gadget")], sort_keys=False)
    )
    (root / "templates" / "widget.yaml").write_text(
        "{{- if .Values.widget }}\n"
        f"apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: first\n"
        "  namespace: {{ .Release.Namespace }}\nspec:\n  size: 3\n{{- end }}\n"
    )
    for index in range(configmaps):
        (root / "templates" / f"cm{index}.yaml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm{index}\n"
            "  namespace: {{ .Release.Namespace }}\ndata:\n  k: v\n"
        )
    return root


def lookup_chart(root: Path) -> Path:
    """A chart whose subchart's ``define`` calls ``lookup``, used from the parent's template;
    comments and a field named lookup elsewhere, which must not count."""
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: shop\nversion: 0.1.0\n")
    (root / "values.yaml").write_text("lookup: not-a-call\n")
    (root / "templates" / "config.yaml").write_text(
        "# this chart once used lookup here; the comment must not count\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop\n"
        'data:\n  mode: {{ .Values.lookup }}  {{/* lookup "v1" "Secret" */}}\n'
    )
    (root / "templates" / "secret.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: shop-db\n"
        "stringData:\n"
        '  password: {{ include "db.password" . | quote }}\n'
    )
    # the subchart as `helm dependency build` leaves it: packaged, in charts/
    sub = root.parent / f"{root.name}-db-src" / "db"
    (sub / "templates").mkdir(parents=True)
    (sub / "Chart.yaml").write_text("apiVersion: v2\nname: db\nversion: 0.1.0\n")
    (sub / "templates" / "_password.tpl").write_text(
        '{{- define "db.password" -}}\n'
        '{{- $found := lookup "v1" "Secret" .Release.Namespace "shop-db" -}}\n'
        '{{- if $found }}{{ index $found.data "password" | b64dec }}\n'
        "{{- else }}{{ randAlphaNum 16 }}{{ end -}}\n"
        "{{- end -}}\n"
    )
    package(sub, root / "charts")
    return root


def gated_chart(root: Path, group: str) -> Path:
    """A chart that renders a Monitor (a custom resource of ``group``) only for a cluster whose
    API versions include ``group/v1/Monitor``, as charts gate ServiceMonitors."""
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: web\nversion: 0.1.0\n")
    (root / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"
        "data:\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n"
    )
    (root / "templates" / "monitor.yaml").write_text(
        f'{{{{- if .Capabilities.APIVersions.Has "{group}/v1/Monitor" }}}}\n'
        f"apiVersion: {group}/v1\nkind: Monitor\nmetadata:\n  name: web\nspec:\n  port: 8080\n"
        "{{- end }}\n"
    )
    return root


def package(chart: Path, into: Path) -> Path:
    """``helm package``: the .tgz a chart repository serves (and ``helm pull`` fetches)."""
    into.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [str(binary("helm")), "package", str(chart), "-d", str(into)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return next(into.glob(f"{chart.name}-*.tgz"))


def pulled_docs(ref: str, out: Path) -> list[dict[str, Any]]:
    run = lockgate("pull", ref, "-O", str(out))
    assert run.code == 0, run.err
    return [d for d in yaml.safe_load_all((out / "manifests.yaml").read_text()) if d]


def push_render(chart: Path, ref: str, *flags: str) -> Run:
    return lockgate("push", str(chart), ref, "--render", *flags, env=helm_env())
