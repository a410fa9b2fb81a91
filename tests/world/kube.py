"""A real Kubernetes control plane on loopback: etcd + kube-apiserver (the minimal profile),
plus kube-controller-manager, kube-scheduler and kwok-simulated nodes (the full profile).

All binaries come from ``tests.world.binaries`` (built once from the Go module proxy at
the pinned release). RBAC authorization is on; the admin credential is a client
certificate in ``system:masters``; ``service_account_kubeconfig`` makes a least-privilege
credential backed by a real ServiceAccount token.
"""

from __future__ import annotations

import os
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.world import binaries
from tests.world.errors import WorldSetupError
from tests.world.pki import CertificateAuthority, KeyPair, service_account_keys
from tests.world.process import Process, free_port, start, wait_until

NODE_COUNT = 3
#: kwok manages nodes carrying this annotation; pods land on them like on real nodes
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
#: a running Pod with this label set to "true" fails instead of completing (kwok's chaos stage)
FAIL_POD_LABEL = "pod-container-running-failed.stage.kwok.x-k8s.io"


def _kubeconfig(
    server: str, ca: Path, *, user: dict[str, str], name: str = "lockgate-world"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }


@dataclass
class Cluster:
    directory: Path
    server: str
    ca: Path
    kubeconfig: Path
    processes: list[Process] = field(default_factory=list)
    full_profile: bool = False
    sa_keys: KeyPair | None = None
    admin: KeyPair | None = None
    start_seconds: float = 0.0
    full_profile_seconds: float = 0.0

    # ---- clients -------------------------------------------------------------------
    def api_client(self, kubeconfig: Path | None = None) -> Any:
        """A ``kubernetes.client.ApiClient`` for the admin (or the given kubeconfig)."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(kubeconfig or self.kubeconfig))

    def kubectl(
        self, *args: str, kubeconfig: Path | None = None, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        argv = [str(binaries.binary("kubectl")), f"--kubeconfig={kubeconfig or self.kubeconfig}", *args]
        result = subprocess.run(argv, capture_output=True, text=True, input=input)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    def check(self) -> None:
        for process in self.processes:
            process.check()

    # ---- least privilege -----------------------------------------------------------
    def service_account_kubeconfig(
        self,
        name: str,
        namespace: str,
        *,
        rules: Sequence[dict[str, Any]] = (),
        cluster_rules: Sequence[dict[str, Any]] = (),
    ) -> Path:
        """Create a ServiceAccount with the given RBAC rules; return a kubeconfig using its token.

        ``rules`` become a Role in ``namespace``; ``cluster_rules`` a ClusterRole.
        """
        from kubernetes import client

        api = self.api_client()
        core = client.CoreV1Api(api)
        rbac = client.RbacAuthorizationV1Api(api)
        try:
            core.create_namespace({"metadata": {"name": namespace}})
        except client.ApiException as exc:
            if exc.status != 409:
                raise
        core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
        subject = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
        if rules:
            rbac.create_namespaced_role(namespace, {"metadata": {"name": name}, "rules": list(rules)})
            rbac.create_namespaced_role_binding(
                namespace,
                {
                    "metadata": {"name": name},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                    "subjects": subject,
                },
            )
        if cluster_rules:
            cluster_name = f"{namespace}-{name}"
            rbac.create_cluster_role({"metadata": {"name": cluster_name}, "rules": list(cluster_rules)})
            rbac.create_cluster_role_binding(
                {
                    "metadata": {"name": cluster_name},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": cluster_name,
                    },
                    "subjects": subject,
                }
            )
        token = core.create_namespaced_service_account_token(
            name, namespace, {"spec": {"expirationSeconds": 86400}}
        ).status.token
        path = self.directory / f"sa-{namespace}-{name}.kubeconfig"
        path.write_text(yaml.safe_dump(_kubeconfig(self.server, self.ca, user={"token": token})))
        path.chmod(0o600)
        return path

    # ---- full profile --------------------------------------------------------------
    def start_full_profile(self, nodes: int = NODE_COUNT) -> None:
        """Add controller-manager, scheduler and kwok with ``nodes`` simulated nodes."""
        if self.full_profile:
            self.check()
            return
        started = time.monotonic()
        assert self.sa_keys is not None
        bins = {p: binaries.binary(p) for p in ("kube-controller-manager", "kube-scheduler", "kwok")}
        common = [
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
        ]
        cm = start(
            "kube-controller-manager",
            [
                bins["kube-controller-manager"],
                *common,
                f"--secure-port={free_port()}",
                f"--service-account-private-key-file={self.sa_keys.key}",
                f"--root-ca-file={self.ca}",
                "--use-service-account-credentials=false",
                "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller",
                "--concurrent-deployment-syncs=10",
                "--concurrent-replicaset-syncs=10",
                f"--cert-dir={self.directory / 'cm-certs'}",
            ],
            log=self.directory / "kube-controller-manager.log",
        )
        self.processes.append(cm)
        sched = start(
            "kube-scheduler",
            [
                bins["kube-scheduler"],
                *common,
                f"--secure-port={free_port()}",
                f"--cert-dir={self.directory / 'sched-certs'}",
            ],
            log=self.directory / "kube-scheduler.log",
        )
        self.processes.append(sched)
        kwok = start(
            "kwok",
            [
                bins["kwok"],
                f"--kubeconfig={self.kubeconfig}",
                f"--config={self._kwok_stages()}",
                "--manage-all-nodes=false",
                # leases keep the node-lifecycle controller from marking nodes (and so pods) NotReady
                "--node-lease-duration-seconds=40",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
                "--cidr=10.244.0.0/16",
                "--node-ip=10.0.0.10",
                f"--node-port={free_port()}",
                f"--server-address=127.0.0.1:{free_port()}",
            ],
            log=self.directory / "kwok.log",
            env={"KWOK_WORKDIR": str(self.directory / "kwok")},
        )
        self.processes.append(kwok)
        self._create_nodes(nodes)
        from kubernetes import client

        core = client.CoreV1Api(self.api_client())

        def nodes_ready() -> bool:
            items = core.list_node(label_selector="type=kwok").items
            ready = [
                n
                for n in items
                if any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions or []))
            ]
            return len(ready) == nodes

        for process in (cm, sched):
            wait_until(process, lambda: True, timeout=1, what="running")
        wait_until(kwok, nodes_ready, timeout=60, what=f"reporting {nodes} Ready nodes", interval=0.2)

        def default_sa() -> bool:
            return bool(core.read_namespaced_service_account("default", "default"))

        wait_until(cm, default_sa, timeout=60, what="creating the default ServiceAccount", interval=0.2)
        self.full_profile = True
        self.full_profile_seconds = time.monotonic() - started

    def _kwok_stages(self) -> Path:
        """kwok's own stage definitions (fast node/pod lifecycle, lease heartbeats), from its module.

        With its chaos stage, a running Pod labelled ``FAIL_POD_LABEL: "true"`` fails (exit 1,
        reason ``containerFailed``) instead of completing: the Job controller then fails its Job."""
        stages = binaries.module_dir("kwok") / "kustomize" / "stage"
        files = [
            stages / "node" / "fast" / "node-initialize.yaml",
            *sorted((stages / "node" / "heartbeat-with-lease").glob("*.yaml")),
            *(stages / "pod" / "fast" / f"pod-{stage}.yaml" for stage in ("ready", "complete", "delete")),
            stages / "pod" / "chaos" / "pod-container-running-failed.yaml",
        ]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise WorldSetupError(f"kwok stage files missing from its module: {', '.join(missing)}")
        path = self.directory / "kwok-stages.yaml"
        path.write_text("\n---\n".join(f.read_text() for f in files))
        return path

    def _create_nodes(self, count: int) -> None:
        from kubernetes import client

        core = client.CoreV1Api(self.api_client())
        for index in range(count):
            name = f"kwok-node-{index}"
            body = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
                    "labels": {
                        "type": "kwok",
                        "kubernetes.io/hostname": name,
                        "kubernetes.io/os": "linux",
                        "kubernetes.io/arch": "amd64",
                        "kubernetes.io/role": "agent",
                    },
                },
                "spec": {},
                "status": {
                    "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                    "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                },
            }
            try:
                core.create_node(body)
            except client.ApiException as exc:
                if exc.status != 409:
                    raise

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()

    def describe(self) -> str:
        return f"KUBECONFIG={self.kubeconfig} (server {self.server})"


def _https_ready(url: str, admin: KeyPair, ca: Path) -> bool:
    context = ssl.create_default_context(cafile=str(ca))
    context.load_cert_chain(str(admin.cert), str(admin.key))
    with urllib.request.urlopen(url, context=context, timeout=2) as resp:
        return bool(resp.status == 200)


def start_cluster(directory: Path) -> Cluster:
    """Start etcd and kube-apiserver (RBAC on, secure port on 127.0.0.1); return the cluster."""
    started = time.monotonic()
    directory.mkdir(parents=True, exist_ok=True)
    pki = directory / "pki"
    pki.mkdir(exist_ok=True)
    etcd_bin = binaries.binary("etcd")
    apiserver_bin = binaries.binary("kube-apiserver")
    ca = CertificateAuthority.create(pki)
    serving = ca.issue(
        pki / "apiserver",
        "kube-apiserver",
        server=True,
        hosts=(
            "127.0.0.1",
            "localhost",
            "10.0.0.1",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ),
    )
    admin = ca.issue(pki / "admin", "lockgate-admin", orgs=("system:masters",))
    sa_keys = service_account_keys(pki)

    etcd_port, peer_port = free_port(), free_port()
    etcd = start(
        "etcd",
        [
            etcd_bin,
            f"--data-dir={directory / 'etcd'}",
            "--name=world",
            f"--listen-client-urls=http://127.0.0.1:{etcd_port}",
            f"--advertise-client-urls=http://127.0.0.1:{etcd_port}",
            f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
            f"--initial-cluster=world=http://127.0.0.1:{peer_port}",
            "--unsafe-no-fsync",
            "--quota-backend-bytes=4294967296",
            "--log-level=warn",
        ],
        log=directory / "etcd.log",
    )
    cluster_processes = [etcd]
    try:
        wait_until(
            etcd,
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{etcd_port}/health", timeout=1).status == 200,
            timeout=20,
            what="healthy",
        )
        port = free_port()
        server = f"https://127.0.0.1:{port}"
        apiserver = start(
            "kube-apiserver",
            [
                apiserver_bin,
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--tls-cert-file={serving.cert}",
                f"--tls-private-key-file={serving.key}",
                f"--client-ca-file={ca.pair.cert}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={sa_keys.cert}",
                f"--service-account-signing-key-file={sa_keys.key}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--allow-privileged=true",
                f"--cert-dir={directory / 'apiserver-certs'}",
                "--enable-priority-and-fairness=false",
                "--profiling=false",
                "--v=1",
            ],
            log=directory / "kube-apiserver.log",
        )
        cluster_processes.append(apiserver)
        wait_until(
            apiserver,
            lambda: _https_ready(f"{server}/readyz", admin, ca.pair.cert),
            timeout=60,
            what="ready (/readyz)",
            interval=0.1,
        )
    except BaseException:
        for process in reversed(cluster_processes):
            process.stop()
        raise
    kubeconfig = directory / "admin.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            _kubeconfig(
                server,
                ca.pair.cert,
                user={"client-certificate": str(admin.cert), "client-key": str(admin.key)},
            )
        )
    )
    kubeconfig.chmod(0o600)
    cluster = Cluster(
        directory=directory,
        server=server,
        ca=ca.pair.cert,
        kubeconfig=kubeconfig,
        processes=cluster_processes,
        sa_keys=sa_keys,
        admin=admin,
    )
    cluster.start_seconds = time.monotonic() - started
    if os.environ.get("LOCKGATE_WORLD_DEBUG"):
        print(f"world: cluster ready in {cluster.start_seconds:.1f}s", flush=True)
    return cluster


__all__ = ["Cluster", "WorldSetupError", "start_cluster"]
