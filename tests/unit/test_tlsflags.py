"""The TLS flags are one definition (``lockgate.tlsflags``) on every command that reads a registry;
``lockgate copy`` has them per side, and a half client pair is refused naming that side's flags."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from lockgate import cli
from lockgate.errors import ExitCode, UsageError

FLAGS = ("--ca-file", "--cert-file", "--key-file")


@pytest.mark.parametrize("command", ["push", "pull", "verify", "fleet", "reconcile", "rollback"])
def test_each_registry_command_takes_the_tls_flags(command: str) -> None:
    shown = CliRunner().invoke(cli.root, [command, "--help"])
    assert shown.exit_code == 0, shown.output
    assert all(f"  {flag} FILE" in shown.output for flag in FLAGS), shown.output


def test_copy_takes_them_once_per_side() -> None:
    shown = CliRunner().invoke(cli.root, ["copy", "--help"])
    assert shown.exit_code == 0, shown.output
    for side in ("--from-", "--to-"):
        assert all(f"  {flag.replace('--', side)} FILE" in shown.output for flag in FLAGS), shown.output
    assert "  --ca-file" not in shown.output


@pytest.mark.parametrize("side", ["from-", "to-"])
def test_half_a_client_pair_names_its_sides_flags(side: str) -> None:
    """Refused before any request (port 1 answers nothing)."""
    half = CliRunner().invoke(
        cli.root, ["copy", "oci://127.0.0.1:1/a:v1", "oci://127.0.0.1:1/b:v1", f"--{side}cert-file", "c.pem"]
    )
    assert isinstance(half.exception, UsageError), half.output
    assert half.exception.exit_code == ExitCode.USAGE
    assert f"--{side}cert-file and --{side}key-file go together" in half.exception.message
