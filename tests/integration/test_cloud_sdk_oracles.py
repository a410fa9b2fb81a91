"""The clouds' own SDKs against the same stand-ins as lockgate: they must obtain the same tokens.

The token services cannot run here (``cloud_support.CloudStandIn`` stands in for each, a
strict judge of every documented field). Whether the judge and lockgate agree on what AWS,
Google and Microsoft expect is decided by a third party: the official SDK of each cloud
(botocore, google-auth, azure-identity; dev dependencies only, never imported by lockgate).
The stand-in derives every token from the fields that decide it, so an SDK and lockgate that
send the same request get the same token, and any difference in what they send shows as a
different token or a refusal. Each SDK must succeed against the stand-in first: a stand-in
that refused what the SDK sends would be judging by its own rules, not the cloud's.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import botocore.session
import google.auth.transport.requests
import pytest
from azure.identity import WorkloadIdentityCredential
from google.auth import identity_pool, impersonated_credentials

from lockgate.registry import cloud
from lockgate.registry.cloud import aws as lockgate_aws
from lockgate.registry.cloud import http as cloud_http
from lockgate.registry.cloud import sigv4
from lockgate.registry.cloud.cache import TokenCache
from tests.integration.cloud_fixtures import Clouds, clean_env, clouds
from tests.integration.cloud_support import ACR_HOST, ECR_HOST, GAR_HOST

__all__ = ["clean_env", "clouds"]  # fixtures, used by name

SCOPE = "https://www.googleapis.com/auth/cloud-platform"
ROLE = "arn:aws:iam::123456789012:role/oracle"


def _lockgate(provider: str, host: str, clouds: Clouds, env: dict[str, str]) -> str:
    """The registry secret lockgate mints for ``host`` with ``env`` (a fresh cache)."""
    minted = cloud.credentials(provider, f"{host}:{clouds.port}", env=env, cache=TokenCache(), insecure=True)
    assert minted is not None
    return minted.credentials.secret


def test_botocore_assumes_the_role_and_gets_the_ecr_token_lockgate_gets(
    clouds: Clouds, tmp_path: Path, unique: str
) -> None:
    standin = clouds.standin
    token = f"irsa-{unique}"
    standin.trusted_tokens.add(token)
    (tmp_path / "web-identity").write_text(token)
    env = {
        "AWS_ROLE_ARN": ROLE,
        "AWS_WEB_IDENTITY_TOKEN_FILE": str(tmp_path / "web-identity"),
        "AWS_ROLE_SESSION_NAME": f"oracle-{unique[-6:]}",
        "AWS_ENDPOINT_URL_STS": f"{standin.url}/aws/sts",
        "AWS_ENDPOINT_URL_ECR": f"{standin.url}/aws/ecr",
    }
    ours = _lockgate("aws", ECR_HOST, clouds, env)
    session = botocore.session.get_session()
    sts = session.create_client("sts", region_name="eu-west-1", endpoint_url=f"{standin.url}/aws/sts/")
    assumed = sts.assume_role_with_web_identity(
        RoleArn=ROLE, RoleSessionName=env["AWS_ROLE_SESSION_NAME"], WebIdentityToken=token
    )["Credentials"]
    registry = cloud.registry_of("aws", ECR_HOST)
    assert registry is not None
    keys = lockgate_aws.keys(registry, None, env, cloud_http.Who("aws", "oracle", ECR_HOST))
    assert (keys.access_key_id, keys.secret_access_key, keys.session_token) == (
        assumed["AccessKeyId"],
        assumed["SecretAccessKey"],
        assumed["SessionToken"],
    )
    assert _botocore_ecr_password(standin.url, keys) == ours
    # long-term keys (an IAM user's: no session token), as the environment may hold them
    user = standin.aws_keys("ci-user", "ci-user", session=False)
    env = {
        "AWS_ACCESS_KEY_ID": user.access_key_id,
        "AWS_SECRET_ACCESS_KEY": user.secret_access_key,
        "AWS_ENDPOINT_URL_ECR": env["AWS_ENDPOINT_URL_ECR"],
    }
    assert _botocore_ecr_password(standin.url, user) == _lockgate("aws", ECR_HOST, clouds, env)
    assert not standin.refusals, standin.refusals


def _botocore_ecr_password(base: str, keys: sigv4.AwsKeys) -> str:
    ecr = botocore.session.get_session().create_client(
        "ecr",
        region_name="eu-west-1",
        endpoint_url=f"{base}/aws/ecr/",
        aws_access_key_id=keys.access_key_id,
        aws_secret_access_key=keys.secret_access_key,
        aws_session_token=keys.session_token or None,
    )
    data = ecr.get_authorization_token()["authorizationData"][0]
    user, _, password = base64.b64decode(data["authorizationToken"]).decode().partition(":")
    assert user == "AWS"
    return str(password)


def _external_account(
    clouds: Clouds, tmp_path: Path, token: str, audience: str, **more: str
) -> dict[str, object]:
    (tmp_path / "subject").write_text(token)
    return {
        "type": "external_account",
        "audience": audience,
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": f"{clouds.standin.url}/gcp/sts/v1/token",
        "credential_source": {"file": str(tmp_path / "subject")},
        **more,
    }


@pytest.mark.parametrize("impersonate", [False, True], ids=["federated", "impersonated"])
def test_google_auth_external_account_gets_the_token_lockgate_gets(
    impersonate: bool, clouds: Clouds, tmp_path: Path, unique: str
) -> None:
    standin = clouds.standin
    audience = standin.gcp_provider(
        "//iam.googleapis.com/projects/4242/locations/global/workloadIdentityPools/oracle-pool/providers/github"
    )
    standin.trusted_tokens.add(f"oidc-{unique}")
    account = f"ci-{unique[-6:]}@p.iam.gserviceaccount.com"
    more = {}
    if impersonate:
        more["service_account_impersonation_url"] = (
            f"{standin.url}/v1/projects/-/serviceAccounts/{account}:generateAccessToken"
        )
    info = _external_account(clouds, tmp_path, f"oidc-{unique}", audience, **more)
    (tmp_path / "external.json").write_text(json.dumps(info))
    ours = _lockgate(
        "gcp", GAR_HOST, clouds, {"GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "external.json")}
    )
    theirs = identity_pool.Credentials.from_info(info, scopes=[SCOPE])
    theirs.refresh(google.auth.transport.requests.Request())
    assert theirs.token == ours
    assert not standin.refusals, standin.refusals


def test_google_auth_impersonated_credentials_get_the_token_a_per_sync_identity_gets(
    clouds: Clouds, tmp_path: Path, unique: str
) -> None:
    """A sync's ServiceAccount (here its token, trusted as the cluster's would be) exchanged at
    STS, then the annotated service account impersonated: google-auth's impersonated
    credentials over its external_account ones do the same."""
    standin = clouds.standin
    audience = standin.gcp_provider(
        "//iam.googleapis.com/projects/4242/locations/global/workloadIdentityPools/clusters/providers/world"
    )
    token = f"sa-{unique}"
    standin.trusted_tokens.add(token)
    account = f"sync-{unique[-6:]}@p.iam.gserviceaccount.com"
    identity = cloud.Identity(
        "gcp", f"ServiceAccount apps/{unique}", lambda: token, audience=audience, service_account=account
    )
    env = {"LOCKGATE_GCP_STS_URL": f"{standin.url}/gcp/sts/v1/token", "LOCKGATE_GCP_IAM_URL": standin.url}
    minted = cloud.credentials(
        "gcp", f"{GAR_HOST}:{clouds.port}", identity=identity, env=env, cache=TokenCache(), insecure=True
    )
    assert minted is not None
    source = identity_pool.Credentials.from_info(
        _external_account(clouds, tmp_path, token, audience), scopes=[SCOPE]
    )
    theirs = impersonated_credentials.Credentials(
        source_credentials=source,
        target_principal=account,
        target_scopes=[SCOPE],
        iam_endpoint_override=f"{standin.url}/v1/projects/-/serviceAccounts/{account}:generateAccessToken",
    )
    theirs.refresh(google.auth.transport.requests.Request())
    assert theirs.token == minted.credentials.secret
    assert not standin.refusals, standin.refusals


def test_azure_identity_workload_identity_gets_the_entra_token_lockgate_exchanges_at_acr(
    clouds: Clouds, tmp_path: Path, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over TLS: MSAL (under azure-identity) takes only https authorities."""
    standin = clouds.standin
    standin.trusted_tokens.add(f"fed-{unique}")
    (tmp_path / "federated").write_text(f"fed-{unique}")
    client = f"cccccccc-0000-4000-8000-{unique[-6:]:0>12}"
    standin.azure_app("tenant-oracle", client, "file-token")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(standin.ca))
    env = {
        "AZURE_FEDERATED_TOKEN_FILE": str(tmp_path / "federated"),
        "AZURE_CLIENT_ID": client,
        "AZURE_TENANT_ID": "tenant-oracle",
        "AZURE_AUTHORITY_HOST": standin.tls_url,
    }
    refresh = _lockgate("azure", ACR_HOST, clouds, env)
    assert refresh.startswith("e30.")
    credential = WorkloadIdentityCredential(
        tenant_id="tenant-oracle",
        client_id=client,
        token_file_path=str(tmp_path / "federated"),
        authority=standin.tls_url,
        disable_instance_discovery=True,
    )
    theirs = credential.get_token("https://containerregistry.azure.net/.default")
    assert theirs.token == standin.exchanged[-1]
    assert not standin.refusals, standin.refusals
