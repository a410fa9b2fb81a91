"""A registry with the OCI referrers API: go-containerregistry's, behind a paging front of ours.

Distribution 2.8 (the world's ``registry``) has no referrers API, so attestations and the
fleet read the tag-schema fallback there. This one answers ``GET /v2/<name>/referrers/<digest>``:
go-containerregistry v0.22.1's ``pkg/registry`` with ``WithReferrersSupport(true)``, in a main of
our own (``referrers_registry.go``, built by ``binaries`` from the Go module proxy). That
registry neither pages the list, nor filters it, nor answers ETags, and it reports a
referrer's config media type as its ``artifactType`` even when the manifest names its own; the
front in the same process (``host``) pages the list (``page_size`` a page, a ``Link`` to the
next), corrects ``artifactType`` from the manifest (the workaround lives here, not in
lockgate), filters by ``artifactType`` and gives each page an ``ETag`` (304 on
``If-None-Match``). ``raw_host`` serves go-containerregistry's handler unchanged over the same
storage, so a test can show what the registry itself answers. Storage is in memory.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.world import binaries
from tests.world.process import free_port, start, wait_until
from tests.world.registry import Registry

PROGRAM = "referrers-registry"
#: referrers a page: small, so a test's list is longer than one page
PAGE_SIZE = 10


@dataclass
class ReferrersRegistry(Registry):
    """``host`` is the front (the referrers API paged, with ETags); ``raw_host`` the registry as
    go-containerregistry serves it."""

    raw_host: str = ""
    page_size: int = PAGE_SIZE

    def counts(self) -> dict[str, int]:
        """Requests the front answered, by kind (``referrers``, ``referrers 304``, ``get manifests``...)."""
        with urllib.request.urlopen(f"{self.url}/_counts", timeout=5) as reply:
            value: dict[str, int] = json.load(reply)
        return value


def start_referrers_registry(
    workdir: Path, *, name: str = "referrers-registry", page_size: int = PAGE_SIZE
) -> ReferrersRegistry:
    root = workdir / name
    root.mkdir(parents=True, exist_ok=True)
    port, raw = free_port(), free_port()
    process = start(
        name,
        [
            binaries.binary(PROGRAM),
            f"-addr=127.0.0.1:{port}",
            f"-raw=127.0.0.1:{raw}",
            f"-page-size={page_size}",
        ],
        log=root / "registry.log",
    )
    found = ReferrersRegistry(
        host=f"127.0.0.1:{port}", process=process, raw_host=f"127.0.0.1:{raw}", page_size=page_size
    )

    def ready() -> bool:
        try:
            for host in (found.host, found.raw_host):
                with urllib.request.urlopen(f"http://{host}/v2/", timeout=1) as reply:
                    if reply.status != 200:
                        return False
            return True
        except (urllib.error.URLError, OSError):
            return False

    wait_until(process, ready, timeout=15, what="answering /v2/")
    return found
