"""The CLI root: version, the planned command tree, and honest stubs for what has not landed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from lockgate import __version__, cli
from lockgate.errors import ExitCode


def test_version() -> None:
    result = CliRunner().invoke(cli.root, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"lockgate {__version__}"


def test_help_lists_the_planned_command_tree() -> None:
    result = CliRunner().invoke(cli.root, ["--help"])
    assert result.exit_code == 0
    listed = {line.split()[0] for line in result.output.split("Commands:")[1].splitlines() if line.strip()}
    assert set(cli.PLANNED) <= listed


def test_every_planned_command_has_landed() -> None:
    assert set(cli.PLANNED) - set(cli.COMMANDS) == set()


def test_an_unlanded_command_says_not_implemented_and_prints_nothing_else(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(cli.PLANNED, "someday", "A command whose issue has not landed.")
    code = cli.main(["someday", "some-arg", "--some-flag"])
    out, err = capsys.readouterr()
    assert code == ExitCode.NOT_IMPLEMENTED
    assert out == ""
    assert err.strip() == "error: 'lockgate someday' is not implemented yet"


def test_console_script_is_installed_and_maps_errors_to_exit_codes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lockgate", "no-such-command"], capture_output=True, text=True
    )
    assert done.returncode == ExitCode.USAGE
    assert "No such command" in done.stderr
