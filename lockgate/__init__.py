"""lockgate: CI-native GitOps with signed Gitless OCI artifacts.

This package is the shared core: the artifact contract and its pull path (``artifact``),
registry access (``registry``), signing and verification (``signing``), manifest loading
(``manifests``), object diffs (``diff``), kustomize/Helm rendering (``render``), semantic
versions (``semver``), errors and the click CLI root. Whatever both halves need lives
here, once. The CI side lives in ``action`` and the cluster side in ``runner``; both
import this package, never each other.
"""

__version__ = "0.1.0"
