"""``lockgate diff PATH oci://...``: local manifests against a remote artifact, object by object.

Loads both sides with ``lockgate.manifests`` (after rendering the local side if asked),
pulls the remote artifact through the same safe path as ``pull``, and compares with
``compare.compare``. Exit status 1 when they differ, as diff(1) does.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from action.artifacts import compare, source
from action.artifacts import pull as pull_mod
from lockgate import manifests, registry


def diff(
    path: str,
    client: registry.RegistryClient,
    ref: registry.Reference,
    *,
    options: source.BuildOptions | None = None,
    media_type: str | None = None,
) -> compare.DiffResult:
    options = options or source.BuildOptions()
    with source.prepare(path, options) as root:
        base = root if root.is_dir() else root.parent
        local = manifests.load([root], relative_to=base)
        with tempfile.TemporaryDirectory(prefix="lockgate-diff-") as tmp:
            out = Path(tmp) / "remote"
            pull_mod.pull(client, ref, out, media_type=media_type)
            remote = manifests.load([out], relative_to=out)
    return compare.compare(remote, local)
