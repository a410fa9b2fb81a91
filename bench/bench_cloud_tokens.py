"""Cloud token caching: 1,000 syncs' registry checks against one ECR stand-in.

Each check is what a pass does before anything else: credentials for the sync's identity
(``lockgate.registry.cloud``), a client, and a HEAD of the sync's tag on the real registry
(Distribution with token auth, accepting only what the stand-in minted). Syncs are spread
over ``IDENTITIES`` IRSA roles. The stand-in for AWS STS and ECR GetAuthorizationToken is
``tests.integration.cloud_support.CloudStandIn`` (the cloud cannot run here). Measured in the
same run: ours (the process-wide token cache) against the peer, the same checks minting
credentials at every check (no cache: what a check that logs in each time costs).

Scenarios: a 12-hour token (ECR's lifetime) lasts the whole run, so each identity costs one
token request; a 2-second token expires many times during the run, and each identity's
requests are spaced by at least four fifths of the lifetime: at most one request per
identity per token lifetime.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from bench.common import BenchResult
from lockgate import registry
from lockgate.registry import cloud
from lockgate.registry.cloud import cache as cloud_cache
from tests.integration.cloud_support import ECR_HOST, CloudStandIn, resolving
from tests.integration.registry_front_support import ISSUER, SERVICE
from tests.world.registry import TokenAuth, start_registry
from tests.world.world import World

SYNCS = 1000
IDENTITIES = 4
NAME = "bench_cloud_tokens"


def _envs(standin: CloudStandIn, workdir: Path) -> list[dict[str, str]]:
    envs = []
    for n in range(IDENTITIES):
        token = f"bench-irsa-{n}"
        standin.trusted_tokens.add(token)
        (workdir / f"token-{n}").write_text(token)
        envs.append(
            {
                "AWS_ROLE_ARN": f"arn:aws:iam::123456789012:role/tenant-{n}",
                "AWS_WEB_IDENTITY_TOKEN_FILE": str(workdir / f"token-{n}"),
                "AWS_ENDPOINT_URL_STS": f"{standin.url}/aws/sts",
                "AWS_ENDPOINT_URL_ECR": f"{standin.url}/aws/ecr",
            }
        )
    return envs


def _checks(
    standin: CloudStandIn, ref: registry.Reference, envs: list[dict[str, str]], cached: bool
) -> float:
    """Seconds for SYNCS checks; credentials from one shared cache (ours) or minted each time."""
    shared = cloud_cache.TokenCache()
    start = time.perf_counter()
    for sync in range(SYNCS):
        env = envs[sync % IDENTITIES]
        tokens = shared if cached else cloud_cache.TokenCache()
        minted = cloud.credentials("aws", ref.host, env=env, cache=tokens, insecure=True)
        assert minted is not None
        client = registry.RegistryClient.for_reference(ref, credentials=minted.credentials, insecure=True)
        assert client.head_manifest(ref.repository, "v1") is not None
    return time.perf_counter() - start


def _per_identity(standin: CloudStandIn, since: int) -> tuple[Counter[str], float]:
    """Token requests per identity since ``since``, and the shortest gap between two of one identity's."""
    stamps: dict[str, list[float]] = defaultdict(list)
    for when, subject in standin.minted_at[since:]:
        stamps[subject].append(when)
    gaps = [b - a for times in stamps.values() for a, b in itertools.pairwise(times)]
    return Counter({k: len(v) for k, v in stamps.items()}), min(gaps, default=float("inf"))


def run(world: World) -> list[BenchResult]:
    results: list[BenchResult] = []
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-cloud-") as tmp:
        workdir = Path(tmp)
        standin = CloudStandIn(workdir / "standin")
        auth = TokenAuth(f"{standin.url}/token", SERVICE, ISSUER, standin.certificate)
        reg = start_registry(workdir, name="cloud-bench-registry", token=auth)
        standin.registry = reg.url
        port = standin.host.rsplit(":", 1)[1]
        ref = registry.parse(f"oci://{ECR_HOST}:{port}/bench/app:v1")
        envs = _envs(standin, workdir)
        try:
            with resolving([ECR_HOST]):
                _push(ref, envs[0])
                for lifetime in (12 * 3600, 2):
                    standin.lifetime = lifetime
                    seen = len(standin.minted_at)
                    ours = _checks(standin, ref, envs, cached=True)
                    per_identity, gap = _per_identity(standin, seen)
                    seen = len(standin.minted_at)
                    peer = _checks(standin, ref, envs, cached=False)
                    peer_counts, _ = _per_identity(standin, seen)
                    lifetimes = max(ours / lifetime, 1.0)
                    label = "12 h token" if lifetime > 60 else f"{lifetime} s token"
                    results.append(
                        BenchResult(
                            NAME,
                            f"{SYNCS} checks, {IDENTITIES} identities, {label}: token requests",
                            float(sum(per_identity.values())),
                            "no cache",
                            float(sum(peer_counts.values())),
                            goal="<= 1 token request per identity per token lifetime",
                            unit="requests",
                            extra={
                                "per_identity": dict(per_identity),
                                "lifetimes_elapsed": round(lifetimes, 2),
                                "max_per_identity_per_lifetime": round(
                                    max(per_identity.values()) / lifetimes, 3
                                ),
                                "shortest_gap_s": round(gap, 3) if gap != float("inf") else None,
                                "renewal_gap_floor_s": round(lifetime * 0.8, 3),
                            },
                        )
                    )
                    results.append(
                        BenchResult(
                            NAME,
                            f"{SYNCS} checks, {IDENTITIES} identities, {label}: wall time",
                            ours,
                            "no cache",
                            peer,
                        )
                    )
        finally:
            standin.stop()
            reg.stop()
    return results


def _push(ref: registry.Reference, env: dict[str, str]) -> None:
    """One small artifact at ``ref`` (a manifest and its config), with the first identity."""
    import json

    from lockgate.registry.oci import sha256_digest

    minted = cloud.credentials("aws", ref.host, env=env, cache=cloud_cache.TokenCache(), insecure=True)
    assert minted is not None
    client = registry.RegistryClient.for_reference(ref, credentials=minted.credentials, insecure=True)
    config = b"{}"
    client.upload_blob(ref.repository, config, digest=sha256_digest(config), size=len(config))
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.empty.v1+json",
                "digest": sha256_digest(config),
                "size": 2,
            },
            "layers": [],
        }
    ).encode()
    client.put_manifest(ref.repository, "v1", manifest, "application/vnd.oci.image.manifest.v1+json")
