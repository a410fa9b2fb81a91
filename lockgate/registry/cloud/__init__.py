"""Cloud registry credentials: ``provider: aws | azure | gcp`` as Flux's OCIRepository has it.

Where it sits: ``RegistryClient.for_reference(provider=...)`` asks ``credentials`` for the
registry host instead of the Docker config. Each provider answers only for its own registry
hosts (``registry_of``: ECR ``<account>.dkr.ecr.<region>.amazonaws.com``, Artifact Registry
``<location>-docker.pkg.dev`` and ``gcr.io``, ACR ``<name>.azurecr.io``), so a cloud token
is never sent to another host. The identity is the process's own (the runner's workload
identity, a CI job's federated token) or, with an ``Identity`` carrying a ServiceAccount
token (the runner's per-sync ``serviceAccountName``), the role or identity annotated on that
ServiceAccount. The provider modules (``aws``, ``gcp``, ``azure``) are imported only when
that provider is used; they speak the documented HTTP exchanges with ``requests`` (no cloud
SDK: README, dependency table). Minted credentials are kept in ``cache.TokenCache`` until
shortly before they expire, shared by every client of the same identity and registry, and
dropped when a registry refuses them (``forgetting``, a ``Transport.on_refused`` hook).
Errors name the provider, the identity and the registry, never a token.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from lockgate.errors import AuthError, LockgateError, UsageError
from lockgate.registry.cloud.cache import DEFAULT_CACHE, Minted, TokenCache
from lockgate.registry.credentials import Credentials

Provider = Literal["generic", "aws", "azure", "gcp"]
PROVIDERS: tuple[Provider, ...] = ("generic", "aws", "azure", "gcp")

_ECR = re.compile(
    r"^(\d{12})\.dkr[.-]ecr(-fips)?\.([a-z0-9-]+)\.(amazonaws\.com(\.cn)?|sc2s\.sgov\.gov|c2s\.ic\.gov)$"
)
_GAR = re.compile(r"^([a-z0-9-]+)-docker\.pkg\.dev$")
_GCR = re.compile(r"^([a-z]+\.)?gcr\.io$")
_ACR = re.compile(r"^[a-z0-9]{5,50}\.azurecr\.(io|cn|us)$")

#: what each provider serves, for messages
HOSTS = {
    "aws": "ECR hosts <account>.dkr.ecr.<region>.amazonaws.com",
    "gcp": "Artifact Registry <location>-docker.pkg.dev and gcr.io",
    "azure": "ACR hosts <name>.azurecr.io",
}


class CloudAuthError(AuthError):
    """A cloud token service refused or could not be reached; names provider, identity and registry."""


@dataclass(frozen=True)
class CloudRegistry:
    """A registry host a provider serves; ``region`` for ECR (the API endpoint's region)."""

    provider: Provider
    host: str
    region: str = ""
    #: how the registry itself is reached (ACR's /oauth2/exchange is on it): https but for --insecure
    scheme: str = "https"
    #: the partition's domain of the AWS API endpoints (amazonaws.com, amazonaws.com.cn...)
    domain: str = "amazonaws.com"


def registry_of(provider: str, host: str) -> CloudRegistry | None:
    """The cloud registry ``host`` (port ignored) is for ``provider``, or None when it is not one."""
    hostname = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    hostname = hostname.lower()
    if provider == "aws":
        match = _ECR.match(hostname)
        return CloudRegistry("aws", host, match.group(3), domain=match.group(4)) if match else None
    if provider == "gcp":
        return CloudRegistry("gcp", host) if _GAR.match(hostname) or _GCR.match(hostname) else None
    if provider == "azure":
        return CloudRegistry("azure", host) if _ACR.match(hostname) else None
    return None


def misfit(provider: str, url: str) -> str | None:
    """Why ``provider`` cannot serve ``url``'s registry (None when it can, or url is no reference)."""
    from lockgate.registry import reference

    try:
        host = reference.parse(url).host
    except LockgateError:
        return None
    if provider == "generic" or registry_of(provider, host) is not None:
        return None
    return f"provider {provider} serves {HOSTS.get(provider, 'no hosts')}; {host} is not one"


@dataclass(frozen=True)
class Identity:
    """A per-sync identity: a ServiceAccount token (TokenRequest, the provider's audience) and
    what the ServiceAccount's annotations name. ``name`` is ``ServiceAccount ns/name``; ``token``
    makes a token for it with the provider's audience, only when credentials must be minted."""

    provider: Provider
    name: str
    #: asked only when the cache has no fresh credentials (a TokenRequest each time)
    token: Callable[[], str] = field(repr=False, compare=False)
    #: aws: eks.amazonaws.com/role-arn
    role_arn: str = ""
    #: gcp: //iam.googleapis.com/<workload identity provider>
    audience: str = ""
    #: gcp: iam.gke.io/gcp-service-account (impersonated when set)
    service_account: str = ""
    #: azure: azure.workload.identity/client-id and tenant-id
    client_id: str = ""
    tenant_id: str = ""

    @property
    def key(self) -> str:
        """What identifies it in the cache (never the token, which rotates)."""
        return "|".join(
            (self.name, self.role_arn, self.audience, self.service_account, self.client_id, self.tenant_id)
        )


class _Module(Protocol):
    def mint(
        self, registry: CloudRegistry, identity: Identity | None, env: Mapping[str, str]
    ) -> Minted: ...  # pragma: no cover

    def describe(self, identity: Identity | None, env: Mapping[str, str]) -> str: ...  # pragma: no cover


def check_provider(provider: str, where: str) -> Provider:
    if provider not in PROVIDERS:
        raise UsageError(f"{where}: provider {provider!r} is not one of {', '.join(PROVIDERS)}")
    return provider


def credentials(
    provider: str,
    host: str,
    *,
    identity: Identity | None = None,
    env: Mapping[str, str] | None = None,
    cache: TokenCache | None = None,
    insecure: bool = False,
) -> Minted | None:
    """Credentials for ``host`` from ``provider`` (None for ``generic``), from the cache while
    they are fresh. A host the provider does not serve is a usage error: the token is not sent."""
    if provider == "generic":
        return None
    registry = registry_of(provider, host)
    if registry is None:
        raise UsageError(
            f"provider {provider} serves {HOSTS.get(provider, 'no hosts')}; {host} is not one "
            "(use provider generic and a Docker config or secretRef for it): no cloud token is sent to it"
        )
    if insecure:
        registry = replace(registry, scheme="http")
    env = os.environ if env is None else env
    module: _Module = importlib.import_module(f"lockgate.registry.cloud.{provider}")
    who = module.describe(identity, env)
    key = (provider, who if identity is None else identity.key, registry.host, registry.region)
    return (cache or DEFAULT_CACHE).get(key, lambda: module.mint(registry, identity, env))


def forgetting(credentials: Credentials, cache: TokenCache | None = None) -> Callable[[], None]:
    """A ``Transport.on_refused`` hook: drop ``credentials`` from the cache when a registry refuses them."""
    return lambda: (cache or DEFAULT_CACHE).forget_credentials(credentials)
