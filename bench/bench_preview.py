"""``lockgate preview`` at size (issue 32): 3 clusters x 10 syncs x 200 objects, and its registry requests.

One artifact holds ten apps (``apps/a`` ... ``apps/j``, 200 objects each: ConfigMaps, Services,
Deployments); each of three clusters' configurations has ten Syncs, one per app (``path``),
each with the cluster's own ``commonMetadata`` and ``postBuild`` values (so every render is a
``kustomize build``, as a pass makes it), a release key to verify, and ``attest``. Cluster
``c0`` attested release 1.1.0 for every sync, ``c1`` and ``c2`` release 1.0.0 (30 attestations
signed with each cluster's runner key, as a runner writes them). The pull request changes two
apps. Measured: the whole ``lockgate preview PATH --cluster x3 --url --attester-key x3 -o json``
as a user runs it (median of 3), and the registry requests it reports, by verb.

The peer, measured in the same run, is what a reviewer had before: the pr-diff workflow's
``lockgate diff PATH URL`` against the tag, once per cluster and sync (30 runs; it shows the
raw manifests against a tag, no overlay, no values, nothing attested). The goal is absolute:
under 10 s on this machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.common import BenchResult, markdown_table
from lockgate import registry
from lockgate.artifact import manifest, pack
from lockgate.signing import attest, keys, sign
from tests.world import binaries
from tests.world.world import World

CLUSTERS = 3
APPS = "abcdefghij"
OBJECTS = 200
REPEATS = 3
RESULTS = Path(__file__).resolve().parent / "results"
PASSWORD = b"bench"
LOCKGATE = [sys.executable, "-m", "lockgate"]


def objects(app: str, version: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for i in range(OBJECTS):
        name = f"{app}-{i:03d}"
        if i % 3 == 0:
            body: dict[str, Any] = {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": f"app-{app}"},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {"containers": [{"name": "web", "image": f"example.com/{app}:{version}"}]},
                    },
                },
            }
        elif i % 3 == 1:
            body = {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": f"app-{app}"},
                "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]},
            }
        else:
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": f"app-{app}"},
                "data": {"color": "${COLOR}", "version": version},
            }
        found.append(body)
    return found


def tree(root: Path, versions: dict[str, str]) -> Path:
    for app in APPS:
        target = root / "apps" / app
        target.mkdir(parents=True, exist_ok=True)
        (target / "objects.yaml").write_text(yaml.safe_dump_all(objects(app, versions.get(app, "1"))))
    return root


def publish(world: World, repo: str, root: Path, tag: str, key: keys.PrivateKey) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        layer = pack.pack(root, Path(tmp) / "layer.tgz")
        built = manifest.build(layer.digest, layer.size, {})
        ref = registry.parse(world.registry.oci(repo, f":{tag}"))
        client = registry.RegistryClient.for_reference(ref)
        client.upload_blob(
            repo, built.config_blob, digest=built.manifest.config.digest, size=len(built.config_blob)
        )
        with open(layer.path, "rb") as stream:
            client.upload_blob(repo, stream, digest=layer.digest, size=layer.size)
        digest = client.put_manifest(repo, tag, built.content, built.manifest.media_type)
    sign.sign_with_key(ref.with_digest(digest), key)
    return digest


def configs(world: World, repo: str, work: Path) -> list[Path]:
    paths = []
    for c in range(CLUSTERS):
        docs: list[dict[str, Any]] = [
            {"apiVersion": "lockgate.dev/v1alpha1", "kind": "Runner", "spec": {"clusterName": f"c{c}"}}
        ]
        for app in APPS:
            docs.append(
                {
                    "apiVersion": "lockgate.dev/v1alpha1",
                    "kind": "Sync",
                    "metadata": {"name": f"app-{app}"},
                    "spec": {
                        "url": world.registry.oci(repo, ":latest"),
                        "path": f"apps/{app}",
                        "interval": "5m",
                        "prune": True,
                        "verify": {"key": str(work / "release.pub")},
                        "attest": {"secretRef": {"name": "attest-key"}},
                        "commonMetadata": {"labels": {"cluster": f"c{c}"}},
                        "postBuild": {"substitute": {"COLOR": ["red", "green", "blue"][c]}},
                    },
                }
            )
        path = work / f"c{c}.yaml"
        path.write_text(yaml.safe_dump_all(docs))
        paths.append(path)
    return paths


def attest_all(world: World, repo: str, digest: str, cluster: int, key: keys.PrivateKey) -> None:
    ref = registry.parse(world.registry.oci(repo)).with_digest(digest)
    client = registry.RegistryClient.for_reference(ref)
    for app in APPS:
        predicate = attest.health_predicate(
            cluster=f"c{cluster}",
            sync=f"app-{app}",
            revision=digest,
            healthy=True,
            at=dt.datetime.now(dt.UTC),
            objects={"total": OBJECTS, "current": OBJECTS},
        )
        attest.attest_with_key(ref, key, predicate_type=attest.HEALTHY, predicate=predicate, client=client)


def run(world: World) -> list[BenchResult]:
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-preview-") as tmp:
        work = Path(tmp)
        repo = "bench-preview"
        pair = keys.generate_key_pair(PASSWORD)
        release = keys.load_private_key(pair.private_pem, PASSWORD)
        (work / "release.pub").write_bytes(pair.public_pem)
        runners = []
        for c in range(CLUSTERS):
            runner = keys.generate_key_pair(PASSWORD)
            (work / f"c{c}.pub").write_bytes(runner.public_pem)
            runners.append(keys.load_private_key(runner.private_pem, PASSWORD))
        v1 = publish(world, repo, tree(work / "v1", {}), "1.0.0", release)
        v2 = publish(world, repo, tree(work / "v2", {a: "2" for a in "ab"}), "1.1.0", release)
        publish(world, repo, tree(work / "v2", {a: "2" for a in "ab"}), "latest", release)
        attest_all(world, repo, v2, 0, runners[0])
        for c in (1, 2):
            attest_all(world, repo, v1, c, runners[c])
        path = tree(work / "pr", {"a": "3", "c": "2"})
        argv = [*LOCKGATE, "preview", str(path), "--url", world.registry.oci(repo), "-o", "json"]
        for c, config in enumerate(configs(world, repo, work)):
            argv += ["--cluster", str(config), "--attester-key", f"c{c}={work / f'c{c}.pub'}"]
        env = {"LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize"))}
        times, cpus, requests = [], [], {}
        for _ in range(REPEATS):
            measured = _run(argv, env)
            times.append(measured[0])
            cpus.append(measured[1])
            requests = measured[2]
        document = measured[3]
        basis = sorted({t["running"]["basis"] for t in document["targets"]})
        print(f"preview: {', '.join(f'{t:.2f}' for t in times)} s; {requests}", flush=True)
        peer_times, peer_cpu = [], []
        for _ in range(CLUSTERS * len(APPS)):
            # diff exits 1 when the manifests differ: a result, not a failure
            wall, used = _timed([*LOCKGATE, "diff", str(path), world.registry.oci(repo, ":latest")], env)
            peer_times.append(wall)
            peer_cpu.append(used)
        ours, theirs = statistics.median(times), sum(peer_times)
        load = os.getloadavg()[0]
        total = sum(requests.values())
        return [
            BenchResult(
                benchmark="preview",
                scenario=f"{CLUSTERS} clusters x {len(APPS)} syncs x {OBJECTS} objects, attested",
                ours_seconds=round(ours, 3),
                peer=f"{CLUSTERS * len(APPS)} x lockgate diff PATH URL (pr-diff before)",
                peer_seconds=round(theirs, 3),
                goal="< 10 s",
                extra={
                    "runs": ", ".join(f"{t:.2f}" for t in times),
                    "CPU s": ", ".join(f"{c:.2f}" for c in cpus),
                    "peer CPU s": f"{sum(peer_cpu):.2f}",
                    "load average": f"{load:.1f} on {os.cpu_count()} cores",
                    "registry requests": f"{total} ({_verbs(requests)})",
                    "basis": "/".join(basis),
                    "targets": len(document["targets"]),
                    "changed": sum(1 for t in document["targets"] if t["changed"]),
                },
            )
        ]


def _verbs(requests: dict[str, int]) -> str:
    return ", ".join(f"{verb} {count}" for verb, count in sorted(requests.items()))


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its children: kustomize...)."""
    cpu, start = _child_cpu(), time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env})
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return time.perf_counter() - start, _child_cpu() - cpu


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float, dict[str, int], dict[str, Any]]:
    cpu, start = _child_cpu(), time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env})
    elapsed, used = time.perf_counter() - start, _child_cpu() - cpu
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"preview failed ({proc.returncode}): {proc.stderr[-2000:]}")
    document = json.loads(proc.stdout)
    return elapsed, used, dict(document["requests"]), document


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_preview")
    parser.add_argument("--name", default="preview", help="results file name, without .md")
    args = parser.parse_args(argv)
    world = World.start(cluster=False)
    try:
        rows = run(world)
    finally:
        world.stop()
    RESULTS.mkdir(exist_ok=True)
    text = [
        "# lockgate preview at size",
        "",
        (__doc__ or "").strip(),
        "",
        *markdown_table(rows),
        "",
        "The wall time depends on what else the machine runs (its load average is in the notes); the",
        "CPU seconds of the command and its children do not, and bound the wall time on an idle",
        "machine from below: the preview's work is Python under one interpreter lock.",
        "",
    ]
    (RESULTS / f"{args.name}.md").write_text("\n".join(text))
    (RESULTS / f"{args.name}.json").write_text(json.dumps([r.as_dict() for r in rows], indent=2) + "\n")
    for row in rows:
        print(f"{row.scenario}: ours {row.ours_seconds} s, peer {row.peer_seconds} s, {row.extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
