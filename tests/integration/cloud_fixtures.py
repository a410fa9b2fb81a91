"""The cloud stand-in, its token-auth registry and the helpers the cloud identity tests share.

``clouds`` starts ``cloud_support.CloudStandIn`` (the clouds' token endpoints, stood in: they
cannot run here) and the real registry (Distribution, token auth) behind it, once per test
module; ``clean_env`` (autouse where imported) clears every cloud variable and the token cache
around each test, so a developer's own cloud environment never leaks into a test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate import cli as lockgate_cli
from lockgate.registry.cloud import cache as cloud_cache
from runner.pipeline import config, source
from tests.integration.artifacts_support import write_tree
from tests.integration.cloud_support import ACR_HOST, ECR_HOST, GAR_HOST, CloudStandIn, resolving
from tests.integration.registry_front_support import ISSUER, SERVICE
from tests.world.registry import TokenAuth, start_registry

_CLOUD_ENV = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL_ECR",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GCE_METADATA_HOST",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_AUTHORITY_HOST",
    "LOCKGATE_GCP_STS_URL",
    "LOCKGATE_GCP_IAM_URL",
    "LOCKGATE_PROVIDER",
]


@dataclasses.dataclass
class Clouds:
    standin: CloudStandIn
    port: int

    def ref(self, host: str, repo: str) -> str:
        return f"oci://{host}:{self.port}/{repo}:v1"


@pytest.fixture(scope="module")
def clouds(world_dir: Path) -> Iterator[Clouds]:
    standin = CloudStandIn(world_dir / "cloud-standin")
    auth = TokenAuth(
        realm=f"{standin.url}/token", service=SERVICE, issuer=ISSUER, certificate=standin.certificate
    )
    reg = start_registry(world_dir, name="cloud-registry", token=auth)
    standin.registry = reg.url
    with resolving([ECR_HOST, GAR_HOST, ACR_HOST]):
        yield Clouds(standin, int(standin.host.rsplit(":", 1)[1]))
    standin.stop()
    reg.stop()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, clouds: Clouds) -> Iterator[None]:
    for name in _CLOUD_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    cloud_cache.DEFAULT_CACHE.forget()
    clouds.standin.refusing = False
    yield
    cloud_cache.DEFAULT_CACHE.forget()


def irsa(
    monkeypatch: pytest.MonkeyPatch,
    clouds: Clouds,
    tmp_path: Path,
    role: str = "arn:aws:iam::123456789012:role/ci",
) -> str:
    token = f"irsa-{tmp_path.name}"
    clouds.standin.trusted_tokens.add(token)
    (tmp_path / "web-identity").write_text(token)
    monkeypatch.setenv("AWS_ROLE_ARN", role)
    monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(tmp_path / "web-identity"))
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", f"{clouds.standin.url}/aws/sts")
    monkeypatch.setenv("AWS_ENDPOINT_URL_ECR", f"{clouds.standin.url}/aws/ecr")
    return token


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = lockgate_cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def push(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    ref: str,
    provider: str,
    marker: str,
    *,
    apply: bool = False,
) -> None:
    """Push a small tree to ``ref`` with ``provider``; ``apply``: objects a cluster accepts
    (a Namespace and a ConfigMap) instead of ``write_tree``'s, which are only read."""
    tree = write_tree(tmp_path / "src", marker)
    if apply:
        tree = tmp_path / "applicable"
        tree.mkdir()
        (tree / "all.yaml").write_text(
            f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {marker}\n---\n"
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: {marker}\n"
            "data:\n  greeting: hello\n"
        )
    code, out = run_cli(capsys, "push", str(tree), ref, "--provider", provider, "--insecure")
    assert code == 0, out


def sync_spec(tmp_path: Path, url: str, **spec: Any) -> source.SourceSpec:
    doc = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": "cloudy"},
        "spec": {"url": url, "interval": "5m", "verify": {"insecureSkip": True}, **spec},
    }
    path = tmp_path / "sync.yaml"
    path.write_text(yaml.safe_dump(doc))
    (options,) = config.load(path).syncs
    # plain http: the stand-in registry edge is not on loopback by name (spec.insecure, issue 22 item 2)
    return dataclasses.replace(options.source, insecure=True)
