"""Kubeconfig credentials against the real API server: merged $KUBECONFIG, TLS in memory, trust.

A pass run with ``$KUBECONFIG`` listing several files must merge them as kubectl does;
inline key material must never reach the disk; the server must be trusted through the
kubeconfig's CA only, with its hostname checked.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from lockgate.errors import ClusterError
from runner.kube import auth, kubeconfig
from runner.kube.client import Kube
from tests.integration.kube_support import whoami, write_kubeconfig
from tests.integration.reconcile_support import LOCKGATE, configmap, dump, get, push_tree
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.pki import CertificateAuthority
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def reconcile(url: str, name: str, *, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``lockgate reconcile`` as a child process with exactly ``env`` (no --kubeconfig)."""
    return subprocess.run(
        [*LOCKGATE, "reconcile", url, "--name", name, "-n", f"{name}-r", "--insecure-skip-verify"],
        capture_output=True,
        text=True,
        env={"LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize")), **env},
        timeout=300,
    )


def base_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"PATH": os.environ["PATH"], "HOME": str(home)}


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def test_kubeconfig_list_merges_cluster_user_and_context_from_three_files(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    assert cluster.admin is not None
    clusters, users, contexts = (tmp_path / d for d in ("clusters", "users", "contexts"))
    for directory in (clusters, users, contexts):
        directory.mkdir()
    # relative paths, each relative to the file that holds it
    shutil.copy(cluster.ca, clusters / "ca.crt")
    shutil.copy(cluster.admin.cert, users / "admin.crt")
    shutil.copy(cluster.admin.key, users / "admin.key")
    (clusters / "config").write_text(
        yaml.safe_dump(
            {
                "clusters": [
                    {
                        "name": "world",
                        "cluster": {"server": cluster.server, "certificate-authority": "ca.crt"},
                    }
                ]
            }
        )
    )
    (users / "config").write_text(
        yaml.safe_dump(
            {
                "users": [
                    {"name": "admin", "user": {"client-certificate": "admin.crt", "client-key": "admin.key"}}
                ],
                # a later file's definition of a name loses to the first one
                "clusters": [{"name": "world", "cluster": {"server": "https://127.0.0.1:1"}}],
            }
        )
    )
    (contexts / "config").write_text(
        yaml.safe_dump(
            {
                "contexts": [{"name": "world", "context": {"cluster": "world", "user": "admin"}}],
                "current-context": "world",
            }
        )
    )
    listed = os.pathsep.join(
        [
            str(contexts / "config"),
            str(tmp_path / "missing"),
            "",
            str(clusters / "config"),
            str(users / "config"),
        ]
    )
    url = push_tree(registry, unique, {"a.yaml": dump(configmap("a", unique, {"k": "1"}))})
    cluster.kubectl("create", "namespace", unique)
    done = reconcile(url, unique, env={**base_env(tmp_path), "KUBECONFIG": listed})
    assert done.returncode == 0, done.stderr
    live = get(cluster, "configmap", "a", unique)
    assert live is not None and live["data"] == {"k": "1"}


def test_the_merge_agrees_with_kubectl(tmp_path: Path) -> None:
    """kubectl itself is the oracle: the same files, the same entries chosen, the same CA files."""
    layout = {
        "one/config": {
            "clusters": [
                {"name": "c", "cluster": {"server": "https://one:6443", "certificate-authority": "ca"}}
            ],
            "users": [{"name": "u", "user": {"token": "one"}}],
        },
        "two/config": {
            "current-context": "x",
            "clusters": [
                {"name": "c", "cluster": {"server": "https://two:6443"}},
                {"name": "d", "cluster": {"server": "https://d:6443", "certificate-authority": "sub/ca"}},
            ],
            "users": [{"name": "u", "user": {"token": "two"}}, {"name": "v", "user": {"token": "v-two"}}],
            "contexts": [
                {"name": "x", "context": {"cluster": "c", "user": "u"}},
                {"name": "other", "context": {"cluster": "d", "user": "v"}},
            ],
        },
        "three/config": {
            "current-context": "other",
            "users": [{"name": "v", "user": {"token": "v-three"}}],
            "contexts": [{"name": "x", "context": {"cluster": "d", "user": "v"}}],
        },
    }
    for name, doc in layout.items():
        (tmp_path / name).parent.mkdir(parents=True)
        (tmp_path / name).write_text(yaml.safe_dump(doc))
    (tmp_path / "one" / "ca").write_text("CA of one")
    (tmp_path / "two" / "sub").mkdir()
    (tmp_path / "two" / "sub" / "ca").write_text("CA of two")
    listed = os.pathsep.join(
        [
            "",
            str(tmp_path / "two/config"),
            str(tmp_path / "nope"),
            str(tmp_path / "one/config"),
            str(tmp_path / "three/config"),
        ]
    )
    for context in (None, "x", "other"):
        view = subprocess.run(
            [str(binaries.binary("kubectl")), "config", "view", "--minify", "--flatten", "--raw", "-ojson"]
            + ([f"--context={context}"] if context else []),
            capture_output=True,
            text=True,
            env={**base_env(tmp_path), "KUBECONFIG": listed},
            check=True,
        )
        expected = json.loads(view.stdout)
        theirs = expected["clusters"][0]["cluster"]
        ours = kubeconfig.load(None, context, environ={"KUBECONFIG": listed})
        assert ours.server == theirs["server"]
        assert ours.token == expected["users"][0]["user"]["token"]
        ca = ours.cluster.ca.read_bytes() if isinstance(ours.cluster.ca, Path) else ours.cluster.ca
        their_ca = theirs.get("certificate-authority-data")
        assert ca == (base64.b64decode(their_ca) if their_ca else None)


def test_inline_key_material_never_reaches_the_disk(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    assert cluster.admin is not None
    kubeconfig = write_kubeconfig(
        tmp_path / "kube" / "config",
        cluster.server,
        cluster={"certificate-authority-data": b64(cluster.ca)},
        user={"client-certificate-data": b64(cluster.admin.cert), "client-key-data": b64(cluster.admin.key)},
    )
    url = push_tree(registry, unique, {"a.yaml": dump(configmap("a", unique, {"k": "1"}))})
    cluster.kubectl("create", "namespace", unique)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**base_env(tmp_path), "KUBECONFIG": str(kubeconfig), "TMPDIR": str(tmpdir)}
    done = reconcile(url, unique, env=env)
    assert done.returncode == 0, done.stderr  # the pass really ran, and authenticated
    live = get(cluster, "configmap", "a", unique)
    assert live is not None and live["data"] == {"k": "1"}
    # an empty directory: no file under it ever kept the key, nor anything else
    assert list(tmpdir.iterdir()) == []
    assert "PRIVATE KEY" not in done.stdout + done.stderr


def kube_for(tmp_path: Path, cluster: Cluster, name: str, **cluster_fields: object) -> Kube:
    assert cluster.admin is not None
    user = {"client-certificate": str(cluster.admin.cert), "client-key": str(cluster.admin.key)}
    return Kube.from_kubeconfig(
        write_kubeconfig(tmp_path / name, cluster.server, user=user, cluster=cluster_fields)
    )


def test_the_server_hostname_is_checked(cluster: Cluster, tmp_path: Path) -> None:
    # the serving certificate is for 127.0.0.1 and the in-cluster names, not for this one
    ca = str(cluster.ca)
    wrong = kube_for(
        tmp_path, cluster, "wrong", **{"certificate-authority": ca, "tls-server-name": "elsewhere.example"}
    )
    with pytest.raises(
        ClusterError, match=r"cannot reach the Kubernetes API.*: TLS failed: .* does not name it"
    ):
        whoami(wrong)
    right = kube_for(
        tmp_path, cluster, "right", **{"certificate-authority": ca, "tls-server-name": "kubernetes.default"}
    )
    assert whoami(right) == "lockgate-admin"


def test_the_server_is_trusted_through_the_kubeconfig_ca_only(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "other-ca").mkdir()
    other = CertificateAuthority.create(tmp_path / "other-ca")
    # requests would otherwise trust this bundle for any session without an explicit verify
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cluster.ca))
    monkeypatch.setenv("CURL_CA_BUNDLE", str(cluster.ca))
    untrusted = kube_for(tmp_path, cluster, "untrusted", **{"certificate-authority": str(other.pair.cert)})
    with pytest.raises(
        ClusterError, match=r"TLS failed: .* not signed by the kubeconfig's certificate-authority"
    ):
        whoami(untrusted)
    trusted = kube_for(tmp_path, cluster, "trusted", **{"certificate-authority-data": b64(cluster.ca)})
    assert whoami(trusted) == "lockgate-admin"
    adapter = trusted.transport.session.get_adapter(cluster.server)
    assert isinstance(adapter, auth.TLSAdapter)
    assert adapter.context.cert_store_stats()["x509_ca"] == 1  # nothing from certifi or the environment


def test_insecure_skip_tls_verify_is_honoured(cluster: Cluster, tmp_path: Path) -> None:
    kube = kube_for(tmp_path, cluster, "insecure", **{"insecure-skip-tls-verify": True})
    assert whoami(kube) == "lockgate-admin"
