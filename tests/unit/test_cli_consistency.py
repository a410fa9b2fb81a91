"""The same conventions across every command: -h as well as --help, one -o/--output with the
same values (table|json, text an alias of table), JSON errors with -o json, tag -o json."""

from __future__ import annotations

import json
import re

import pytest

from lockgate import output
from lockgate.cli import COMMANDS, main

EVERY = [[name] for name in sorted(COMMANDS) if name != "images"] + [["images", "scan"], ["images", "update"]]


@pytest.mark.parametrize("argv", EVERY, ids=" ".join)
def test_every_command_takes_dash_h_and_one_output_spelling(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "-h"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("Usage: lockgate " + " ".join(argv))
    assert main([*argv, "--help"]) == 0
    assert capsys.readouterr().out == shown
    if re.search(r"--output\b(?!-)", shown):
        assert "[table|json]" in shown, shown
        assert "[text|json]" not in shown


def test_the_output_values_are_one_set_with_an_alias() -> None:
    choice = output.OutputFormat()
    assert choice.convert("table", None, None) == "table"
    assert choice.convert("text", None, None) == "table"
    assert choice.convert("json", None, None) == "json"


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["reconcile", "oci://127.0.0.1:9/app", "--name", "a", "-o", "json"], 2),
        (["status", "--output=json", "--no-such-flag"], 2),
        (["list", "oci://127.0.0.1:9/app:v1", "-o", "json"], 2),
        (["inspect", "oci://127.0.0.1:9/app:v1", "--output", "json"], 9),
        (["pull", "oci://127.0.0.1:9/app:v1", "-o", "/proc/x/out", "--output", "json"], 2),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
def test_errors_are_json_too_with_output_json(
    argv: list[str], code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == code
    captured = capsys.readouterr()
    error = json.loads(captured.out)["error"]
    assert error["exitCode"] == code and error["message"], error
    assert "error" in captured.err.lower()


def test_without_json_errors_stay_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reconcile", "oci://127.0.0.1:9/app", "--name", "a"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "names no tag" in captured.err
    # pull's -o is its directory (as flux pull artifact -o DIR), not a format
    assert not output.wants_json(["pull", "oci://h/r:1", "-o", "json"])
    assert output.wants_json(["push", "d", "oci://h/r:1", "-o", "json"])
