"""What a cluster serves, as Helm's ``.Capabilities`` reads it: its Kubernetes version and its API
versions, one cluster's or the intersection of several. Pure.

A runner reads them from its API server (``/version`` and discovery) and publishes them signed
(``lockgate.helm.published``); CI renders a chart with them (``helm template --kube-version
--api-versions``), so a chart gating on ``.Capabilities.APIVersions.Has "monitoring.coreos.com/v1"``
or on the Kubernetes version renders as it would in that cluster, with no cluster credentials.

``api_versions`` holds each served group-version (``apps/v1``, ``v1``) and each of its kinds
(``apps/v1/Deployment``), the two forms ``Has`` is asked with, as Helm builds them from
discovery. Helm adds its own built-in group-versions to whatever ``--api-versions`` gives
(``helm template``), so an attested list can add what a cluster serves beyond them (CRDs,
``group/version/Kind`` forms), not take Helm's built-ins away.

For several clusters the intersection is what every one of them serves, at the lowest of their
Kubernetes versions; ``Rendering.differences`` says what some serve and others do not, so the
chart renders one artifact that fits them all and the user sees what it leaves out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lockgate.errors import VerificationError

#: the in-toto predicate type of a capabilities attestation
PREDICATE_TYPE = "https://lockgate.dev/attestations/capabilities/v1"
#: the media type of the published document (the artifact's layer and artifactType)
MEDIA_TYPE = "application/vnd.lockgate.capabilities.v1+json"
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")
#: a whole gitVersion as API servers write it (v1.36.3, v1.34.2-eks-113cf36, v1.33.5+k3s1)
_GIT_VERSION = re.compile(r"^v?\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.+-]*)?$")
#: what ``helm template --api-versions`` accepts as one entry: group/version or group/version/Kind
_API_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*(/[A-Za-z0-9][A-Za-z0-9.-]*){0,2}$")
MAX_API_VERSIONS = 20_000


@dataclass(frozen=True)
class Capabilities:
    """One cluster's: its name, its API server's ``gitVersion`` and its served API versions."""

    cluster: str
    kube_version: str
    api_versions: tuple[str, ...]

    def document(self) -> dict[str, Any]:
        """The published document (the predicate, without the time it was observed)."""
        return {
            "cluster": self.cluster,
            "kubeVersion": self.kube_version,
            "apiVersions": list(self.api_versions),
        }

    def predicate(self, observed_at: str) -> dict[str, Any]:
        return {**self.document(), "observedAt": observed_at}

    @classmethod
    def from_predicate(cls, predicate: Mapping[str, Any], where: str) -> Capabilities:
        """A verified predicate's capabilities; a ``VerificationError`` naming ``where`` when it
        does not hold them (a signer's bug, never a reason to render with a guess)."""
        cluster, version, apis = (predicate.get(k) for k in ("cluster", "kubeVersion", "apiVersions"))
        if not isinstance(cluster, str) or not isinstance(version, str) or not _GIT_VERSION.match(version):
            raise VerificationError(f"{where}: the capabilities have no valid cluster and kubeVersion")
        if not isinstance(apis, list) or len(apis) > MAX_API_VERSIONS:
            raise VerificationError(f"{where}: the capabilities' apiVersions is not a list of API versions")
        bad = [str(a)[:80] for a in apis if not isinstance(a, str) or not _API_VERSION.match(a)]
        if bad:
            raise VerificationError(
                f"{where}: the capabilities hold invalid API versions: {', '.join(bad[:3])}"
            )
        return cls(cluster=cluster, kube_version=version, api_versions=tuple(sorted(set(apis))))


def observed(cluster: str, version: Mapping[str, Any], served: Mapping[str, Sequence[str]]) -> Capabilities:
    """The capabilities from ``GET /version`` and discovery (group-version -> its kinds)."""
    git_version = str(version.get("gitVersion") or "")
    if _GIT_VERSION.match(git_version) is None:
        major, minor = version.get("major", ""), str(version.get("minor", "")).rstrip("+")
        git_version = f"v{major}.{minor}.0"
    found: set[str] = set()
    for group_version, kinds in served.items():
        found.add(group_version)
        found.update(f"{group_version}/{kind}" for kind in kinds)
    return Capabilities(cluster=cluster, kube_version=git_version, api_versions=tuple(sorted(found)))


def version_key(version: str) -> tuple[int, int, int]:
    found = _VERSION.match(version)
    if found is None:
        return (0, 0, 0)
    return (int(found.group(1)), int(found.group(2)), int(found.group(3) or 0))


@dataclass(frozen=True)
class Rendering:
    """What to render a chart with: a Kubernetes version and API versions, and what the clusters
    differ in (empty for one cluster)."""

    kube_version: str
    api_versions: tuple[str, ...]
    differences: tuple[str, ...] = field(default=())


def intersection(clusters: Sequence[Capabilities]) -> Rendering:
    """What every cluster serves, at the lowest Kubernetes version; and how they differ."""
    if not clusters:
        raise ValueError("no clusters")
    common = set(clusters[0].api_versions)
    for caps in clusters[1:]:
        common &= set(caps.api_versions)
    lowest = min(clusters, key=lambda c: version_key(c.kube_version))
    differences: list[str] = []
    versions = {c.cluster: c.kube_version for c in clusters}
    if len(set(versions.values())) > 1:
        listed = ", ".join(f"{name} {version}" for name, version in versions.items())
        differences.append(f"Kubernetes versions differ ({listed}): rendered for {lowest.kube_version}")
    servers: dict[str, list[str]] = {}
    for caps in clusters:
        for api in set(caps.api_versions) - common:
            servers.setdefault(api, []).append(caps.cluster)
    grouped: dict[tuple[str, ...], list[str]] = {}
    for api, names in sorted(servers.items()):
        grouped.setdefault(tuple(names), []).append(api)
    names = [c.cluster for c in clusters]
    for serving, apis in grouped.items():
        missing = ", ".join(n for n in names if n not in serving)
        differences.append(f"served by {', '.join(serving)}, not by {missing}: {', '.join(apis)}")
    return Rendering(lowest.kube_version, tuple(sorted(common)), tuple(differences))
