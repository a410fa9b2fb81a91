"""The preview's table of Kubernetes' own kinds (``runner.plan.preview.scopes``) against the real
API server's discovery: every kind it serves in a built-in group is namespaced, or not, as the
table says, so a preview places objects as a pass does without asking a cluster."""

from __future__ import annotations

import json

import pytest

from runner.plan.preview import scopes
from tests.world.kube import Cluster

pytestmark = pytest.mark.world


def discovered(cluster: Cluster) -> dict[tuple[str, str], bool]:
    found: dict[tuple[str, str], bool] = {}
    versions = [("", "/api/v1")]
    groups = json.loads(cluster.kubectl("get", "--raw", "/apis").stdout)["groups"]
    versions += [(g["name"], f"/apis/{v['groupVersion']}") for g in groups for v in g["versions"]]
    for group, path in versions:
        for resource in json.loads(cluster.kubectl("get", "--raw", path).stdout)["resources"]:
            if "/" not in resource["name"]:
                found[(group, resource["kind"])] = bool(resource["namespaced"])
    return found


def test_the_table_says_what_the_api_server_says(cluster: Cluster) -> None:
    served = discovered(cluster)
    built_in = {key: namespaced for key, namespaced in served.items() if key[0] in scopes.BUILT_IN_GROUPS}
    assert len(built_in) > 40
    wrong = {
        f"{kind}.{group}": namespaced
        for (group, kind), namespaced in built_in.items()
        if scopes.builtin_scope(f"{group}/v1" if group else "v1", kind) is not namespaced
    }
    assert wrong == {}
    # and the groups the server serves beyond the table are not Kubernetes' own: each comes from
    # a CustomResourceDefinition (other tests of the session install some)
    crds = json.loads(cluster.kubectl("get", "crd", "-o", "json").stdout)["items"]
    custom = {c["spec"]["group"] for c in crds}
    assert {g for g, _ in served} - scopes.BUILT_IN_GROUPS - custom == set()
