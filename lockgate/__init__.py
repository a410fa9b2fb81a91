"""lockgate: CI-native GitOps with signed Gitless OCI artifacts.

This package is the shared core: the artifact contract, registry access, signing and
verification, manifest loading, errors and the click CLI root. The CI side lives in
``action`` and the cluster side in ``runner``; both import this package, never each other.
"""

__version__ = "0.1.0"
