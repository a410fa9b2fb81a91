"""The pure parts of cloud registry credentials: SigV4, which hosts a provider serves, the cache."""

from __future__ import annotations

import datetime
import threading

import pytest

from lockgate.errors import UsageError
from lockgate.registry import cloud
from lockgate.registry.cloud import cache, sigv4
from lockgate.registry.credentials import Credentials


def test_sigv4_matches_the_aws_test_suite_get_vanilla_example() -> None:
    keys = sigv4.AwsKeys("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    headers = sigv4.sign(
        "GET",
        "https://example.amazonaws.com/",
        {},
        b"",
        keys=keys,
        region="us-east-1",
        service="service",
        now=datetime.datetime(2015, 8, 30, 12, 36, tzinfo=datetime.UTC),
    )
    assert headers["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;x-amz-date, "
        "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    )


@pytest.mark.parametrize(
    ("provider", "host", "region"),
    [
        ("aws", "123456789012.dkr.ecr.eu-west-1.amazonaws.com", "eu-west-1"),
        ("aws", "123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com", "us-gov-west-1"),
        ("aws", "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn:443", "cn-north-1"),
        ("gcp", "europe-west4-docker.pkg.dev", ""),
        ("gcp", "gcr.io", ""),
        ("gcp", "eu.gcr.io", ""),
        ("azure", "contoso.azurecr.io", ""),
    ],
)
def test_a_provider_serves_its_cloud_registry_hosts(provider: str, host: str, region: str) -> None:
    found = cloud.registry_of(provider, host)
    assert found is not None and found.region == region


@pytest.mark.parametrize(
    ("provider", "host"),
    [
        ("aws", "ghcr.io"),
        ("aws", "123456789012.dkr.ecr.eu-west-1.amazonaws.com.evil.example"),
        ("aws", "public.ecr.aws"),
        ("gcp", "docker.pkg.dev.evil.example"),
        ("gcp", "123456789012.dkr.ecr.eu-west-1.amazonaws.com"),
        ("azure", "contoso.azurecr.io.evil.example"),
        ("generic", "contoso.azurecr.io"),
    ],
)
def test_a_provider_serves_no_other_host(provider: str, host: str) -> None:
    assert cloud.registry_of(provider, host) is None


def test_a_host_the_provider_does_not_serve_is_refused_before_any_token_is_made() -> None:
    with pytest.raises(UsageError, match=r"ghcr\.io is not one"):
        cloud.credentials("aws", "ghcr.io", env={})


def _minted(now: float, lifetime: float) -> cache.Minted:
    return cache.Minted(Credentials("AWS", "pw"), expires_at=now + lifetime, issued_at=now)


def test_the_cache_mints_once_per_lifetime_and_renews_shortly_before_expiry() -> None:
    now = [1000.0]
    tokens = cache.TokenCache(clock=lambda: now[0])
    made: list[float] = []

    def mint() -> cache.Minted:
        made.append(now[0])
        return _minted(now[0], 12 * 3600)

    for _ in range(1000):
        tokens.get(("aws", "role", "host"), mint)
    assert len(made) == 1
    now[0] += 12 * 3600 - 301  # five minutes and a second before expiry: still fresh
    tokens.get(("aws", "role", "host"), mint)
    assert len(made) == 1
    now[0] += 2
    tokens.get(("aws", "role", "host"), mint)
    assert len(made) == 2
    tokens.get(("aws", "other-role", "host"), mint)  # another identity has its own entry
    assert len(made) == 3


def test_a_short_token_is_renewed_a_fifth_of_its_life_early() -> None:
    assert _minted(0.0, 60).renew_at() == 48.0


def test_concurrent_asks_for_one_identity_mint_once() -> None:
    tokens = cache.TokenCache()
    made: list[int] = []
    gate = threading.Event()

    def mint() -> cache.Minted:
        gate.wait(1)
        made.append(1)
        return _minted(0.0, 10**10)

    threads = [threading.Thread(target=tokens.get, args=(("k",), mint)) for _ in range(20)]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join()
    assert made == [1]


def test_failures_are_not_cached() -> None:
    tokens = cache.TokenCache()
    calls: list[int] = []

    def refuse() -> cache.Minted:
        calls.append(1)
        raise cloud.CloudAuthError("refused")

    for _ in range(2):
        with pytest.raises(cloud.CloudAuthError):
            tokens.get(("k",), refuse)
    assert len(calls) == 2


def test_credentials_never_show_their_secret() -> None:
    identity = cloud.Identity(provider="aws", name="ServiceAccount a/b", token=lambda: "SECRET-TOKEN")
    assert "SECRET-TOKEN" not in repr(identity) and "SECRET-TOKEN" not in identity.key


def test_ecr_api_endpoints_follow_the_registry_partition() -> None:
    china = cloud.registry_of("aws", "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn")
    assert china is not None and (china.region, china.domain) == ("cn-north-1", "amazonaws.com.cn")
