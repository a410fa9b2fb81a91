"""CRDs of crds/ directories in helm template output: annotated keep, every other byte unchanged."""

from __future__ import annotations

import yaml

from lockgate.helm import crds

CRD = (
    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
    "metadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n"
)
TEMPLATE = "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"


def test_paths_of_crds_directories() -> None:
    assert crds.from_crds_directory("app/crds/widgets.yaml")
    assert crds.from_crds_directory("app/charts/db/crds/x.yaml")
    assert crds.from_crds_directory("app/charts/db/charts/inner/crds/nested/x.yaml")
    assert not crds.from_crds_directory("app/templates/crds/x.yaml")
    assert not crds.from_crds_directory("app/charts/crds/templates/x.yaml")
    assert not crds.from_crds_directory("crds/x.yaml")


def test_each_crd_of_a_crds_file_is_kept_and_the_templates_are_untouched() -> None:
    second = CRD.replace("widgets", "gadgets")
    text = f"---\n# Source: app/crds/both.yaml\n{CRD}---\n{second}\n{TEMPLATE}"
    marked, names = crds.mark(text)
    assert names == ["widgets.example.com", "gadgets.example.com"]
    assert marked.endswith(TEMPLATE)
    assert marked.startswith("---\n# Source: app/crds/both.yaml\n")
    docs = [d for d in yaml.safe_load_all(marked) if d]
    assert [d["metadata"].get("annotations") for d in docs] == [
        {"helm.sh/resource-policy": "keep"},
        {"helm.sh/resource-policy": "keep"},
        None,
    ]


def test_a_crd_in_templates_and_an_author_s_own_policy_are_left_alone() -> None:
    in_templates = f"---\n# Source: app/templates/crd.yaml\n{CRD}"
    assert crds.mark(in_templates) == (in_templates, [])
    own = CRD.replace("metadata:\n", "metadata:\n  annotations:\n    helm.sh/resource-policy: other\n")
    marked, names = crds.mark(f"---\n# Source: app/crds/w.yaml\n{own}")
    assert names == ["widgets.example.com"]
    assert "helm.sh/resource-policy: other" in marked and "keep" not in marked


def test_a_json_crd_file_starting_with_a_marker_is_marked() -> None:
    text = (
        '---\n# Source: app/crds/w.json\n---\n{"apiVersion": "apiextensions.k8s.io/v1", '
        '"kind": "CustomResourceDefinition", "metadata": {"name": "w.example.com"}}\n'
    )
    marked, names = crds.mark(text)
    assert names == ["w.example.com"]
    assert yaml.safe_load_all(marked) and "helm.sh/resource-policy: keep" in marked
