"""The in-cluster service account against the real API server: its bound token rotates.

The kubelet replaces the projected token file (an atomic rename) well before the old
token expires; a long pass must pick the new one up, and re-read the file after a 401
even when it looks unchanged.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from runner.kube import kubeconfig
from runner.kube.client import Kube
from tests.integration.kube_support import token_of, whoami
from tests.world.kube import Cluster

pytestmark = pytest.mark.world


def in_cluster_kube(cluster: Cluster, directory: Path) -> Kube:
    server = urlsplit(cluster.server)
    environ = {"KUBERNETES_SERVICE_HOST": str(server.hostname), "KUBERNETES_SERVICE_PORT": str(server.port)}
    credentials = kubeconfig.in_cluster(directory=directory, environ=environ)
    return Kube.for_credentials(credentials)


def mount(cluster: Cluster, tmp_path: Path, first_token: str) -> Path:
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    shutil.copy(cluster.ca, directory / "ca.crt")
    (directory / "token").write_text(first_token)
    return directory


def test_a_rotated_token_file_is_picked_up(cluster: Cluster, unique: str, tmp_path: Path) -> None:
    first = token_of(cluster.service_account_kubeconfig("first", unique))
    second = token_of(cluster.service_account_kubeconfig("second", unique))
    directory = mount(cluster, tmp_path, first)
    kube = in_cluster_kube(cluster, directory)
    assert whoami(kube) == f"system:serviceaccount:{unique}:first"
    (directory / "token.new").write_text(second)
    (directory / "token.new").replace(directory / "token")
    assert whoami(kube) == f"system:serviceaccount:{unique}:second"


def test_after_a_401_the_token_file_is_read_again(cluster: Cluster, unique: str, tmp_path: Path) -> None:
    valid = token_of(cluster.service_account_kubeconfig("rotated", unique))
    # the same length, a broken signature: refused with 401
    middle = len(valid) - 10
    broken = valid[:middle] + ("A" if valid[middle] != "A" else "B") + valid[middle + 1 :]
    directory = mount(cluster, tmp_path, broken)
    kube = in_cluster_kube(cluster, directory)
    assert kube.transport.authenticator.header() == f"Bearer {broken}"  # read and remembered
    token = directory / "token"
    before = token.stat()
    with token.open("r+") as handle:  # rewritten in place: same inode, size and mtime
        handle.write(valid)
    os.utime(token, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert whoami(kube) == f"system:serviceaccount:{unique}:rotated"
    assert kube.counts["create"] == 2
