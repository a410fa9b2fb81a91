"""Publishing what this cluster serves (a Runner's ``spec.capabilities``), for CI's Helm rendering.

The API server's ``/version`` and its discovery (every served group-version and kind) make
the cluster's capabilities (``lockgate.helm.capabilities``); they are published at the tag
named after the Runner's ``clusterName`` in ``spec.capabilities.url``, attested with the
runner's cosign key (``lockgate.helm.published``), so ``push --render --capabilities-from``
renders a chart as this cluster would, with no cluster credentials in CI. ``serve`` looks
every ``interval`` and publishes only a change (the same capabilities are the same digest);
``reconcile --config`` looks once per run. The key and the registry credentials are read
from Secrets of the runner namespace when publishing and kept in memory only.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from lockgate import registry
from lockgate.errors import LockgateError
from lockgate.helm import capabilities, published
from runner.kube.client import Kube
from runner.pipeline.options import runner_namespace
from runner.pipeline.runnerdoc import RunnerSettings
from runner.pipeline.secretrefs import SecretReader

SIGNING_FIELD = "spec.capabilities.signingSecretRef.name"
CREDENTIALS_FIELD = "spec.capabilities.secretRef.name"


def observe(kube: Kube, cluster: str) -> capabilities.Capabilities:
    """The cluster's capabilities as its API server answers now."""
    return capabilities.observed(cluster, kube.version(), kube.served())


def publish(
    settings: RunnerSettings, kube: Kube, namespace: str, *, now: dt.datetime | None = None
) -> published.Publication:
    """Observe and publish (or find already published) this cluster's capabilities; what was done.

    Raises ``LockgateError`` (the caller logs it and tries again later; a pass never waits on it)."""
    options = settings.capabilities
    assert options.url is not None and options.signing_secret_ref is not None  # checked at load
    ref = registry.parse(options.url)
    secrets = SecretReader(kube.own(), namespace)
    creds = (
        secrets.registry_credentials(options.secret_ref, ref.host, field=CREDENTIALS_FIELD)
        if options.secret_ref
        else None
    )
    client = registry.RegistryClient.for_reference(ref, credentials=creds, insecure=options.insecure)
    key = secrets.signing_key(options.signing_secret_ref, field=SIGNING_FIELD)
    caps = observe(kube, settings.cluster_name)
    return published.publish(client, ref.repository, caps, key, now=now)


def publish_once(settings: RunnerSettings, *, kubeconfig: Path | None, context: str | None) -> str:
    """``reconcile --config``'s look: publish now if ``spec.capabilities`` asks; what was done
    (an error is said, never raised: the passes do not depend on it)."""
    if settings.capabilities.url is None:
        return ""
    try:
        kube = Kube.from_kubeconfig(kubeconfig, context=context)
        return publish(settings, kube, runner_namespace(settings.namespace)).text
    except LockgateError as exc:
        return f"warning: capabilities not published: {exc.message}"
