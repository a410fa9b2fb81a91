"""Cloud workload identity for registries: ECR, Artifact Registry and ACR (issue 22, item 1).

The clouds' token services cannot run here: ``cloud_support.CloudStandIn`` stands in for each
one with a local HTTP server implementing the documented request and answer (AWS STS and ECR
GetAuthorizationToken with SigV4, the EKS Pod Identity agent, the GCE metadata server, Google
STS and IAM Credentials, Entra ID and ACR's /oauth2/exchange). The registry is the real one
(Distribution with token auth) and accepts only the credentials the stand-in minted. The
Kubernetes half (TokenRequest with the cloud's audience, ServiceAccount annotations) runs
against the world's real API server, whose ServiceAccount signing key the stand-in trusts as
a cloud trusts the cluster's OIDC issuer.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest
import yaml

from lockgate import registry
from lockgate.errors import AuthError, UsageError
from lockgate.registry.cloud import cache as cloud_cache
from lockgate.signing.options import VerifyOptions
from runner.kube.client import Kube
from runner.pipeline import config, source
from tests.integration.artifacts_support import write_tree
from tests.integration.cloud_fixtures import (
    Clouds,
    clean_env,
    clouds,
    irsa,
    push,
    run_cli,
    sync_spec,
)
from tests.integration.cloud_support import ACR_HOST, ECR_HOST, GAR_HOST
from tests.world.kube import Cluster

__all__ = ["clean_env", "clouds"]  # fixtures, used by name


def test_aws_irsa_pushes_and_a_sync_pulls_through_ecr_with_minted_credentials_only(
    clouds: Clouds,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unique: str,
) -> None:
    ref = clouds.ref(ECR_HOST, f"{unique}/app")
    # without the provider the registry refuses: only what the stand-in minted opens it
    tree = write_tree(tmp_path / "plain", unique)
    code, out = run_cli(capsys, "push", str(tree), ref, "--insecure")
    assert code == 3 and "requires authentication" in out, out
    irsa(monkeypatch, clouds, tmp_path)
    push(capsys, tmp_path, ref, "aws", unique)
    fetched = source.fetch(sync_spec(tmp_path, ref, provider="aws"))
    assert fetched.digest.startswith("sha256:")
    assert any(o.name == "web" for o in fetched.objects)
    assert "arn:aws:iam::123456789012:role/ci as file-token" in "\n".join(clouds.standin.subjects)


def test_aws_pod_identity_lists_tags(
    clouds: Clouds,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unique: str,
) -> None:
    irsa(monkeypatch, clouds, tmp_path)
    ref = clouds.ref(ECR_HOST, f"{unique}/app")
    push(capsys, tmp_path, ref, "aws", unique)
    for name in ("AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name)
    cloud_cache.DEFAULT_CACHE.forget()
    (tmp_path / "pod-token").write_text(clouds.standin.pod_identity_token)
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", f"{clouds.standin.url}/aws/pod-identity")
    monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", str(tmp_path / "pod-token"))
    before = clouds.standin.counts["aws-pod-identity"]
    client = registry.RegistryClient.for_reference(registry.parse(ref), provider="aws", insecure=True)
    assert client.list_tags(f"{unique}/app") == ["v1"]
    assert clouds.standin.counts["aws-pod-identity"] == before + 1


def test_gcp_external_account_with_impersonation_and_the_metadata_server(
    clouds: Clouds,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unique: str,
) -> None:
    audience = clouds.standin.gcp_provider(
        "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/ci-pool/providers/github"
    )
    clouds.standin.trusted_tokens.add(f"oidc-{unique}")
    (tmp_path / "oidc").write_text(f"oidc-{unique}")
    external = {
        "type": "external_account",
        "audience": audience,
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": f"{clouds.standin.url}/gcp/sts/v1/token",
        "credential_source": {"file": str(tmp_path / "oidc")},
        "service_account_impersonation_url": f"{clouds.standin.url}/v1/projects/-/serviceAccounts/"
        "pusher@p.iam.gserviceaccount.com:generateAccessToken",
    }
    (tmp_path / "external.json").write_text(json.dumps(external))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "external.json"))
    ref = clouds.ref(GAR_HOST, f"{unique}/app")
    push(capsys, tmp_path, ref, "gcp", unique)
    assert clouds.standin.subjects[-1] == "pusher@p.iam.gserviceaccount.com"
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS")
    monkeypatch.setenv("GCE_METADATA_HOST", clouds.standin.host)
    cloud_cache.DEFAULT_CACHE.forget()
    fetched = source.fetch(sync_spec(tmp_path, ref, provider="gcp"))
    assert fetched.digest.startswith("sha256:")
    assert clouds.standin.subjects[-1] == "metadata-default"


def test_azure_workload_identity_exchanges_for_an_acr_refresh_token(
    clouds: Clouds,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unique: str,
) -> None:
    clouds.standin.trusted_tokens.add(f"fed-{unique}")
    clouds.standin.azure_app("tenant-a", "11111111-2222-3333-4444-555555555555", "file-token")
    (tmp_path / "federated").write_text(f"fed-{unique}")
    monkeypatch.setenv("AZURE_FEDERATED_TOKEN_FILE", str(tmp_path / "federated"))
    monkeypatch.setenv("AZURE_CLIENT_ID", "11111111-2222-3333-4444-555555555555")
    monkeypatch.setenv("AZURE_TENANT_ID", "tenant-a")
    monkeypatch.setenv("AZURE_AUTHORITY_HOST", clouds.standin.url)
    ref = clouds.ref(ACR_HOST, f"{unique}/app")
    push(capsys, tmp_path, ref, "azure", unique)
    code, out = run_cli(capsys, "pull", ref, "-O", str(tmp_path / "out"), "--provider", "azure", "--insecure")
    assert code == 0, out
    assert (tmp_path / "out" / "apps" / "web.yaml").exists()
    assert clouds.standin.counts["azure-acr-exchange"] == 1  # the push's token served the pull too


def test_a_refused_cloud_token_fails_the_sync_naming_the_provider_and_it_recovers(
    clouds: Clouds,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unique: str,
) -> None:
    token = irsa(monkeypatch, clouds, tmp_path, role="arn:aws:iam::123456789012:role/puller")
    ref = clouds.ref(ECR_HOST, f"{unique}/app")
    push(capsys, tmp_path, ref, "aws", unique)
    cloud_cache.DEFAULT_CACHE.forget()
    spec = sync_spec(tmp_path, ref, provider="aws")
    clouds.standin.refusing = True  # the web identity token expired: STS says ExpiredTokenException
    with pytest.raises(AuthError) as failed:
        source.fetch(spec)
    message = failed.value.message
    assert "provider aws" in message and "ExpiredTokenException" in message
    assert "role/puller" in message and ECR_HOST in message
    assert token not in message
    clouds.standin.refusing = False  # the endpoint answers again: the next pass succeeds by itself
    assert source.fetch(spec).digest.startswith("sha256:")


def test_a_provider_never_sends_a_token_to_a_host_it_does_not_serve(tmp_path: Path) -> None:
    with pytest.raises(Exception) as refused:
        config.parse(
            yaml.safe_dump(
                {
                    "apiVersion": "lockgate.dev/v1alpha1",
                    "kind": "Sync",
                    "metadata": {"name": "x"},
                    "spec": {
                        "url": "oci://ghcr.io/acme/app:v1",
                        "provider": "aws",
                        "interval": "5m",
                        "secretRef": {"name": "regcred"},
                        "verify": {"insecureSkip": True},
                    },
                }
            ).encode(),
            "sync.yaml",
        )
    text = str(refused.value)
    assert "spec.provider: provider aws serves ECR hosts" in text and "ghcr.io is not one" in text
    assert "drop spec.secretRef" in text
    with pytest.raises(UsageError, match="no cloud token is sent"):
        registry.RegistryClient.for_reference(registry.parse("oci://ghcr.io/acme/app:v1"), provider="gcp")


def test_credentials_the_registry_refuses_are_dropped_and_the_next_pass_mints_new_ones(
    clouds: Clouds,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unique: str,
) -> None:
    irsa(monkeypatch, clouds, tmp_path)
    ref = clouds.ref(ECR_HOST, f"{unique}/app")
    push(capsys, tmp_path, ref, "aws", unique)
    spec = sync_spec(tmp_path, ref, provider="aws")
    assert source.fetch(spec).digest.startswith("sha256:")
    clouds.standin.revoke()  # the cached ECR password stops working hours before its expiry
    with pytest.raises(AuthError, match=r"refused the credentials from provider aws \(role arn:aws:iam::"):
        source.fetch(spec)
    ecr_before = clouds.standin.counts["aws-ecr"]
    assert source.fetch(spec).digest.startswith("sha256:")
    assert clouds.standin.counts["aws-ecr"] == ecr_before + 1


def test_serve_shares_one_client_per_identity_while_its_credentials_are_fresh(
    clouds: Clouds,
    cluster: Cluster,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unique: str,
) -> None:
    from runner.serve.registries import Registries

    irsa(monkeypatch, clouds, tmp_path)
    ref = clouds.ref(ECR_HOST, f"{unique}/app")
    push(capsys, tmp_path, ref, "aws", unique)
    cloud_cache.DEFAULT_CACHE.forget()
    clouds.standin.lifetime = 3  # renewed 0.6 s before expiry
    try:
        path = tmp_path / "syncs.yaml"
        docs = [
            {
                "apiVersion": "lockgate.dev/v1alpha1",
                "kind": "Sync",
                "metadata": {"name": f"s{n}"},
                "spec": {"url": ref, "interval": "5m", "provider": "aws", "verify": {"insecureSkip": True}},
            }
            for n in range(3)
        ]
        path.write_text(yaml.safe_dump_all(docs))
        syncs = [
            dataclasses.replace(o, source=dataclasses.replace(o.source, insecure=True))
            for o in config.load(path).syncs
        ]
        kept = Registries(Kube.from_kubeconfig(cluster.kubeconfig))
        sts_before = clouds.standin.counts["aws-sts"]
        clients = {id(kept.client(sync)) for sync in syncs for _ in range(5)}
        assert len(clients) == 1 and clouds.standin.counts["aws-sts"] == sts_before + 1
        assert kept.client(syncs[0]).head_manifest(f"{unique}/app", "v1") is not None
        time.sleep(2.5)  # past the renewal time: new credentials, a new client
        renewed = kept.client(syncs[1])
        assert id(renewed) not in clients and clouds.standin.counts["aws-sts"] == sts_before + 2
        assert renewed.head_manifest(f"{unique}/app", "v1") is not None
    finally:
        clouds.standin.lifetime = 3600


def test_an_image_repository_with_a_provider_is_scanned_with_the_cloud_identity(
    clouds: Clouds,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unique: str,
) -> None:
    from action.images import config as images_config
    from action.images import scan

    irsa(monkeypatch, clouds, tmp_path)
    ref = clouds.ref(ECR_HOST, f"{unique}/app")
    push(capsys, tmp_path, ref, "aws", unique)
    image = ref.removeprefix("oci://").rsplit(":", 1)[0]
    doc = {
        "apiVersion": "image.toolkit.fluxcd.io/v1",
        "kind": "ImageRepository",
        "metadata": {"name": "app", "namespace": "apps"},
        "spec": {"image": image, "provider": "aws", "insecure": True},
    }
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "repo.yaml").write_text(yaml.safe_dump(doc))
    (repo,) = images_config.load(tmp_path / "images").repositories.values()
    client, name, origin = scan.connect(repo)
    assert origin == "provider aws" and client.list_tags(name) == ["v1"]


def test_a_pass_whose_cloud_token_is_refused_fails_naming_the_provider_then_applies_by_itself(
    clouds: Clouds,
    cluster: Cluster,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unique: str,
) -> None:
    from runner.pipeline import reconcile as pipeline

    irsa(monkeypatch, clouds, tmp_path, role="arn:aws:iam::123456789012:role/runner")
    ref = clouds.ref(ECR_HOST, f"{unique}/app")
    push(capsys, tmp_path, ref, "aws", unique, apply=True)
    cloud_cache.DEFAULT_CACHE.forget()
    base = config.sync_options(
        name="cloudy",
        url=ref,
        verify=VerifyOptions(insecure_skip=True),
        namespace=f"{unique}-sys",
        provider="aws",
    )
    sync = dataclasses.replace(base, source=dataclasses.replace(base.source, insecure=True))
    kube = Kube.from_kubeconfig(cluster.kubeconfig)
    clouds.standin.refusing = True
    failed = pipeline.reconcile(sync, kube=kube)
    assert isinstance(failed.error, AuthError) and failed.error.exit_code == 3
    assert "provider aws" in failed.error.message and "role/runner" in failed.error.message
    assert not failed.changeset.entries
    clouds.standin.refusing = False
    applied = pipeline.reconcile(sync, kube=kube)
    assert applied.error is None, applied.error
    assert cluster.kubectl("-n", unique, "get", "configmap", "web").returncode == 0


def test_ci_identities_as_the_cloud_login_actions_leave_them(
    clouds: Clouds,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    unique: str,
) -> None:
    """aws-actions/configure-aws-credentials exports a role session's keys;
    google-github-actions/auth writes an external_account file whose subject token is the job's
    ID token, fetched from ACTIONS_ID_TOKEN_REQUEST_URL with its bearer token."""
    standin = clouds.standin
    keys = standin.session_keys(f"ci-session-{unique}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", keys.access_key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", keys.secret_access_key)
    monkeypatch.setenv("AWS_SESSION_TOKEN", keys.session_token)
    monkeypatch.setenv("AWS_ENDPOINT_URL_ECR", f"{standin.url}/aws/ecr")
    push(capsys, tmp_path, clouds.ref(ECR_HOST, f"{unique}/app"), "aws", unique)
    assert standin.subjects[-1] == f"ci-session-{unique}"
    audience = standin.gcp_provider(
        "//iam.googleapis.com/projects/7/locations/global/workloadIdentityPools/gh-pool/providers/github"
    )
    external = {
        "type": "external_account",
        "audience": audience,
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": f"{standin.url}/gcp/sts/v1/token",
        "credential_source": {
            "url": f"{standin.url}/actions/idtoken?audience={audience}",
            "headers": {"Authorization": f"bearer {standin.actions_request_token}"},
            "format": {"type": "json", "subject_token_field_name": "value"},
        },
    }
    (tmp_path / "gha-creds.json").write_text(json.dumps(external))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "gha-creds.json"))
    push(capsys, tmp_path, clouds.ref(GAR_HOST, f"{unique}/app"), "gcp", unique)
    assert standin.subjects[-1] == f"{audience} file-token"
