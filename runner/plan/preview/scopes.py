"""Whether a kind is namespaced, without a cluster to ask: Kubernetes' built-in kinds as a table.

Pure. A pass asks the API server's discovery (``runner.kube.discovery``); a preview runs in
CI with no cluster, so placement (``runner.plan.placement``) gets this table instead: the
built-in kinds of Kubernetes 1.36 that are cluster-scoped, and the built-in API groups whose
every other kind is namespaced (``tests/integration/test_preview_scopes.py`` compares it with
the world's kube-apiserver). A kind of another group is a custom resource: its CRD in the same
artifact says its scope (placement reads it), else ``None``, and the preview says it guessed.
"""

from __future__ import annotations

#: (group, kind) of the built-in cluster-scoped kinds
CLUSTER_SCOPED: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "ComponentStatus"),
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("authentication.k8s.io", "SelfSubjectReview"),
        ("authentication.k8s.io", "TokenReview"),
        ("authorization.k8s.io", "SelfSubjectAccessReview"),
        ("authorization.k8s.io", "SelfSubjectRulesReview"),
        ("authorization.k8s.io", "SubjectAccessReview"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("certificates.k8s.io", "ClusterTrustBundle"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("internal.apiserver.k8s.io", "StorageVersion"),
        ("networking.k8s.io", "IngressClass"),
        ("networking.k8s.io", "IPAddress"),
        ("networking.k8s.io", "ServiceCIDR"),
        ("node.k8s.io", "RuntimeClass"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("resource.k8s.io", "DeviceClass"),
        ("resource.k8s.io", "ResourceSlice"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("storage.k8s.io", "VolumeAttributesClass"),
        ("storagemigration.k8s.io", "StorageVersionMigration"),
    }
)

#: the API groups Kubernetes serves itself; their kinds not in ``CLUSTER_SCOPED`` are namespaced
BUILT_IN_GROUPS: frozenset[str] = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)


def group_of(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def builtin_scope(api_version: str, kind: str) -> bool | None:
    """A ``placement.ClusterScope``: namespaced (True), cluster-scoped (False), or None for a
    kind Kubernetes does not serve itself (a custom resource)."""
    group = group_of(api_version)
    if (group, kind) in CLUSTER_SCOPED:
        return False
    return True if group in BUILT_IN_GROUPS else None
