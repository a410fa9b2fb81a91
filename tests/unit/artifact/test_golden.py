"""The golden layer: a fixed tree packs to a digest checked in here.

The digest depends only on the tree and lockgate's version (its bundled compressor, see
lockgate/artifact/gz.py), never on the machine's zlib. When this test fails the compressed
bytes of every layer changed: every user's layer digest changes with the release, so it must
be called out in CHANGELOG.md before the expected digest here is updated.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

from lockgate.artifact import pack

#: the layer (the tar, gzip-compressed by lockgate.artifact.gz)
GOLDEN_DIGEST = "sha256:2cf34e948285c52ee21d12fe16e1c7cd5d5714a617a70ed981e97dd382254b54"
GOLDEN_SIZE = 615263
#: the tar inside it, so a failure tells a tar change from a compressor change
GOLDEN_TAR_DIGEST = "sha256:91f5ed5fcaa89c830a495bbb0106d33b8cbef9e0eea31ba908b9aa3510a9236a"


def _write_tree(root: Path) -> Path:
    """Names and contents fixed here; modes are normalised by packing, times are not packed."""
    (root / "apps" / "web").mkdir(parents=True)
    (root / "apps" / "web" / "deployment.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: prod\n"
        "spec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n"
        "        - name: web\n          image: ghcr.io/org/web:1.2.3\n"
    )
    (root / "apps" / "web" / "service.yaml").write_text(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n    - port: 80\n"
    )
    (root / "apps" / "empty.yaml").write_text("")
    (root / ("long-" * 30)).mkdir()
    (root / ("long-" * 30) / "ünïcødé.yaml").write_text("a: 1\n")
    run = root / "run.sh"
    run.write_text("#!/bin/sh\necho hi\n")
    run.chmod(0o755)
    # 1.6 MB of fixed pseudo-random YAML: two compressor blocks, matches and literals
    lines = []
    seed = b"lockgate"
    for i in range(60_000):
        seed = hashlib.sha256(seed).digest()
        lines.append(f"key{i % 97}: value-{seed[:6].hex()}\n")
    (root / "apps" / "big.yaml").write_text("".join(lines))
    return root


def test_a_fixed_tree_packs_to_the_golden_digest(tmp_path: Path) -> None:
    root = _write_tree(tmp_path / "tree")
    layer = pack.pack(root, tmp_path / "layer.tgz")
    tar = gzip.decompress(layer.path.read_bytes())
    tar_digest = "sha256:" + hashlib.sha256(tar).hexdigest()
    assert tar_digest == GOLDEN_TAR_DIGEST, (
        f"the tar stream of the golden tree changed ({tar_digest}): entries, headers or padding, "
        "not the compressor; layer digests change with it, call it out in CHANGELOG.md"
    )
    assert (layer.digest, layer.size) == (GOLDEN_DIGEST, GOLDEN_SIZE), (
        f"the compressed bytes of the golden layer changed: {layer.digest} ({layer.size} bytes), "
        f"expected {GOLDEN_DIGEST} ({GOLDEN_SIZE} bytes). Every layer digest changes with this; "
        "call it out in CHANGELOG.md (Unreleased) before updating GOLDEN_DIGEST and GOLDEN_SIZE"
    )
