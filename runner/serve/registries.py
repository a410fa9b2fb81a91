"""The registry clients ``serve`` keeps: one per host and Secrets (credentials, certificates,
proxy), shared by passes, cheap checks and the status page, so they reuse connections and tokens
(``lockgate status --web`` builds its own, for the syncs of the runner's configuration).

A client built from a Secret is rebuilt after ``SECRET_CACHE_SECONDS`` (Secrets rotate); one
without credentials is kept for the life of the process. A sync with ``spec.provider`` gets its
credentials from the cloud token cache at each call, and the client kept for its host and
identity while they are the same (a ServiceAccount's annotations are re-read as a Secret is).
Each host and Secret has one ``RegistryCache`` for the life of the process, handed to every
client built for them: the
referrers of an unchanged digest cost one HEAD per check, and an attestation already
verified is not verified again (``lockgate.registry.cache``). ``new_counts`` hands the
requests made since it was last asked to the metrics.
"""

from __future__ import annotations

import threading
import time

from lockgate import registry
from lockgate.registry import cloud
from lockgate.registry.cache import RegistryCache
from runner.kube.client import Kube
from runner.pipeline import cloudidentity, secretrefs, source
from runner.pipeline import reconcile as pipeline

#: how long a client built from a credentials Secret is reused before the Secret is read again
SECRET_CACHE_SECONDS = 60.0


class Registries:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._clients: dict[tuple[str, str], tuple[float, registry.RegistryClient]] = {}
        self._caches: dict[tuple[str, str], RegistryCache] = {}
        self._lock = threading.Lock()
        self._seen: dict[int, dict[str, int]] = {}
        self._identities: dict[tuple[str, str, str], tuple[float, cloud.Identity]] = {}

    def client(self, options: pipeline.SyncOptions) -> registry.RegistryClient:
        """The client for ``options``' source: its host and the Secrets it names, if any."""
        if options.source.provider != "generic":
            return self._cloud_client(options)
        ref = registry.parse(options.source.url)
        spec = options.source
        if ref.layout is not None:
            # a directory, not a host: never shared between syncs (every layout has one "host"),
            # and reached under the sync's own allowed root; opening one costs two stats
            return registry.RegistryClient.for_reference(ref, layout_tree=spec.layout_tree())
        # the certificate and proxy Secrets and insecure make a different client too
        names = (spec.secret_ref, spec.cert_secret_ref, spec.proxy_secret_ref)
        secret = any(names)
        key = (ref.host, f"{options.namespace}/{names}/{spec.insecure}" if secret or spec.insecure else "")
        now = time.monotonic()
        with self._lock:
            cached = self._clients.get(key)
            if cached is not None and (not secret or now - cached[0] < SECRET_CACHE_SECONDS):
                return cached[1]
        creds = None
        reader = secretrefs.SecretReader(self.kube, pipeline.runner_namespace(options.namespace))
        if spec.secret_ref:
            creds = reader.registry_credentials(spec.secret_ref, ref.host)
        transport = source.transport_options(spec, reader)
        with self._lock:
            cache = self._caches.setdefault(key, RegistryCache())
        client = registry.RegistryClient.for_reference(ref, credentials=creds, cache=cache, options=transport)
        with self._lock:
            self._clients[key] = (now, client)
        return client

    def _cloud_client(self, options: pipeline.SyncOptions) -> registry.RegistryClient:
        """A client with ``spec.provider``'s credentials: asked for at every call (the cloud token
        cache answers while they are fresh) and the kept client reused while they are the same."""
        spec = options.source
        ref = registry.parse(spec.url)
        namespace = pipeline.runner_namespace(options.namespace)
        account = spec.identity_account or ""
        names = (spec.cert_secret_ref, spec.proxy_secret_ref)
        key = (ref.host, f"{spec.provider}:{namespace}/{account}/{names}")
        identity = None
        if spec.identity_account is not None:
            identity = self._identity(namespace, spec.identity_account, spec.provider)
        minted = cloud.credentials(spec.provider, ref.host, identity=identity, insecure=spec.insecure)
        with self._lock:
            cached = self._clients.get(key)
            if (
                cached is not None
                and minted is not None
                and cached[1].transport.credentials is minted.credentials
                and (not any(names) or time.monotonic() - cached[0] < SECRET_CACHE_SECONDS)
            ):
                return cached[1]
            cache = self._caches.setdefault(key, RegistryCache())
        creds = minted.credentials if minted is not None else None
        # a cloud registry behind a private CA or a proxy: its Secrets are read as for any sync
        transport = source.transport_options(spec, secretrefs.SecretReader(self.kube, namespace))
        client = registry.RegistryClient.for_reference(
            ref, credentials=creds, cache=cache, insecure=spec.insecure, options=transport
        )
        if creds is not None:
            client.transport.on_refused = cloud.forgetting(creds)
        with self._lock:
            self._clients[key] = (time.monotonic(), client)
        return client

    def _identity(self, namespace: str, account: str, provider: str) -> cloud.Identity:
        """The ServiceAccount's annotated identity, read again after ``SECRET_CACHE_SECONDS``
        (as a Secret is), so a check costs no API request while it is fresh."""
        key = (namespace, account, provider)
        now = time.monotonic()
        with self._lock:
            known = self._identities.get(key)
        if known is not None and now - known[0] < SECRET_CACHE_SECONDS:
            return known[1]
        found = cloudidentity.identity(self.kube, namespace, account, provider)
        with self._lock:
            self._identities[key] = (now, found)
        return found

    def new_counts(self) -> dict[str, int]:
        """Requests by verb made by every kept client since the last call."""
        with self._lock:
            clients = [client for _, client in self._clients.values()]
        delta: dict[str, int] = {}
        for client in clients:
            seen = self._seen.setdefault(id(client), {})
            for verb, n in client.counts.items():
                if n > seen.get(verb, 0):
                    delta[verb] = delta.get(verb, 0) + n - seen.get(verb, 0)
                    seen[verb] = n
        return delta
