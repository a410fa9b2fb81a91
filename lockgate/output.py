"""``-o/--output``: the one output option every command takes, and JSON errors.

``table`` (alias ``text``, which older releases printed for some commands) or ``json``,
the same spelling everywhere; ``-o`` means ``--output`` in every command (``pull`` and
``build`` write to ``-O/--out``). Commands compare only with ``"json"``. With ``-o json`` a
failure is also printed as ``{"error": {"message": ..., "exitCode": N}}`` on stdout, so a
script reading JSON gets JSON either way (``lockgate.cli.main``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

ALIASES = {"text": "table"}
#: what ``--output`` offers; the aliases are accepted but never listed
SHOWN = ("table", "json")

#: ``-h`` as well as ``--help``: the root's settings, and those of a group that may run on its
#: own (click keeps a command's help option once made, so a group invoked without the root,
#: as in a test, must not leave its commands without ``-h``)
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


class OutputFormat(click.Choice[str]):
    """``table`` or ``json`` (and a command's ``extra`` formats); ``text`` is accepted as ``table``."""

    name = "output"

    def __init__(self, extra: tuple[str, ...] = ()) -> None:
        super().__init__(["table", "json", *extra, "text"])
        self.shown = (*SHOWN, *extra)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value not in self.choices:
            # click would list every choice, the hidden alias too
            self.fail(f"{value!r} is not one of {', '.join(repr(c) for c in self.shown)}.", param, ctx)
        chosen = super().convert(value, param, ctx)
        return ALIASES.get(chosen, chosen)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(self.shown) + "]"


def output_option(func: F) -> F:
    """``-o, --output [table|json]`` (default table), passed as ``output``."""
    return click.option(
        "--output",
        "-o",
        "output",
        type=OutputFormat(),
        default="table",
        show_default=True,
        help='Print the result as a table or as JSON (a failure too, as {"error": ...}).',
    )(func)


def output_option_with(*extra: str, help: str) -> Callable[[F], F]:
    """``output_option`` with a command's own formats after ``table`` and ``json`` (``preview``'s
    ``markdown``)."""

    def decorate(func: F) -> F:
        return click.option(
            "--output",
            "-o",
            "output",
            type=OutputFormat(extra),
            default="table",
            show_default=True,
            help=help,
        )(func)

    return decorate


class OutPath(click.Path):
    """The path ``pull`` and ``build`` write (``-O/--out``); a format name is refused, since it
    is almost surely ``-o json`` (``--output``) typed as ``-O``."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value in (*SHOWN, *ALIASES):
            self.fail(
                f"{value!r} looks like an output format, not a path: for the format use -o/--output "
                f"{value}; for a path named so write ./{value}",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


def wants_json(argv: Sequence[str]) -> bool:
    """Whether the command line asks for JSON output (``-o json``, ``--output=json``...)."""
    for index, arg in enumerate(argv):
        if arg in ("-o", "--output") and index + 1 < len(argv) and argv[index + 1] == "json":
            return True
        if arg in ("--output=json", "-ojson"):
            return True
    return False


def error_json(message: str, exit_code: int) -> dict[str, Any]:
    return {"error": {"message": message, "exitCode": exit_code}}
