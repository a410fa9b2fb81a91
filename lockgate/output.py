"""``-o/--output``: the one output option every command takes, and JSON errors.

``table`` (alias ``text``, which older releases printed for some commands) or ``json``,
the same spelling everywhere; commands compare only with ``"json"``. With ``-o json`` a
failure is also printed as ``{"error": {"message": ..., "exitCode": N}}`` on stdout, so a
script reading JSON gets JSON either way (``lockgate.cli.main``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

ALIASES = {"text": "table"}

#: ``-h`` as well as ``--help``: the root's settings, and those of a group that may run on its
#: own (click keeps a command's help option once made, so a group invoked without the root,
#: as in a test, must not leave its commands without ``-h``)
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


class OutputFormat(click.Choice[str]):
    """``table`` or ``json``; ``text`` is accepted as ``table``."""

    name = "output"

    def __init__(self) -> None:
        super().__init__(["table", "json", "text"])

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        chosen = super().convert(value, param, ctx)
        return ALIASES.get(chosen, chosen)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[table|json]"


def output_option(func: F) -> F:
    """``-o, --output [table|json]`` (default table), passed as ``output``."""
    return click.option("--output", "-o", "output", type=OutputFormat(), default="table", show_default=True)(
        func
    )


def long_output_option(func: F) -> F:
    """``--output [table|json]`` without ``-o``: for ``pull``, where ``-o`` is the directory to
    create, as in ``flux pull artifact -o DIR``."""
    option = click.option("--output", "output", type=OutputFormat(), default="table", show_default=True)
    return option(func)


def wants_json(argv: Sequence[str]) -> bool:
    """Whether the command line asks for JSON output (``-o json``, ``--output=json``...)."""
    # pull and build take -o for the path they write (as flux pull artifact -o DIR)
    short = ("-o", "--output") if not argv or argv[0] not in ("pull", "build") else ("--output",)
    for index, arg in enumerate(argv):
        if arg in short and index + 1 < len(argv) and argv[index + 1] == "json":
            return True
        if arg == "--output=json" or (arg == "-ojson" and "-o" in short):
            return True
    return False


def error_json(message: str, exit_code: int) -> dict[str, Any]:
    return {"error": {"message": message, "exitCode": exit_code}}
