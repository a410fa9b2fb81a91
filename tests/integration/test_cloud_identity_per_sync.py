"""Per-sync cloud identity (Flux 2.6, RFC-0010): the identity annotated on a sync's ServiceAccount.

The Kubernetes half runs against the world's real API server: the runner reads the
ServiceAccount's annotations and asks for a token of it with the cloud's audience
(TokenRequest); the clouds' token services are stood in (``cloud_support.CloudStandIn``: they
cannot run here), trusting tokens signed by the API server's ServiceAccount key as a cloud
trusts the cluster's OIDC issuer. Also the RBAC this needs (deploy/components/cloud-identity),
used with the runner's real token.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest
import yaml

from lockgate.errors import AuthError
from runner.kube.client import Kube
from runner.pipeline import source
from runner.pipeline.secretrefs import SecretReader
from tests.integration.cloud_fixtures import (
    Clouds,
    clean_env,
    clouds,
    irsa,
    push,
    sync_spec,
)
from tests.integration.cloud_support import ACR_HOST, ECR_HOST, GAR_HOST
from tests.world.kube import Cluster

__all__ = ["clean_env", "clouds"]  # fixtures, used by name


def test_per_sync_identity_uses_the_role_annotated_on_the_service_account(
    clouds: Clouds,
    cluster: Cluster,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unique: str,
) -> None:
    irsa(monkeypatch, clouds, tmp_path)  # the runner's own identity pushes
    ref = clouds.ref(ECR_HOST, f"{unique}/app")
    push(capsys, tmp_path, ref, "aws", unique)
    for name in ("AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name)  # the sync may not fall back on it
    assert cluster.sa_keys is not None
    clouds.standin.issuer_key = cluster.sa_keys.cert.read_bytes()
    role = f"arn:aws:iam::123456789012:role/{unique}"
    cluster.kubectl("create", "namespace", unique)
    cluster.kubectl("-n", unique, "create", "serviceaccount", "tenant")
    cluster.kubectl("-n", unique, "create", "serviceaccount", "bare")
    cluster.kubectl(
        "-n", unique, "annotate", "serviceaccount", "tenant", f"eks.amazonaws.com/role-arn={role}"
    )
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    secrets = SecretReader(kube, unique)
    spec = sync_spec(tmp_path, ref, provider="aws", serviceAccountName="tenant")
    assert spec.identity_account == "tenant"
    sts_before = clouds.standin.counts["aws-sts"]
    assert source.fetch(spec, secrets=secrets).digest.startswith("sha256:")
    assert clouds.standin.subjects[-1] == f"{role} as system:serviceaccount:{unique}:tenant"
    assert source.fetch(spec, secrets=secrets).digest.startswith("sha256:")
    assert clouds.standin.counts["aws-sts"] == sts_before + 1  # the second pass used the cache
    bare = dataclasses.replace(spec, identity_account="bare")
    missing = re.escape(f"ServiceAccount {unique}/bare has no eks.amazonaws.com/role-arn")
    with pytest.raises(AuthError, match=missing):
        source.fetch(bare, secrets=secrets)


def test_the_cloud_identity_component_lets_the_runner_mint_only_lockgate_apply_tokens(
    clouds: Clouds,
    cluster: Cluster,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unique: str,
) -> None:
    """deploy/components/cloud-identity on the namespaced variant, used with the runner's real token."""
    from tests.integration.test_deploy import DEPLOY, apply, build, relocate
    from tests.integration.test_deploy_rbac import forbidden, install, request

    sys_ns = f"{unique}-sys"
    install(cluster, unique, "namespaced", {"lockgate-system": sys_ns, "apps": f"{unique}-apps"})
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump({"components": [os.path.relpath(DEPLOY / "components" / "cloud-identity", overlay)]})
    )
    apply(cluster, relocate(build(overlay), {"lockgate-system": sys_ns}, f"-{unique}"))
    role = f"arn:aws:iam::123456789012:role/{unique}"
    cluster.kubectl(
        "-n", sys_ns, "annotate", "serviceaccount", "lockgate-apply", f"eks.amazonaws.com/role-arn={role}"
    )
    token = cluster.kubectl("create", "token", "lockgate", "-n", sys_ns, "--duration=1h").stdout.strip()
    runner = tmp_path / "runner.kubeconfig"
    runner.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "w",
                        "cluster": {"server": cluster.server, "certificate-authority": str(cluster.ca)},
                    }
                ],
                "users": [{"name": "sa", "user": {"token": token}}],
                "contexts": [{"name": "sa", "context": {"cluster": "w", "user": "sa"}}],
                "current-context": "sa",
            }
        )
    )
    refused = request(
        cluster, runner, "create", "token", "lockgate", "-n", sys_ns, "--audience=sts.amazonaws.com"
    )
    assert forbidden(refused, "serviceaccounts/token"), refused
    irsa(monkeypatch, clouds, tmp_path)
    ref = clouds.ref(ECR_HOST, f"{unique}/app")
    push(capsys, tmp_path, ref, "aws", unique)
    for name in ("AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name)
    assert cluster.sa_keys is not None
    clouds.standin.issuer_key = cluster.sa_keys.cert.read_bytes()
    spec = sync_spec(tmp_path, ref, provider="aws", serviceAccountName="lockgate-apply")
    secrets = SecretReader(Kube.from_kubeconfig(runner), sys_ns)
    assert source.fetch(spec, secrets=secrets).digest.startswith("sha256:")
    assert clouds.standin.subjects[-1] == f"{role} as system:serviceaccount:{sys_ns}:lockgate-apply"


@pytest.mark.parametrize("provider", ["gcp", "azure"])
def test_per_sync_identity_for_gcp_and_azure_from_the_service_account_annotations(
    provider: str,
    clouds: Clouds,
    cluster: Cluster,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unique: str,
) -> None:
    standin = clouds.standin
    # the runner's own identity pushes (a federated file token), then leaves the sync on its own
    standin.trusted_tokens.add(f"fed-{unique}")
    (tmp_path / "federated").write_text(f"fed-{unique}")
    wip = "projects/42/locations/global/workloadIdentityPools/clusters/providers/world"
    if provider == "gcp":
        host = GAR_HOST
        external = {
            "type": "external_account",
            "audience": f"//iam.googleapis.com/{wip}",
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": f"{standin.url}/gcp/sts/v1/token",
            "credential_source": {"file": str(tmp_path / "federated")},
        }
        (tmp_path / "external.json").write_text(json.dumps(external))
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "external.json"))
        standin.gcp_provider(f"//iam.googleapis.com/{wip}")
        account = f"sa-{unique[-6:]}@p.iam.gserviceaccount.com"  # 6-30 characters, as IAM's
        annotations = [
            f"gcp.auth.fluxcd.io/workload-identity-provider={wip}",
            f"iam.gke.io/gcp-service-account={account}",
        ]
        expected = account
    else:
        host = ACR_HOST
        monkeypatch.setenv("AZURE_FEDERATED_TOKEN_FILE", str(tmp_path / "federated"))
        monkeypatch.setenv("AZURE_CLIENT_ID", "runner-client")
        monkeypatch.setenv("AZURE_TENANT_ID", "tenant-a")
        annotations = [
            "azure.workload.identity/client-id=tenant-client",
            "azure.workload.identity/tenant-id=tenant-b",
        ]
        # the runner's own app in its tenant, the tenant's app in another: Entra checks both
        standin.azure_app("tenant-a", "runner-client", "file-token")
        standin.azure_app("tenant-b", "tenant-client", f"system:serviceaccount:{unique}:tenant")
        expected = f"client tenant-client in tenant-b as system:serviceaccount:{unique}:tenant"
    monkeypatch.setenv("AZURE_AUTHORITY_HOST", standin.url)
    monkeypatch.setenv("LOCKGATE_GCP_STS_URL", f"{standin.url}/gcp/sts/v1/token")
    monkeypatch.setenv("LOCKGATE_GCP_IAM_URL", standin.url)
    ref = clouds.ref(host, f"{unique}/app")
    push(capsys, tmp_path, ref, provider, unique)
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "AZURE_FEDERATED_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    assert cluster.sa_keys is not None
    standin.issuer_key = cluster.sa_keys.cert.read_bytes()
    cluster.kubectl("create", "namespace", unique)
    cluster.kubectl("-n", unique, "create", "serviceaccount", "tenant")
    cluster.kubectl("-n", unique, "annotate", "serviceaccount", "tenant", *annotations)
    spec = sync_spec(tmp_path, ref, provider=provider, serviceAccountName="tenant")
    secrets = SecretReader(Kube.from_kubeconfig(cluster.kubeconfig), unique)
    assert source.fetch(spec, secrets=secrets).digest.startswith("sha256:")
    assert standin.subjects[-1] == expected
