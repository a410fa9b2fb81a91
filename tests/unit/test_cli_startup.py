"""Start-up: each command imports only what it runs (``python -X importtime``, not a timer).

``--version`` is answered before click is imported; ``--help`` lists the tree from the
summaries in ``lockgate.cli`` without importing any command; a command's ``--help`` loads
its click module but none of the libraries it calls. The ``COMMANDS`` table that replaces
the entry-point scan must name the same objects as pyproject's entry points.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import click
import pytest

from lockgate import __version__, cli
from tests.startup_support import HEAVY, imported, loaded

PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


def test_version_imports_neither_click_nor_any_command() -> None:
    done, modules = imported("--version")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == f"lockgate {__version__}\n"
    assert loaded(modules, "click", "action", "runner", *HEAVY) == []
    assert "importlib.metadata" not in modules


def test_help_imports_no_command_and_no_heavy_stack() -> None:
    done, modules = imported("--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "push " in done.stdout and "verify " in done.stdout
    assert loaded(modules, "action", "runner", *HEAVY) == []
    assert "importlib.metadata" not in modules


@pytest.mark.parametrize(
    ("command", "own_module"),
    [
        ("push", "action.artifacts.cli"),
        ("pull", "action.artifacts.cli"),
        ("verify", "action.signing.cli"),
        ("sign", "action.signing.cli"),
    ],
)
def test_a_command_help_loads_its_click_module_only(command: str, own_module: str) -> None:
    done, modules = imported(command, "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert own_module in modules
    assert loaded(modules, "runner", *HEAVY) == []
    assert "importlib.metadata" not in modules


def test_the_command_table_matches_the_entry_points() -> None:
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]["lockgate.commands"]
    assert declared == cli.COMMANDS
    for target in cli.COMMANDS.values():
        assert isinstance(cli.load(target), click.Command)


def test_help_summaries_cover_every_landed_command() -> None:
    assert set(cli.COMMANDS) <= set(cli.PLANNED)


def test_build_runs_without_the_http_or_crypto_stack(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    done, modules = imported("build", str(tree), "-O", str(tmp_path / "layer.tgz"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "yaml" in modules  # the manifests are validated
    assert loaded(modules, "requests", "urllib3", "cryptography", "nacl", "sigstore", "runner") == []
