"""Per-sync cloud identity (Flux 2.6's object-level workload identity, RFC-0010).

A Sync with ``spec.provider`` and a ServiceAccount (``spec.serviceAccountName``, or the
Runner's ``defaultServiceAccount``) reaches its registry as the cloud identity annotated on
that ServiceAccount, never as the runner's own, so tenants do not share it:

- aws: ``eks.amazonaws.com/role-arn``; audience ``sts.amazonaws.com``
- gcp: ``gcp.auth.fluxcd.io/workload-identity-provider`` (the audience,
  ``//iam.googleapis.com/projects/N/locations/global/workloadIdentityPools/P/providers/X``)
  and, to impersonate, ``iam.gke.io/gcp-service-account``
- azure: ``azure.workload.identity/client-id`` and ``azure.workload.identity/tenant-id``
  (else ``AZURE_TENANT_ID``); audience ``api://AzureADTokenExchange``

The ServiceAccount is read each pass (annotations change); its token is requested
(``runner.kube.tokens``) only when the cloud token cache has nothing fresh for it.
"""

from __future__ import annotations

import os

from lockgate.errors import UsageError
from lockgate.registry import cloud
from runner.kube.client import Kube
from runner.kube.tokens import SERVICE_ACCOUNT, request_token

AWS_ROLE = "eks.amazonaws.com/role-arn"
GCP_PROVIDER = "gcp.auth.fluxcd.io/workload-identity-provider"
GCP_SERVICE_ACCOUNT = "iam.gke.io/gcp-service-account"
AZURE_CLIENT = "azure.workload.identity/client-id"
AZURE_TENANT = "azure.workload.identity/tenant-id"
AWS_AUDIENCE = "sts.amazonaws.com"
AZURE_AUDIENCE = "api://AzureADTokenExchange"


def identity(kube: Kube, namespace: str, name: str, provider: str) -> cloud.Identity:
    """The identity ServiceAccount ``namespace/name`` is annotated with for ``provider``."""
    where = f"ServiceAccount {namespace}/{name}"
    account = kube.own().get(SERVICE_ACCOUNT, namespace, name)
    if account is None:
        raise UsageError(
            f"spec.serviceAccountName: {where} not found (it names the sync's {provider} identity)"
        )
    notes = (account.get("metadata") or {}).get("annotations") or {}
    provider_name = cloud.check_provider(provider, "spec.provider")
    if provider == "aws":
        audience, fields = AWS_AUDIENCE, {"role_arn": notes.get(AWS_ROLE, "")}
    elif provider == "gcp":
        wip = notes.get(GCP_PROVIDER, "")
        audience = cloud_audience(wip) if wip else ""
        fields = {"audience": audience, "service_account": notes.get(GCP_SERVICE_ACCOUNT, "")}
    else:
        audience = AZURE_AUDIENCE
        fields = {
            "client_id": notes.get(AZURE_CLIENT, ""),
            "tenant_id": notes.get(AZURE_TENANT, "") or os.environ.get("AZURE_TENANT_ID", ""),
        }
    runner_kube = kube.own()

    def token() -> str:
        if not audience:
            raise UsageError(f"{where}: no {GCP_PROVIDER} annotation: the workload identity provider")
        return request_token(runner_kube, namespace, name, audience=audience)

    return cloud.Identity(provider=provider_name, name=where, token=token, **fields)


def cloud_audience(workload_identity_provider: str) -> str:
    wip = workload_identity_provider
    return wip if wip.startswith("//") else f"//iam.googleapis.com/{wip}"
