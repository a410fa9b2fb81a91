"""The same conventions across every command: -h as well as --help, one -o/--output with the
same values (table|json, text an alias of table), JSON errors with -o json, tag -o json.

The walks below visit every command of the tree (``EVERY``, from ``lockgate.cli.COMMANDS``
and the groups' subcommands), so a new command or option is held to them without being
listed here: every option has help text; ``-o`` is ``--output`` wherever it exists; a
command that prints a result takes ``-o/--output``; one that talks to a cluster
(``--kubeconfig``) takes ``--context``; a group's command list is not cut mid-sentence.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest

from lockgate import output
from lockgate.cli import COMMANDS, load, main, root


def _walk(command: click.Command, path: list[str]) -> list[tuple[list[str], click.Command]]:
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        return [
            found
            for name in command.list_commands(ctx)
            for found in _walk(command.get_command(ctx, name) or command, [*path, name])
        ]
    return [(path, command)]


TREE = [found for name in sorted(COMMANDS) for found in _walk(load(COMMANDS[name]), [name])]
EVERY = [path for path, _ in TREE]
#: commands that print no result to choose a format for: serve runs until stopped and logs
#: (its format is --log-format); keygen's -o prints the key files' paths
NO_RESULT = {"serve"}


def _options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and p.name != "help"]


@pytest.mark.parametrize(("path", "command"), TREE, ids=[" ".join(p) for p in EVERY])
def test_every_option_has_help_and_one_meaning_of_dash_o(path: list[str], command: click.Command) -> None:
    options = _options(command)
    assert [o.opts for o in options if not (o.help or "").strip()] == [], "options without help text"
    flags = {flag: o for o in options for flag in o.opts}
    if "-o" in flags:
        assert "--output" in flags["-o"].opts, f"-o of {' '.join(path)} is {flags['-o'].opts}"
    if " ".join(path) not in NO_RESULT:
        assert "-o" in flags and "--output" in flags, (
            f"{' '.join(path)} prints a result: it takes -o/--output"
        )
    if "--kubeconfig" in flags:
        assert "--context" in flags, f"{' '.join(path)} talks to a cluster: it takes --context"
        assert flags["--context"].help == "The kubeconfig context to use (default: the current context)."


def test_a_groups_command_list_is_never_cut(capsys: pytest.CaptureFixture[str]) -> None:
    groups = sorted({path[0] for path in EVERY if len(path) > 1})
    assert groups == ["images"]
    for group in groups:
        assert main([group, "--help"]) == 0
        listing = capsys.readouterr().out.split("Commands:", 1)[1]
        assert "..." not in listing, listing
    assert "..." not in "".join(str(root.get_help(click.Context(root))).split("Commands:")[1:])


def test_hidden_values_are_not_offered_in_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "-o", "xml"]) == 2
    err = capsys.readouterr().err
    assert "'xml' is not one of 'table', 'json'." in err, err
    assert "text" not in err


def test_push_without_arguments_names_what_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["push"]) == 2
    err = capsys.readouterr().err
    assert "push needs the manifests' PATH and the target oci://REGISTRY/REPO:TAG" in err, err
    assert "ARGS" not in err
    assert main(["push", "./deploy"]) == 2
    assert "missing the target oci://REGISTRY/REPO:TAG after it" in capsys.readouterr().err
    assert main(["push", "oci://127.0.0.1:9/app:v1"]) == 2
    assert "missing the manifests' PATH before it" in capsys.readouterr().err
    assert main(["push", "--each", "apps/*"]) == 2
    assert "push --each needs the target" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["pull", "build"])
def test_pull_and_build_refuse_a_path_that_looks_like_a_format(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = "oci://127.0.0.1:9/app:v1" if command == "pull" else str(tmp_path)
    for flag in ("-O", "--out"):
        assert main([command, source, flag, "json"]) == 2
        assert "'json' looks like an output format, not a path" in capsys.readouterr().err
    assert not (tmp_path / "json").exists() and not Path("json").exists()


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
        # a command's own formats come after these two (preview's markdown)
        assert re.search(r"\[table\|json(\|[a-z]+)*\]", shown), shown
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
        (["pull", "oci://127.0.0.1:9/app:v1", "-O", "/proc/x/out", "-o", "json"], 2),
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
    # -o is --output in every command, pull and build too (they write to -O/--out)
    for command in (["pull", "oci://h/r:1"], ["build", "d"], ["push", "d", "oci://h/r:1"]):
        assert output.wants_json([*command, "-o", "json"])
