"""The world's own round trips, against peers, so later benchmarks have a baseline.

- blob upload of 8 MiB: plain HTTP from Python (what lockgate's registry seam does) vs the
  oras CLI's ``oras blob push``;
- server-side apply of 50 ConfigMaps: the kubernetes Python client vs ``kubectl apply
  --server-side`` on the same objects.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import requests
import yaml

from bench.common import BenchResult, best_of, run_command
from tests.world import binaries
from tests.world.world import World


def _blob_upload(host: str, repo: str, data: bytes) -> None:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    start = requests.post(f"http://{host}/v2/{repo}/blobs/uploads/", timeout=30)
    location = start.headers["Location"]
    if location.startswith("/"):
        location = f"http://{host}{location}"
    sep = "&" if "?" in location else "?"
    requests.put(f"{location}{sep}digest={digest}", data=data, timeout=60).raise_for_status()


def run(world: World) -> list[BenchResult]:
    results: list[BenchResult] = []
    oras = binaries.binary("oras")
    counter = iter(range(10_000))
    with tempfile.TemporaryDirectory() as tmp:
        blob = Path(tmp) / "blob"

        def fresh() -> bytes:
            data = os.urandom(8 * 1024 * 1024)
            blob.write_bytes(data)
            return data

        ours = best_of(3, lambda: _blob_upload(world.registry.host, f"bench/blob{next(counter)}", fresh()))
        peer = best_of(
            3,
            lambda: (
                fresh(),
                run_command(
                    [
                        str(oras),
                        "blob",
                        "push",
                        "--plain-http",
                        f"{world.registry.host}/bench/oras{next(counter)}",
                        str(blob),
                    ]
                ),
            ),
        )
        results.append(BenchResult("world", "blob upload 8 MiB", ours, "oras blob push", peer))

    if world.cluster is not None:
        from kubernetes import client, dynamic

        api = world.cluster.api_client()
        core = client.CoreV1Api(api)
        cms = dynamic.DynamicClient(api).resources.get(api_version="v1", kind="ConfigMap")
        for ns in ("bench-py", "bench-kubectl"):
            core.create_namespace({"metadata": {"name": ns}})
        rounds = iter(range(1000))

        def objects(ns: str, round_: int) -> list[dict[str, object]]:
            return [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"cm-{i}", "namespace": ns},
                    "data": {"round": str(round_), "i": str(i)},
                }
                for i in range(50)
            ]

        def python_apply() -> None:
            r = next(rounds)
            for obj in objects("bench-py", r):
                meta = obj["metadata"]
                assert isinstance(meta, dict)
                cms.server_side_apply(
                    body=obj, name=meta["name"], namespace="bench-py", field_manager="bench"
                )

        ours = best_of(3, python_apply)
        kubectl = binaries.binary("kubectl")
        with tempfile.TemporaryDirectory() as tmp:
            manifest = Path(tmp) / "cms.yaml"

            def kubectl_apply() -> None:
                manifest.write_text(yaml.safe_dump_all(objects("bench-kubectl", next(rounds))))
                run_command(
                    [
                        str(kubectl),
                        f"--kubeconfig={world.cluster.kubeconfig}" if world.cluster else "",
                        "apply",
                        "--server-side",
                        "-f",
                        str(manifest),
                    ]
                )

            peer = best_of(3, kubectl_apply)
        results.append(BenchResult("world", "SSA 50 ConfigMaps", ours, "kubectl apply --server-side", peer))
    return results
