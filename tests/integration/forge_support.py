"""Helpers of the forge tests: artifacts built from a commit of some forge, Secrets, configs."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from lockgate import registry as oci
from lockgate.artifact import manifest, pack
from tests.world.kube import Cluster
from tests.world.registry import Registry


def push_built_from(reg: Registry, repo: str, files: dict[str, str], *, source: str, sha: str) -> str:
    """Push ``files`` as CI does, annotated with the source repository and commit; by tag."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "src"
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        layer = pack.pack(root, Path(tmp) / "layer.tgz")
        built = manifest.build(
            layer.digest,
            layer.size,
            {
                "org.opencontainers.image.source": source,
                "org.opencontainers.image.revision": f"main@sha1:{sha}",
            },
        )
        ref = oci.parse(reg.oci(repo, ":v1"))
        client = oci.RegistryClient.for_reference(ref)
        client.upload_blob(
            repo, built.config_blob, digest=built.manifest.config.digest, size=len(built.config_blob)
        )
        with open(layer.path, "rb") as stream:
            client.upload_blob(repo, stream, digest=layer.digest, size=layer.size)
        client.put_manifest(repo, "v1", built.content, built.manifest.media_type)
    return reg.oci(repo, ":v1")


def secret(cluster: Cluster, ns: str, name: str, **entries: str) -> None:
    cluster.kubectl("create", "namespace", ns, check=False)
    literals = [f"--from-literal={k.replace('_', '.')}={v}" for k, v in entries.items()]
    cluster.kubectl("create", "secret", "generic", name, "-n", ns, *literals)


def secret_file(cluster: Cluster, ns: str, name: str, key: str, path: Path) -> None:
    cluster.kubectl("create", "namespace", ns, check=False)
    cluster.kubectl("create", "secret", "generic", name, "-n", ns, f"--from-file={key}={path}")


def write_config(path: Path, *docs: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    return path


def runner(cluster_name: str = "east", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Runner",
        "spec": {"clusterName": cluster_name, **spec},
    }


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def commit_and_push(url: str, work: Path, files: dict[str, str], *, branch: str = "main") -> str:
    """Clone ``url`` (empty or not) into ``work``, commit ``files`` on ``branch``, push; the SHA."""
    git(work.parent, "clone", "--quiet", url, str(work))
    git(work, "checkout", "--quiet", "-B", branch)
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    git(work, "add", "-A")
    git(work, "-c", "user.name=seed", "-c", "user.email=seed@example.com", "commit", "--quiet", "-m", "seed")
    git(work, "push", "--quiet", "origin", f"HEAD:refs/heads/{branch}")
    return git(work, "rev-parse", "HEAD")
