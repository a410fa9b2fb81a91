"""docs/promotion.md, run as written against the world (registry, kube-apiserver).

Every ```sh block preceded by ``<!-- run -->`` is run by bash, in order, in one directory,
and every block preceded by ``<!-- file: NAME -->`` is written there first. Only names
change, so tests can run in parallel on one cluster and one registry: the registry host,
the ``shop`` and ``lockgate-*`` names get a unique suffix; and the soak is 3s instead of an
hour (``<!-- run: after the soak -->`` waits for it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.reconcile_support import get
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

GUIDE = Path(__file__).parents[2] / "docs" / "promotion.md"
SOAK = 3
BLOCK = re.compile(r"<!-- (run|run: after the soak|file: (?P<file>\S+)) -->\n```\w*\n(?P<body>.*?)```", re.S)


def _blocks(text: str) -> list[tuple[str, str]]:
    """(kind, body) in the guide's order: kind is a file name, ``run`` or ``soak``."""
    found = []
    for match in BLOCK.finditer(text):
        kind = match["file"] or ("soak" if "soak" in match[1] else "run")
        found.append((kind, match["body"]))
    return found


def test_the_promotion_guide_works_as_written(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    suffix = unique[-6:]
    text = GUIDE.read_text()
    renamed = (
        text.replace("registry.example.com", registry.host)
        .replace("lockgate-staging", f"lockgate-staging-{suffix}")
        .replace("lockgate-production", f"lockgate-production-{suffix}")
        .replace("shop", f"shop{suffix}")
        .replace("minAge: 1h", f"minAge: {SOAK}s")
    )
    blocks = _blocks(renamed)
    assert [kind for kind, _ in blocks].count("soak") == 1 and len(blocks) >= 10
    bindir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(bindir), str(binaries.binary("kubectl").parent), os.environ["PATH"]]),
        "KUBECONFIG": str(cluster.kubeconfig),
        "COSIGN_PASSWORD": "guide-password",
        "LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize")),
    }
    for name in ("LOCKGATE_PASSWORD", "DOCKER_CONFIG", "SIGSTORE_ID_TOKEN"):
        env.pop(name, None)
    outputs = []
    staged_at = 0.0
    for kind, body in blocks:
        if kind not in ("run", "soak"):
            (tmp_path / kind).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / kind).write_text(body)
            continue
        if kind == "soak":
            time.sleep(max(0.0, staged_at + SOAK + 1 - time.monotonic()))
        run = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", body],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, f"{body}\n--- stdout\n{run.stdout}\n--- stderr\n{run.stderr}"
        outputs.append(run.stdout + run.stderr)
        if "reconcile --config staging.yaml" in body and not staged_at:
            staged_at = time.monotonic()

    everything = "\n".join(outputs)
    qa = "https://example.com/attestations/qa-approved/v1"
    assert "attestation: attested healthy in staging: " in everything
    assert f"waiting for healthy in staging, {SOAK}s soak: " in everything
    assert f"waiting for {qa}: no such attestation" in everything
    assert f"Attested {qa} of " in everything
    assert "Verified 1 attestation(s) of type https://lockgate.dev/attestations/healthy/v1" in everything
    # after the soak production runs 1.0.0; 1.1.0 is in staging and waits for production
    staging = get(cluster, "configmap", f"shop{suffix}", f"shop{suffix}-staging")
    production = get(cluster, "configmap", f"shop{suffix}", f"shop{suffix}-production")
    assert staging is not None and staging["data"]["version"] == "1.1.0"
    assert production is not None and production["data"]["version"] == "1.0.0"
    assert re.search(r"waiting: +1\.1\.0@sha256:[0-9a-f]+: waiting for healthy in staging", outputs[-1])
