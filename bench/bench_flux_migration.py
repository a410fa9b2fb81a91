"""Moving from Flux: ``lockgate import`` of 200 Kustomizations and ``lockgate adopt`` of an app of
1,000 objects, against Flux's own tools on the same objects in the same run.

- *import*: 200 OCIRepository + Kustomization pairs (with patches, images, postBuild,
  healthChecks, dependsOn, a secretRef and a keyless identity: the fields that make rows) in
  one namespace, suspended. ``lockgate import --from-cluster -n NS`` (and ``--from-files`` of
  the same objects exported by kubectl) against ``flux export source oci --all`` plus ``flux
  export kustomization --all`` of that namespace: both list the same CRs and write YAML. The
  sizes of the config and of the JSON report are recorded.
- *adopt*: Flux's kustomize-controller applies an artifact of 1,000 objects (ConfigMaps,
  headless Services, zero-replica Deployments, as bench_reconcile's); after ``flux suspend``,
  ``lockgate adopt`` takes it over. The peer is a plain lockgate first pass of the same
  objects into a fresh namespace (what a migration without adopt would cost, re-creating
  everything): time and API requests, from each one's JSON.

Every command runs as a child process through ``run_measured``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.bench_reconcile import objects as workload
from bench.common import BenchResult, push_objects, run_measured
from tests.world import binaries
from tests.world import flux as flux_world
from tests.world.world import World

KUSTOMIZATIONS = 200
OBJECTS = 1000
IMPORT_NS = "flux-import-bench"
ADOPT_NS = "flux-adopt-bench"
RUNNER_NS = "lg-flux-bench"
LOCKGATE = [sys.executable, "-m", "lockgate"]


def pairs(n: int, namespace: str) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for i in range(n):
        name = f"app-{i:03d}"
        verify: dict[str, Any] = (
            {"provider": "cosign", "secretRef": {"name": "cosign-pub"}}
            if i % 2
            else {
                "provider": "cosign",
                "matchOIDCIdentity": [
                    {
                        "issuer": "^https://token\\.actions\\.githubusercontent\\.com$",
                        "subject": f"acme/{name}",
                    }
                ],
            }
        )
        docs.append(
            {
                "apiVersion": "source.toolkit.fluxcd.io/v1",
                "kind": "OCIRepository",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "interval": "5m",
                    "url": f"oci://registry.example.com/fleet/{name}",
                    "ref": {"semver": ">=1.0.0"} if i % 3 == 0 else {"tag": "latest"},
                    "secretRef": {"name": "regcred"},
                    "verify": verify,
                    "suspend": True,
                },
            }
        )
        spec: dict[str, Any] = {
            "interval": "10m",
            "retryInterval": "1m",
            "sourceRef": {"kind": "OCIRepository", "name": name},
            "path": f"./apps/{name}",
            "prune": True,
            "wait": True,
            "suspend": True,
            "targetNamespace": name,
            "patches": [
                {
                    "patch": "- op: add\n  path: /metadata/labels/team\n  value: web\n",
                    "target": {"kind": "Deployment"},
                }
            ],
            "images": [{"name": "registry.example/app", "newTag": f"1.{i}"}],
            "postBuild": {
                "substitute": {"cluster": "prod"},
                "substituteFrom": [{"kind": "ConfigMap", "name": "vars"}],
            },
            "healthChecks": [{"kind": "Deployment", "name": "web", "namespace": name}],
        }
        if i:
            spec["dependsOn"] = [{"name": f"app-{i - 1:03d}"}]
        docs.append(
            {
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                "kind": "Kustomization",
                "metadata": {"name": name, "namespace": namespace},
                "spec": spec,
            }
        )
    return docs


def _import(world: World, workdir: Path) -> list[BenchResult]:
    assert world.cluster is not None
    cluster = world.cluster
    cluster.kubectl("create", "namespace", IMPORT_NS, check=False)
    cluster.kubectl(
        "apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(pairs(KUSTOMIZATIONS, IMPORT_NS))
    )
    kubeconfig = f"--kubeconfig={cluster.kubeconfig}"
    exported = cluster.kubectl(
        "get", "ocirepositories.source.toolkit.fluxcd.io,kustomizations.kustomize.toolkit.fluxcd.io",
        "-n", IMPORT_NS, "-o", "yaml",
    ).stdout  # fmt: skip
    (workdir / "fleet.yaml").write_text(exported)
    common = ["--runner-namespace", RUNNER_NS, "-o", "json"]

    def lockgate_import(*source: str) -> tuple[float, dict[str, Any], int]:
        """The best of three runs (exit 10: the report has rows, as it must here)."""
        runs = [
            run_measured(
                [*LOCKGATE, "import", *source, "-O", str(workdir / "out.yaml"), *common, kubeconfig], ok=(10,)
            )
            for _ in range(3)
        ]
        best = min(runs, key=lambda r: r.seconds)
        return best.seconds, json.loads(best.stdout), (workdir / "out.yaml").stat().st_size

    flux = str(flux_world.cli())
    peer_script = (
        f"{flux} {kubeconfig} export source oci --all -n {IMPORT_NS} > {workdir / 'flux-export.yaml'} && "
        f"{flux} {kubeconfig} export kustomization --all -n {IMPORT_NS} >> {workdir / 'flux-export.yaml'}"
    )
    peer = min(run_measured(["sh", "-c", peer_script]).seconds for _ in range(3))
    results = []
    for label, source in (
        ("--from-cluster", ("--from-cluster", "-n", IMPORT_NS)),
        ("--from-files", ("--from-files", str(workdir / "fleet.yaml"))),
    ):
        seconds, report, config_bytes = lockgate_import(*source)
        results.append(
            BenchResult(
                "flux-migration",
                f"import {KUSTOMIZATIONS} Kustomizations {label}",
                seconds,
                "flux export (source oci + kustomization)",
                peer,
                extra={
                    "syncs": len(report["syncs"]),
                    "report_rows": len(report["rows"]),
                    "report_json_bytes": len(json.dumps(report, indent=2)),
                    "config_bytes": config_bytes,
                    "flux_export_bytes": (workdir / "flux-export.yaml").stat().st_size,
                    "counts": report["counts"],
                },
            )
        )
    return results


def _adopt(world: World, workdir: Path) -> list[BenchResult]:
    assert world.cluster is not None
    cluster = world.cluster
    target, fresh = "bench-adopt", "bench-first"
    for ns in (ADOPT_NS, target, fresh, RUNNER_NS):
        cluster.kubectl("create", "namespace", ns, check=False)
    url = push_objects(world, "bench/flux-adopt", "v1", workload(OBJECTS, target, revision=1))
    repository = url.split("@", 1)[0]
    flux_objects = [
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "OCIRepository",
            "metadata": {"name": "big", "namespace": ADOPT_NS},
            "spec": {"interval": "1h", "url": repository, "ref": {"tag": "v1"}, "insecure": True},
        },
        {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "big", "namespace": ADOPT_NS},
            "spec": {
                "interval": "1h",
                "sourceRef": {"kind": "OCIRepository", "name": "big"},
                "prune": True,
                "timeout": "15m",
            },
        },
    ]
    started = time.monotonic()
    cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(flux_objects))
    while True:
        ks = json.loads(
            cluster.kubectl(
                "get", "kustomizations.kustomize.toolkit.fluxcd.io", "big", "-n", ADOPT_NS, "-o", "json"
            ).stdout
        )
        if (ks.get("status") or {}).get("lastAppliedRevision"):
            break
        if time.monotonic() - started > 1200:
            raise TimeoutError(f"Flux did not apply {OBJECTS} objects: {ks.get('status')}")
        time.sleep(1)
    flux_apply = time.monotonic() - started
    kubeconfig = f"--kubeconfig={cluster.kubeconfig}"
    config = workdir / "adopt.yaml"
    run_measured(
        [*LOCKGATE, "import", "--from-cluster", "-n", ADOPT_NS, "--allow-unsigned", "--runner-namespace",
         RUNNER_NS, "-O", str(config), kubeconfig],
        ok=(10,),
    )  # fmt: skip
    run_measured([str(flux_world.cli()), kubeconfig, "suspend", "kustomization", "big", "-n", ADOPT_NS])
    adopted = run_measured([*LOCKGATE, "adopt", "--config", str(config), "-o", "json", kubeconfig])
    (adoption,) = json.loads(adopted.stdout)
    actions = {e["action"] for e in adoption["result"]["objects"]}
    assert actions <= {"configured", "unchanged"}, actions
    url_fresh = push_objects(world, "bench/flux-first", "v1", workload(OBJECTS, fresh, revision=1))
    first = run_measured(
        [*LOCKGATE, "reconcile", url_fresh, "--name", "bench-first", "-n", RUNNER_NS,
         "--insecure-skip-verify", "--prune", "-o", "json", kubeconfig]
    )  # fmt: skip
    plain = json.loads(first.stdout)
    again = run_measured([*LOCKGATE, "adopt", "--config", str(config), "-o", "json", kubeconfig])
    (repeat,) = json.loads(again.stdout)
    return [
        BenchResult(
            "flux-migration",
            f"adopt an app of {OBJECTS} objects",
            adopted.seconds,
            "lockgate first pass (re-creating)",
            first.seconds,
            extra={
                "adopt_requests": sum(adoption["requests"].values()),
                "adopt_requests_by_verb": adoption["requests"],
                "first_pass_requests": sum(plain["requests"].values()),
                "first_pass_requests_by_verb": plain["requests"],
                "taken_over": adoption["takenOver"],
                "seeded": adoption["seeded"],
                "adopt_rss_mb": round(adopted.rss_kib / 1024, 1),
                "flux_apply_s": round(flux_apply, 1),
                "adopt_again_s": round(again.seconds, 2),
                "adopt_again_requests": sum(repeat["requests"].values()),
            },
        )
    ]


def run(world: World) -> list[BenchResult]:
    assert world.cluster is not None
    cluster = world.cluster
    cluster.kubectl("create", "namespace", flux_world.NAMESPACE, check=False)
    flux_world.install_crds(cluster)
    binaries.binary("kustomize")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        results = _import(world, workdir)
        controllers = flux_world.start_controllers(cluster, workdir / "flux")
        try:
            results += _adopt(world, workdir)
        finally:
            controllers.stop()
    return results


if __name__ == "__main__":
    started = World.start()
    try:
        for result in run(started):
            print(json.dumps(result.as_dict()))
    finally:
        started.stop()
