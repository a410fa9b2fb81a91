"""TLS key material held in memory, and a ``requests`` adapter whose one ``ssl.SSLContext`` decides trust.

Shared by the two seams that speak TLS with credentials of their own: the Kubernetes API
server (``runner.kube.auth``) and registries (``lockgate.registry.connection``). ``ssl``
loads a client certificate and key only from a path, so ``private_file`` hands it one that
never touches a disk: an anonymous in-memory file (Linux ``memfd``) closed right after
loading; where there is no memfd, a 0600 file in a private 0700 directory, both removed
right after loading. ``TLSAdapter`` stops ``requests`` from pointing connections at
certifi's bundle or ``$REQUESTS_CA_BUNDLE``: the context it is given is the whole truth.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import requests
from requests.adapters import HTTPAdapter

if TYPE_CHECKING:  # typed only in types-requests
    from requests.adapters import _HostParams, _PoolKwargs

HAS_MEMFD = hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd")


@contextlib.contextmanager
def private_file(data: bytes, *, memfd: bool = HAS_MEMFD, directory: str | None = None) -> Iterator[str]:
    """A path that reads as ``data`` for the duration of the block, and is gone after it.

    A memfd lives in memory and vanishes with its last descriptor; the fallback is a
    0600 file in a fresh 0700 directory (``directory`` or the temp dir), both removed.
    """
    if memfd:
        try:
            fd = os.memfd_create("lockgate-tls", os.MFD_CLOEXEC)
        except OSError:  # a seccomp profile may refuse the syscall
            fd = -1
        if fd >= 0:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                yield f"/proc/self/fd/{fd}"
            finally:
                os.close(fd)
            return
    folder = tempfile.mkdtemp(prefix="lockgate-tls-", dir=directory)
    path = os.path.join(folder, "tls.pem")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.rmdir(folder)


class TLSAdapter(HTTPAdapter):
    """An adapter whose one SSL context alone decides trust, with a swappable client certificate."""

    def __init__(self, context: ssl.SSLContext, *, server_hostname: str = "", pool: int = 16) -> None:
        self._context = context
        self._server_hostname = server_hostname
        self._swap = threading.Lock()
        super().__init__(pool_connections=4, pool_maxsize=pool)

    @property
    def context(self) -> ssl.SSLContext:
        return self._context

    def _tls(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"ssl_context": self._context}
        if self._server_hostname:
            extra["server_hostname"] = self._server_hostname
        return extra

    def init_poolmanager(
        self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any
    ) -> None:
        self._sizes = (connections, maxsize, block)
        super().init_poolmanager(connections, maxsize, block, **{**pool_kwargs, **self._tls()})

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        return super().proxy_manager_for(proxy, **{**proxy_kwargs, **self._tls()})

    def cert_verify(self, conn: Any, url: str, verify: Any, cert: Any) -> None:
        """Nothing: requests would point the connection at certifi's bundle or $REQUESTS_CA_BUNDLE."""

    def build_connection_pool_key_attributes(
        self, request: requests.PreparedRequest, verify: Any, cert: Any = None
    ) -> tuple[_HostParams, _PoolKwargs]:
        host_params, _ = super().build_connection_pool_key_attributes(request, verify, cert)
        # no ca_certs or cert_file (urllib3 would load them into the shared context), and
        # cert_reqs as the context says, not as ``verify`` says
        required = self._context.verify_mode != ssl.CERT_NONE
        pool_kwargs: _PoolKwargs = {"cert_reqs": "CERT_REQUIRED" if required else "CERT_NONE"}
        return host_params, pool_kwargs

    def use_context(self, context: ssl.SSLContext) -> None:
        """New connections use ``context`` (a renewed client certificate); idle old ones are closed."""
        with self._swap:
            self._context = context
            old, proxies = self.poolmanager, list(self.proxy_manager.values())
            connections, maxsize, block = self._sizes
            self.init_poolmanager(connections, maxsize, block=block)
            self.proxy_manager = {}
        old.clear()
        for manager in proxies:
            manager.clear()
