"""The whole world in one object, for ``make world``, ``make demo`` and the benchmarks.

pytest uses the same components through session fixtures (tests/conftest.py).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.world.gitremote import GitRemote, start_git_remote
from tests.world.kube import Cluster, start_cluster
from tests.world.registry import Registry, start_registry


@dataclass
class World:
    directory: Path
    registry: Registry
    git: GitRemote
    cluster: Cluster | None = None
    timings: dict[str, float] = field(default_factory=dict)
    _owns_directory: bool = True

    @classmethod
    def start(cls, *, cluster: bool = True, full: bool = True, directory: Path | None = None) -> World:
        owns = directory is None
        workdir = directory or Path(tempfile.mkdtemp(prefix="lockgate-world-"))
        timings: dict[str, float] = {}
        t = time.monotonic()
        registry = start_registry(workdir)
        timings["registry"] = time.monotonic() - t
        t = time.monotonic()
        git = start_git_remote(workdir)
        timings["git"] = time.monotonic() - t
        world = cls(directory=workdir, registry=registry, git=git, timings=timings, _owns_directory=owns)
        try:
            if cluster:
                t = time.monotonic()
                world.cluster = start_cluster(workdir / "cluster")
                timings["cluster"] = time.monotonic() - t
                if full:
                    t = time.monotonic()
                    world.cluster.start_full_profile()
                    timings["full_profile"] = time.monotonic() - t
        except BaseException:
            world.stop()
            raise
        return world

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
        self.git.stop()
        self.registry.stop()
        if self._owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def describe(self) -> str:
        lines = [
            f"registry:   {self.registry.host}  (oci://{self.registry.host}/<repo>, plain http)",
            f"git remote: {self.git.url('<name>')}  (bare repos under {self.git.base})",
        ]
        if self.cluster is not None:
            lines.append(f"KUBECONFIG={self.cluster.kubeconfig}")
        lines.append(f"logs:       {self.directory}")
        return "\n".join(lines)
