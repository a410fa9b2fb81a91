"""Registry access shared by the artifact commands, signing, the image scanner and the runner.

``reference`` parses ``oci://`` references, ``credentials`` finds what to log in with,
``transport`` is the single HTTP seam (auth challenges, retries), ``client`` holds the
distribution API verbs and ``oci`` the typed documents.
"""

from lockgate.registry.client import FetchedManifest, RegistryClient
from lockgate.registry.credentials import Credentials
from lockgate.registry.oci import Descriptor, ImageIndex, ImageManifest, Referrers, sha256_digest
from lockgate.registry.reference import Reference, parse
from lockgate.registry.transport import RetryPolicy, Transport

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
    "parse",
    "sha256_digest",
]
