"""``--capabilities-from``: render a chart for the clusters that will run it, from what their runners
attested (``lockgate.helm.published``), with no cluster credentials in CI.

``--cluster NAME`` (repeatable) names the clusters; ``--capabilities-key FILE`` (repeatable)
the runners' cosign public keys, as ``lockgate fleet --key`` takes them: a file named
``<clusterName>.pub`` is bound to that cluster when any file is named after one of the clusters
asked for (``lockgate.signing.keybinding``), so one runner's key cannot speak for another
cluster. Each cluster's attestation is verified before its capabilities are used; one that
does not verify fails the command (exit 4) naming it. With several clusters the chart is
rendered for their intersection (``capabilities.intersection``) and the differences are said.
The result goes into Helm's own ``--kube-version`` and ``--api-versions``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockgate.errors import UsageError
from lockgate.render import HelmOptions

if TYPE_CHECKING:  # the registry and crypto stacks load only when capabilities are asked for
    from lockgate import registry
    from lockgate.signing.policy import KeySetPolicy

log = logging.getLogger("lockgate.render")


@dataclass(frozen=True)
class CapabilitiesRequest:
    """``--capabilities-from``, ``--cluster`` and ``--capabilities-key``."""

    url: str | None = None
    clusters: tuple[str, ...] = ()
    keys: tuple[Path, ...] = ()

    @property
    def given(self) -> bool:
        return bool(self.url or self.clusters or self.keys)


def policy(request: CapabilitiesRequest) -> KeySetPolicy:
    """The runners' keys as one set, each bound to the cluster its file names (``<clusterName>.pub``)
    when any file is named after a cluster asked for."""
    from lockgate.signing import keybinding
    from lockgate.signing.policy import KeyPolicy, KeySetPolicy

    names = [path.name for path in request.keys]
    if len(set(names)) != len(names):
        raise UsageError("--capabilities-key: two key files have the same name; name each <clusterName>.pub")
    bound = keybinding.bound_to(names, bind=None, selects=lambda name: name in request.clusters)
    return KeySetPolicy(
        tuple(
            dataclasses.replace(KeyPolicy.from_file(path), cluster=bound[path.name]) for path in request.keys
        ),
        source=", ".join(str(p) for p in request.keys),
    )


def _check(request: CapabilitiesRequest, helm: HelmOptions, *, render: bool) -> str:
    if not request.url:
        raise UsageError("--cluster and --capabilities-key need --capabilities-from oci://REGISTRY/REPO")
    if not render:
        raise UsageError("--capabilities-from needs --render (it renders a Helm chart for the clusters)")
    if not request.clusters:
        raise UsageError(
            "--capabilities-from needs --cluster NAME: the clusterName whose capabilities to use"
        )
    if not request.keys:
        raise UsageError(
            "--capabilities-from needs --capabilities-key FILE: the public key of the runner that signed "
            "them (one per runner; <clusterName>.pub binds it to its cluster)"
        )
    if helm.kube_version:
        raise UsageError("--kube-version and --capabilities-from both set the Kubernetes version: keep one")
    return request.url


def for_clusters(
    request: CapabilitiesRequest,
    helm: HelmOptions,
    *,
    render: bool,
    client_for: Callable[[registry.Reference], registry.RegistryClient],
) -> HelmOptions:
    """``helm`` with the Kubernetes version and API versions the clusters attested (``--api-versions``
    given by hand are kept, added to them); ``helm`` itself when none were asked for."""
    if not request.given:
        return helm
    from lockgate import registry
    from lockgate.helm import capabilities, published

    url = _check(request, helm, render=render)
    ref = registry.parse(url)
    if ref.tag is not None or ref.digest is not None:
        raise UsageError(
            f"--capabilities-from {url}: name the repository only; each cluster's capabilities are at the "
            "tag named after it (--cluster)"
        )
    trusted = policy(request)
    unbound = [key.source for key in trusted.keys if key.cluster is None]
    if unbound and len(request.clusters) > 1:
        log.warning(
            "warning: %s bound to no cluster: trusted to attest for every cluster asked for; name each "
            "key file <clusterName>.pub after the cluster whose runner holds it",
            ", ".join(unbound),
        )
    client = client_for(ref)
    attested = [published.read(client, ref.repository, cluster, trusted) for cluster in request.clusters]
    for item in attested:
        caps = item.capabilities
        log.warning(
            "notice: rendering for %s: Kubernetes %s, %d API versions, observed %s, attested by %s",
            caps.cluster,
            caps.kube_version,
            len(caps.api_versions),
            item.observed_at,
            item.signer,
        )
    rendering = capabilities.intersection([item.capabilities for item in attested])
    for difference in rendering.differences:
        log.warning("notice: the clusters differ: %s (rendered for what all of them serve)", difference)
    extra = tuple(api for api in helm.api_versions if api not in rendering.api_versions)
    return dataclasses.replace(
        helm, kube_version=rendering.kube_version, api_versions=(*rendering.api_versions, *extra)
    )
