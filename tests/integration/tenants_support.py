"""Helpers for the tenant tests: a ServiceAccount per team, with the rights a tenant gets.

A tenant's sync runs as its ServiceAccount (impersonation), so the API server decides by
that account's RBAC, as in an installation of ``deploy/rbac/tenant``.
"""

from __future__ import annotations

from typing import Any

from tests.integration.reconcile_support import dump
from tests.world.kube import Cluster

#: what a tenant may do with its own objects
CONFIGMAP_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "verbs": ["get", "list", "watch", "create", "patch", "delete"],
    }
]
#: its inventory Secret and Events in the runner namespace
INVENTORY_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
]


def role(name: str, ns: str, rules: list[dict[str, Any]], subject: dict[str, Any]) -> list[dict[str, Any]]:
    """A Role of ``rules`` in ``ns`` and its RoleBinding to ``subject``."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": ns},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [subject],
        },
    ]


def tenant(
    cluster: Cluster,
    runner_ns: str,
    app_ns: str,
    name: str,
    *,
    app_rules: list[dict[str, Any]] | None = None,
    runner_rules: list[dict[str, Any]] | None = None,
) -> str:
    """A ServiceAccount ``name`` in the runner namespace that may manage ConfigMaps in ``app_ns``
    only (or ``app_rules``), and its own inventory and Events in the runner namespace (or
    ``runner_rules``); returns the user it is impersonated as."""
    subject = {"kind": "ServiceAccount", "name": name, "namespace": runner_ns}
    docs = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": runner_ns}},
        *role(name, app_ns, CONFIGMAP_RULES if app_rules is None else app_rules, subject),
        *role(name, runner_ns, INVENTORY_RULES if runner_rules is None else runner_rules, subject),
    ]
    cluster.kubectl("apply", "-f", "-", input=dump(*docs))
    return f"system:serviceaccount:{runner_ns}:{name}"
