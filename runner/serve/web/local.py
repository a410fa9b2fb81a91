"""``lockgate status --web``: the status page on loopback, against a cluster without ``serve``.

It reads what ``lockgate status`` reads (the inventory Secrets, plus the Events on them and
the artifacts' provenance annotations) with the caller's kubeconfig, so it needs no
running ``serve`` and no token: it listens on loopback only. What only a running ``serve``
knows (next pass, change sets, unhealthy objects, drift) is shown as such. It runs until
Ctrl-C; a browser is opened only when asked and a display exists.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path

from lockgate.errors import UsageError
from runner.kube.client import Kube
from runner.pipeline.reconcile import check_name, runner_namespace
from runner.serve import listener
from runner.serve.http import HttpServers, parse_address
from runner.serve.web import app, cluster

DEFAULT_ADDRESS = "127.0.0.1:0"


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
    reader = cluster.Reader(kube, namespaces=lambda: [ns])
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
