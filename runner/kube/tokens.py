"""ServiceAccount tokens for another audience: the TokenRequest API (``serviceaccounts/token``).

The runner asks the API server for a short-lived token of a sync's ServiceAccount whose
audience is a cloud's token service (``sts.amazonaws.com``, ``api://AzureADTokenExchange``,
a GCP workload identity provider), to exchange it for that cloud's credentials
(``runner.pipeline.cloudidentity``). It needs ``create`` on ``serviceaccounts/token`` in the
namespace (deploy/rbac). The token is returned, never logged.
"""

from __future__ import annotations

from runner.kube.client import Kube
from runner.kube.discovery import Resource

SERVICE_ACCOUNT = Resource("", "v1", "ServiceAccount", "serviceaccounts", True)
#: the shortest lifetime the API server grants (it raises smaller requests to this)
MIN_SECONDS = 600


def request_token(kube: Kube, namespace: str, name: str, *, audience: str, seconds: int = MIN_SECONDS) -> str:
    """A token for ServiceAccount ``namespace/name`` with ``audience``; a ``KubeError`` names a refusal."""
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"audiences": [audience], "expirationSeconds": max(seconds, MIN_SECONDS)},
    }
    response = kube.transport.request(
        "POST",
        SERVICE_ACCOUNT.path(namespace, name) + "/token",
        body=body,
        resource=SERVICE_ACCOUNT,
        namespace=namespace,
        what="token",
    )
    status = response.json().get("status") or {}
    return str(status.get("token") or "")
