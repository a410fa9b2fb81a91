"""The project's container image (deploy/Containerfile), run with buildah against the world.

The image is built by ``tests.world.image`` (a debootstrap base, buildah with vfs and
``--isolation chroot``; cached, rebuilt only when an input changes) and run with
``buildah run`` on the host network. ``buildah run`` has no ``--read-only``; a read-only
root filesystem is emulated as a Pod with ``readOnlyRootFilesystem`` and an emptyDir on /tmp
would be: every run here is the image's own non-root user with a fresh tmpfs on /tmp, and
``test_nothing_outside_tmp_is_writable`` checks that this user can write nowhere else. When
buildah or debootstrap is missing, the build fails with the step and its log tail.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import lockgate
from lockgate import registry as lg_registry
from tests.integration.artifacts_support import client, write_tree
from tests.integration.artifacts_support import lockgate as host_lockgate
from tests.integration.kube_support import token_of
from tests.integration.reconcile_support import configmap, dump, get, push_tree
from tests.world import image
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

GOLDEN = Path(__file__).resolve().parents[1] / "unit" / "artifact" / "test_golden.py"
#: where a Pod has its ServiceAccount (/var/run/secrets/...: /var/run is a symlink to /run in the
#: image, and buildah resolves a mount destination through it on the host, so mount at its target)
SA_MOUNT = "/run/secrets/kubernetes.io/serviceaccount"
#: what a pass needs in its runner namespace and the one it applies to (cf. test_kube_exec_plugin)
RUNNER_RULES = [
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "create", "patch"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create", "patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list"]},
]
NAMESPACE_RULES = [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}]

#: lists what the image's user could write outside /tmp (and the kernel's /proc, /sys, /dev)
_WRITABLE = """
import os
found = []
for top, dirs, files in os.walk("/"):
    if top in ("/proc", "/sys", "/dev", "/tmp"):
        dirs[:] = []
        continue
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in ("/proc", "/sys", "/dev", "/tmp")]
    for name in [*dirs, *files]:
        path = os.path.join(top, name)
        if not os.path.islink(path) and os.access(path, os.W_OK):
            found.append(path)
if os.access("/", os.W_OK):
    found.append("/")
print("\\n".join(found))
"""


@pytest.fixture(scope="module")
def built() -> image.Image:
    return image.build()


@pytest.fixture(scope="module")
def ctr(built: image.Image) -> Iterator[str]:
    with image.container(built) as name:
        yield name


def test_the_entrypoint_is_lockgate_as_a_non_root_user(built: image.Image, ctr: str) -> None:
    config = image.config(built)
    assert config["Entrypoint"] == ["lockgate"]
    assert config["User"] == f"{image.USER}:{image.USER}"
    entrypoint = config["Entrypoint"]
    assert isinstance(entrypoint, list)
    ran = image.run(ctr, [*entrypoint, "--version"])
    assert (ran.code, ran.out.strip()) == (0, f"lockgate {lockgate.__version__}"), ran.err
    ran = image.run(ctr, ["id", "-u"])
    assert ran.out.strip() == str(image.USER), ran.err
    ran = image.run(ctr, ["kustomize", "version"])
    assert ran.code == 0 and ran.out.strip().startswith("v5."), ran.err


_SOURCES = """
import hashlib, json, pathlib, sys
site = pathlib.Path(sys.argv[1])
print(json.dumps({str(p.relative_to(site)): hashlib.sha256(p.read_bytes()).hexdigest()
                  for top in ("lockgate", "action", "runner") for p in sorted((site / top).rglob("*.py"))}))
"""


def test_the_image_holds_this_checkouts_lockgate(ctr: str) -> None:
    """Not a stale build: every module in the image's venv is the checkout's."""
    site = "/opt/lockgate/lib/python3.11/site-packages"
    ran = image.run(ctr, ["python3", "-c", _SOURCES, site])
    assert ran.code == 0, ran.err
    inside: dict[str, str] = json.loads(ran.out)
    root = image.ROOT
    checkout = {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for top in ("lockgate", "action", "runner")
        for p in sorted((root / top).rglob("*.py"))
    }
    assert inside == checkout


def test_the_image_pushes_to_the_worlds_registry(built: image.Image, registry: Registry, unique: str) -> None:
    digest = image.push(built, f"{registry.host}/{unique}:test")
    request = urllib.request.Request(
        f"{registry.url}/v2/{unique}/manifests/test",
        headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.headers["Docker-Content-Digest"] == digest
        manifest = json.loads(response.read())
    with urllib.request.urlopen(
        f"{registry.url}/v2/{unique}/blobs/{manifest['config']['digest']}"
    ) as response:
        config = json.loads(response.read())
    assert config["config"]["Entrypoint"] == ["lockgate"]
    size = image.pushed_size(registry.url, unique, digest)
    print(f"image {built.name}: {built.size / 1e6:.0f} MB uncompressed, {size / 1e6:.1f} MB pushed")
    assert 0 < size < 150_000_000


def test_push_from_inside_the_image_gives_the_hosts_digest(
    ctr: str, registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = write_tree(tmp_path / "src", unique)
    flags = ["--source", "https://git.example/repo", "--revision", "main@sha1:" + "b" * 40, "-o", "json"]
    ran = image.run(
        ctr,
        ["lockgate", "push", "/src", registry.oci(unique, ":image"), *flags],
        volumes=[f"{tree}:/src:ro"],
    )
    assert ran.code == 0, ran.err
    inside = json.loads(ran.out)
    assert inside["status"] == "pushed"
    host = host_lockgate("push", str(tree), registry.oci(unique, ":host"), *flags)
    assert host.code == 0, host.err
    # the same content gives the same artifact on the host and in the image (bundled deflate)
    assert json.loads(host.out)["digest"] == inside["digest"]


def test_push_inside_the_image_reads_the_revision_of_a_checkout_it_does_not_own(
    ctr: str, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """A CI checkout belongs to the runner's user, not the image's; git must still read it."""
    tree = write_tree(tmp_path / "repo", unique)
    git = ["git", "-C", str(tree), "-c", "user.email=ci@example.org", "-c", "user.name=ci"]
    for args in (["init", "-q", "-b", "main"], ["remote", "add", "origin", "https://git.example/org/repo"]):
        subprocess.run([*git, *args], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True, env={**os.environ, "TZ": "UTC"})
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout
    ran = image.run(
        ctr,
        ["lockgate", "push", "/src", registry.oci(unique, ":image"), "-o", "json"],
        volumes=[f"{tree}:/src:ro"],
    )
    assert ran.code == 0, ran.err
    digest = json.loads(ran.out)["digest"]
    fetched = client(registry, lg_registry.parse(registry.oci(unique, ":image"))).get_manifest(unique, digest)
    annotations = json.loads(fetched.content)["annotations"]
    assert annotations["org.opencontainers.image.revision"] == f"main@sha1:{sha.strip()}"
    assert annotations["org.opencontainers.image.source"] == "https://git.example/org/repo"


def test_the_golden_digest_test_passes_inside_the_image(ctr: str) -> None:
    """tests/unit/artifact/test_golden.py itself, run by the image's Python and lockgate."""
    script = (
        "import sys, tempfile, pathlib, lockgate.artifact.pack as p; sys.path.insert(0, '/golden'); "
        "import test_golden; print(p.__file__); "
        "test_golden.test_a_fixed_tree_packs_to_the_golden_digest(pathlib.Path(tempfile.mkdtemp()))"
    )
    ran = image.run(ctr, ["python3", "-c", script], volumes=[f"{GOLDEN}:/golden/test_golden.py:ro"])
    assert ran.code == 0, ran.err
    assert ran.out.strip().startswith("/opt/lockgate/lib/python3.11/site-packages/lockgate/"), ran.out


def test_nothing_outside_tmp_is_writable(ctr: str) -> None:
    ran = image.run(ctr, ["python3", "-c", _WRITABLE])
    assert ran.code == 0, ran.err
    assert ran.out.split() == []
    ran = image.run(ctr, ["sh", "-c", "touch /tmp/ok && ! touch /opt/lockgate/x 2>/dev/null && echo ok"])
    assert ran.out.strip() == "ok", ran.err


def _service_account(cluster: Cluster, directory: Path, namespace: str, token: str) -> Path:
    """What the kubelet mounts in a Pod: token, ca.crt, namespace (readable by the Pod's user)."""
    directory.mkdir()
    (directory / "token").write_text(token)
    shutil.copy(cluster.ca, directory / "ca.crt")
    (directory / "namespace").write_text(namespace)
    for path in directory.iterdir():
        path.chmod(0o644)
    return directory


def test_reconcile_from_inside_the_image_with_the_pods_service_account(
    ctr: str, cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    # a real bound token from the TokenRequest API, for a ServiceAccount with exactly these rules
    token = token_of(
        cluster.service_account_kubeconfig(
            "runner", unique, rules=RUNNER_RULES, cluster_rules=NAMESPACE_RULES
        )
    )
    sa = _service_account(cluster, tmp_path / "serviceaccount", unique, token)
    server = urlsplit(cluster.server)
    # 127.0.0.1 is in the world's apiserver certificate (so is kubernetes.default.svc, which
    # no resolver here knows); the host network of `buildah run` reaches it
    env = {"KUBERNETES_SERVICE_HOST": str(server.hostname), "KUBERNETES_SERVICE_PORT": str(server.port)}
    kustomization = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
    kustomization += "resources: [cm.yaml]\nlabels:\n  - pairs: {built-by: kustomize}\n"
    allowed = push_tree(
        registry,
        unique,
        {"kustomization.yaml": kustomization, "cm.yaml": dump(configmap("a", unique, {"k": "1"}))},
    )
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": unique},
        "spec": {"ports": [{"port": 80}]},
    }
    denied = push_tree(registry, unique, {"s.yaml": dump(service)}, tag="denied")
    try:

        def reconcile(url: str) -> image.Ran:
            argv = ["lockgate", "reconcile", url, "--name", unique, "-n", unique, "--insecure-skip-verify"]
            return image.run(ctr, argv, volumes=[f"{sa}:{SA_MOUNT}:ro"], env=env)

        ran = reconcile(allowed)
        assert ran.code == 0, ran.err + ran.out
        live = get(cluster, "configmap", "a", unique)
        assert live is not None and live["data"] == {"k": "1"}
        assert live["metadata"]["labels"]["built-by"] == "kustomize"  # kustomize ran in the image
        # the ServiceAccount's RBAC, not some other credential: services are read-only for it
        ran = reconcile(denied)
        assert ran.code == 5, ran.err + ran.out
        assert f"cannot patch services in namespace {unique}" in ran.err
        assert token not in ran.err + ran.out
    finally:
        (sa / "token").unlink()


def test_the_build_key_changes_with_the_sources_and_only_with_them(tmp_path: Path) -> None:
    """What decides a rebuild: a tracked or new source file changes the key, ignored files do not."""
    checkout = tmp_path / "checkout"
    (checkout / "lockgate").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\nname = 'lockgate'\ndependencies = []\n")
    (checkout / "README.md").write_text("readme\n")
    (checkout / "lockgate" / "__init__.py").write_text("x = 1\n")
    (checkout / ".gitignore").write_text("__pycache__/\n")
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    first = image.image_key(checkout, image.DEFAULT_SUITE)
    (checkout / "lockgate" / "__pycache__").mkdir()
    (checkout / "lockgate" / "__pycache__" / "m.pyc").write_bytes(b"\0")
    (checkout / "notes.txt").write_text("not an input\n")
    assert image.image_key(checkout, image.DEFAULT_SUITE) == first
    (checkout / "lockgate" / "new.py").write_text("y = 2\n")
    second = image.image_key(checkout, image.DEFAULT_SUITE)
    assert second != first
    (checkout / "lockgate" / "__init__.py").write_text("x = 2\n")
    assert image.image_key(checkout, image.DEFAULT_SUITE) not in (first, second)
