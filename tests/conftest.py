"""Session-scoped fixtures for the world: registry, auth registry, a registry with the referrers
API, git remote, cluster.

A test that needs the world and cannot get it fails with the component's log tail
(``WorldSetupError``); it never skips. Each test gets unique names (``unique``) so tests
run in any order and in parallel.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.world.gitremote import GitRemote, start_git_remote
from tests.world.registry import Registry, start_registry

if TYPE_CHECKING:
    from tests.world.flux import FluxControllers
    from tests.world.gitea import Gitea
    from tests.world.kube import Cluster
    from tests.world.referrers_registry import ReferrersRegistry

#: the local Sigstore stack (Fulcio, CT log, Rekor v2, TSA, an OIDC issuer) for keyless tests
pytest_plugins = ["tests.world.sigstore_fixtures"]


@pytest.fixture(scope="session")
def world_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="lockgate-world-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def registry(world_dir: Path) -> Iterator[Registry]:
    reg = start_registry(world_dir, name="registry")
    yield reg
    reg.stop()


@pytest.fixture(scope="session")
def auth_registry(world_dir: Path) -> Iterator[Registry]:
    reg = start_registry(world_dir, auth=True, name="auth-registry")
    yield reg
    reg.stop()


@pytest.fixture(scope="session")
def referrers_registry(world_dir: Path) -> Iterator[ReferrersRegistry]:
    """go-containerregistry's registry with the OCI referrers API, behind a front that pages
    the list and answers ETags (``tests/world/referrers_registry.py``)."""
    from tests.world.referrers_registry import start_referrers_registry

    reg = start_referrers_registry(world_dir)
    yield reg
    reg.stop()


@pytest.fixture(scope="session")
def git_remote(world_dir: Path) -> Iterator[GitRemote]:
    remote = start_git_remote(world_dir)
    yield remote
    remote.stop()


@pytest.fixture(scope="session")
def gitea(world_dir: Path) -> Iterator[Gitea]:
    """A real Gitea (admin user, token): the forge of the forge tests."""
    from tests.world.gitea import start_gitea

    forge = start_gitea(world_dir)
    yield forge
    forge.stop()


@pytest.fixture(scope="session")
def cluster(world_dir: Path) -> Iterator[Cluster]:
    """etcd + kube-apiserver with RBAC on, an admin kubeconfig (the minimal profile)."""
    from tests.world.kube import start_cluster

    kube = start_cluster(world_dir / "cluster")
    yield kube
    kube.stop()


@pytest.fixture(scope="session")
def full_cluster(cluster: Cluster) -> Cluster:
    """The same cluster plus controller-manager, scheduler and kwok nodes (the full profile)."""
    cluster.start_full_profile()
    return cluster


@pytest.fixture(scope="session")
def flux(full_cluster: Cluster, world_dir: Path) -> Iterator[FluxControllers]:
    """Flux's own source-controller and kustomize-controller (v1.9.5, as Flux v2.9.5 ships them)
    running against the full cluster, with their CRDs and notification-controller's."""
    from tests.world import flux as flux_world

    full_cluster.kubectl("create", "namespace", flux_world.NAMESPACE, check=False)
    flux_world.install_crds(full_cluster)
    controllers = flux_world.start_controllers(full_cluster, world_dir / "flux")
    yield controllers
    controllers.stop()


@pytest.fixture
def unique(request: pytest.FixtureRequest) -> str:
    """A short DNS-1123 name unique to this test, for namespaces, repositories, branches."""
    base = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    return f"{base}-{uuid.uuid4().hex[:6]}"
