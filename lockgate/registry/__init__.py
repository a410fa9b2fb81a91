"""Registry access shared by the artifact commands, signing, the image scanner and the runner.

``reference`` parses ``oci://`` references, ``credentials`` finds what to log in with,
``transport`` is the single HTTP seam (auth challenges, retries), ``connection`` its TLS,
proxy and http-or-https settings, ``client`` holds the distribution API verbs and ``oci`` the
typed documents. ``layout_dir`` offers the same verbs over an ``oci-layout://`` directory, and
``copy`` moves an artifact with its signatures and referrers between any two of them.

The names below are loaded on first use (PEP 562): importing ``lockgate.registry.oci`` or
``reference`` (as packing and ``lockgate build`` do) must not import the HTTP stack, which is
a third of a small command's start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lockgate.registry.client import FetchedManifest, RegistryClient
    from lockgate.registry.connection import TransportOptions
    from lockgate.registry.credentials import Credentials
    from lockgate.registry.oci import Descriptor, ImageIndex, ImageManifest, Referrers, sha256_digest
    from lockgate.registry.reference import Reference, parse, repository_name
    from lockgate.registry.transport import RetryPolicy, Transport

_WHERE = {
    "FetchedManifest": "client",
    "RegistryClient": "client",
    "Credentials": "credentials",
    "Descriptor": "oci",
    "ImageIndex": "oci",
    "ImageManifest": "oci",
    "Referrers": "oci",
    "sha256_digest": "oci",
    "Reference": "reference",
    "parse": "reference",
    "repository_name": "reference",
    "RetryPolicy": "transport",
    "Transport": "transport",
    "TransportOptions": "connection",
}

__all__ = [
    "Credentials",
    "Descriptor",
    "FetchedManifest",
    "ImageIndex",
    "ImageManifest",
    "Reference",
    "Referrers",
    "RegistryClient",
    "RetryPolicy",
    "Transport",
    "TransportOptions",
    "parse",
    "repository_name",
    "sha256_digest",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
