"""``lockgate status --web``: the status page on loopback, against a cluster without ``serve``.

It reads what ``lockgate status`` reads (the inventory Secrets, plus the Events on them and
the artifacts' provenance annotations) with the caller's kubeconfig, so it needs no
running ``serve`` and no token: it listens on loopback only. What only a running ``serve``
knows (next pass, change sets, unhealthy objects, drift) is shown as such. It runs until
Ctrl-C; a browser is opened only when asked and a display exists.

The provenance of a sync the namespace's runner runs is read as that runner reads its
registry: ``InstalledRegistries`` finds the runner's configuration as ``lockgate rollback``
does (``runner.pipeline.installed``) and asks ``serve``'s ``Registries`` for the sync's client
(``secretRef``, ``certSecretRef``, ``proxySecretRef``); any other sync gets the machine's
credentials (``docker login``), as before.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sys
import threading
import time
import webbrowser
from collections.abc import Callable
from pathlib import Path

from lockgate import registry
from lockgate.errors import LockgateError, UsageError
from runner.kube.client import Kube
from runner.pipeline import installed
from runner.pipeline.reconcile import SyncOptions, check_name, runner_namespace
from runner.serve import listener
from runner.serve.http import HttpServers, parse_address
from runner.serve.registries import SECRET_CACHE_SECONDS, Registries
from runner.serve.web import app, cluster

DEFAULT_ADDRESS = "127.0.0.1:0"

log = logging.getLogger(__name__)


class InstalledRegistries:
    """``cluster.RegistryFor`` for ``status --web``: the client a sync's runner would use."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self._kube, self._namespace = kube, namespace
        self._registries = Registries(kube)
        self._lock = threading.Lock()
        self._read: tuple[float, dict[str, SyncOptions]] | None = None

    def __call__(self, sync: str, url: str) -> registry.RegistryClient:
        options = self._installed().get(sync)
        if options is None or registry.parse(options.source.url).host != registry.parse(url).host:
            return cluster.anonymous_registry(sync, url)
        return self._registries.client(options)

    def _installed(self) -> dict[str, SyncOptions]:
        """The runner's syncs by name, read again after ``SECRET_CACHE_SECONDS`` (it may change)."""
        with self._lock:
            if self._read is not None and time.monotonic() - self._read[0] < SECRET_CACHE_SECONDS:
                return self._read[1]
            try:
                loaded, _ = installed.load(self._kube, self._namespace)
                # a sync without a runner namespace is the runner's own: the one it runs in
                syncs = {
                    o.name: o if o.namespace else dataclasses.replace(o, namespace=self._namespace)
                    for o in loaded.syncs
                }
            except LockgateError as exc:  # no runner here, or one this machine cannot read
                log.debug("no runner configuration in %s: %s", self._namespace, exc.message)
                syncs = {}
            self._read = (time.monotonic(), syncs)
            return syncs


def has_display() -> bool:
    return sys.platform in ("darwin", "win32") or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    )


def url_of(address: str, port: int) -> str:
    host, _ = parse_address(address)
    host = host or "127.0.0.1"
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"


def run(
    *,
    name: str | None = None,
    namespace: str | None = None,
    kubeconfig: Path | None = None,
    context: str | None = None,
    address: str = DEFAULT_ADDRESS,
    open_browser: bool = True,
    announce: Callable[[str], None] = print,
    stop: threading.Event | None = None,
) -> None:
    """Serve the page until SIGINT/SIGTERM (or ``stop``); ``announce`` gets the URL first."""
    if not app.is_loopback(address):
        raise UsageError(
            f"--address {address!r}: status --web listens on loopback only (e.g. 127.0.0.1:8000); "
            "to share the page, enable Runner spec.statusPage in lockgate serve"
        )
    if name is not None:
        check_name(name)
    ns = runner_namespace(namespace)
    kube = Kube.from_kubeconfig(kubeconfig, context=context)
    reader = cluster.Reader(kube, namespaces=lambda: [ns], registry_for=InstalledRegistries(kube, ns))
    servers = HttpServers(app.build_app(reader, loopback_only=True), [address], limits=listener.PAGE)
    servers.start()
    done = stop or threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        url = url_of(address, servers.ports[0]) + (f"sync/{name}" if name else "")
        announce(f"lockgate status page for namespace {ns}: {url} (Ctrl-C to stop)")
        if open_browser and has_display():
            webbrowser.open(url)
        done.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        servers.stop(timeout=2.0)
