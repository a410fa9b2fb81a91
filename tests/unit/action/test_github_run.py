"""The run step before any child runs: masks first, refusals as annotations with exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from action.github import run
from action.github.inputs import env_name


def test_missing_input_is_an_annotation_and_a_usage_exit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    env = {env_name("command"): "push", env_name("password"): "s3cret-pass", "RUNNER_TEMP": str(tmp_path)}
    assert run.run(env) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "::add-mask::s3cret-pass"
    assert lines[1] == "::error title=lockgate push::input `url` is required by command `push`"
    assert list(tmp_path.iterdir()) == []  # the private directory is gone


def test_keyless_without_token_exits_with_the_auth_code(capsys: pytest.CaptureFixture[str]) -> None:
    env = {env_name("command"): "push", env_name("url"): "oci://r.io/a:b", env_name("sign"): "keyless"}
    assert run.run(env) == 3
    assert "add `permissions: id-token: write`" in capsys.readouterr().out


def test_bad_flag_value_names_the_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert run.run({env_name("command"): "diff", env_name("summary"): "yes"}) == 2
    assert "input `summary` must be true or false" in capsys.readouterr().out


def test_install_runs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert run.run({env_name("command"): "install"}) == 0
    assert capsys.readouterr().out == ""
