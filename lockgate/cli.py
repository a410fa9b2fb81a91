"""The click root of the ``lockgate`` command.

The root lives in the shared core but must not import the CI or cluster halves, so each
command is named here by the module that defines it (``COMMANDS``, as ``module:attribute``
strings, the same values as the ``lockgate.commands`` entry points in pyproject.toml) and
imported only when it runs. ``--help`` renders the summaries below without importing any
command, and no call scans entry-point metadata (importlib.metadata alone cost 25 ms of
every start-up); only a name that is in neither table is looked up among the entry points,
so a plugin still works. Every planned command is listed in ``PLANNED``; one whose issue has
not landed is a stub that exits non-zero with "not implemented yet" and prints nothing else.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from lockgate import __version__, output, terminal
from lockgate.errors import ExitCode, LockgateError, NotImplementedYet
from lockgate.paths import os_error_message
from lockgate.redact import scrub

#: every command of the tree, with its one-line summary
PLANNED: dict[str, str] = {
    "build": "Pack manifests into a reproducible artifact tarball.",
    "push": "Build and push manifests as a Flux-compatible OCI artifact.",
    "pull": "Pull an artifact by digest and extract it safely.",
    "tag": "Tag an artifact in its repository.",
    "inspect": "Show an artifact's manifest, annotations and files.",
    "list": "List the artifact tags of a repository.",
    "diff": "Diff local manifests against a remote artifact, object by object.",
    "copy": "Copy an artifact by digest with its signatures and attestations to a mirror or layout.",
    "keygen": "Create a cosign-compatible key pair.",
    "sign": "Sign an artifact by digest (key or Sigstore keyless).",
    "attest": "Attest a predicate about an artifact by digest (e.g. a manual approval).",
    "verify": "Verify an artifact's signature against a policy.",
    "fleet": "Show where each revision runs: revision x cluster, from the registry's attestations.",
    "images": "Scan registries for new image tags and update setter markers.",
    "reconcile": "Pull a verified artifact and converge the cluster (one pass).",
    "serve": "Run reconcile passes continuously and serve health and metrics.",
    "status": "Show what the runner last applied, its health and history.",
    "sync": "Ask lockgate serve for a pass of one sync now.",
    "rollback": "Roll a sync back to an earlier digest, verified again.",
    "delete": "Delete a sync: its objects by its deletionPolicy, then its inventory.",
    "receivers": "Print each registry receiver's secret hook path.",
}

#: where each landed command lives; tests/unit/test_cli.py checks these match the entry points
COMMANDS: dict[str, str] = {
    "build": "action.artifacts.cli:build",
    "push": "action.artifacts.cli:push",
    "pull": "action.artifacts.cli:pull",
    "tag": "action.artifacts.cli:tag",
    "inspect": "action.artifacts.cli:inspect",
    "list": "action.artifacts.cli:list_",
    "diff": "action.artifacts.cli:diff",
    "copy": "lockgate.copycli:copy",
    "keygen": "action.signing.cli:keygen",
    "sign": "action.signing.cli:sign",
    "attest": "action.signing.cli:attest",
    "verify": "action.signing.cli:verify",
    "fleet": "action.fleet.cli:fleet",
    "images": "action.images.cli:images",
    "reconcile": "runner.cli:reconcile",
    "serve": "runner.cli:serve",
    "status": "runner.commands.history:status_",
    "sync": "runner.commands.history:sync",
    "rollback": "runner.commands.history:rollback_",
    "delete": "runner.cli:delete",
    "receivers": "runner.commands.receivers:receivers_",
}


def load(target: str) -> click.Command:
    """The click command at ``module:attribute``."""
    module_name, _, attribute = target.partition(":")
    # __import__, not importlib.import_module: the latter's own module is missing from
    # ``python -X importtime``, which is how start-up is measured (bench/bench_startup.py)
    command = getattr(__import__(module_name, fromlist=[attribute]), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{target} is not a click command")
    return command


def _stub(name: str, summary: str) -> click.Command:
    def run(**_: Any) -> None:
        raise NotImplementedYet(name)

    return click.Command(
        name,
        callback=run,
        help=f"{summary}\n\nNot implemented yet.",
        short_help=f"{summary} (not implemented yet)",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        params=[click.Argument(["args"], nargs=-1, required=False)],
    )


class CommandTree(click.Group):
    """A group whose commands are imported on use, falling back to plugins, then planned stubs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(PLANNED) | set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        target = COMMANDS.get(cmd_name) or _plugin(cmd_name)
        if target is not None:
            return load(target)
        planned = PLANNED.get(cmd_name)
        if planned is not None:
            return _stub(cmd_name, planned)
        return None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from ``PLANNED``'s summaries, so ``--help`` imports no command."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.commands:
                summary = self.commands[name].get_short_help_str(limit)
            elif name in PLANNED:
                summary = PLANNED[name] if name in COMMANDS else f"{PLANNED[name]} (not implemented yet)"
            else:
                summary = ""
            rows.append((name, summary))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _plugin(name: str) -> str | None:
    """A command from another distribution's ``lockgate.commands`` entry point (scanned only here)."""
    from importlib.metadata import entry_points

    for ep in entry_points(group="lockgate.commands", name=name):
        return str(ep.value)
    return None


@click.group(cls=CommandTree, context_settings=output.CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="lockgate", message="%(prog)s %(version)s")
def root() -> None:
    """CI-native GitOps: signed Gitless OCI artifacts from CI, one-pass reconcile in the cluster."""


def _failed(message: str, code: int, exc: BaseException, as_json: bool) -> int:
    """Report a failure: one line on stderr, and with ``-o json`` the error object on stdout
    (unless the command already printed its own JSON for it, e.g. a partial push)."""
    terminal.echo(f"error: {message}", err=True)
    if as_json and not getattr(exc, "json_reported", False):
        click.echo(json.dumps(output.error_json(message, code), indent=2))
    return code


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI and map ``LockgateError`` to its exit code."""
    as_json = output.wants_json(sys.argv[1:] if argv is None else argv)
    try:
        # a command may end with click.exceptions.Exit(n) (e.g. diff's 1 for "differences"),
        # which click turns into a return value when not in standalone mode
        result = root.main(args=argv, prog_name="lockgate", standalone_mode=False)
        if isinstance(result, int) and result != 0:
            return result
    except LockgateError as exc:
        return _failed(exc.message, int(exc.exit_code), exc, as_json)
    except click.exceptions.Abort:
        terminal.echo("aborted", err=True)
        return int(ExitCode.FAILURE)
    except click.ClickException as exc:
        # click quotes the value it refused, which may be a URL with credentials in it
        # (``message`` is typed Final in click, but show() reads it at call time)
        setattr(exc, "message", terminal.lines(scrub(exc.message)))  # noqa: B010
        exc.show()
        if as_json:
            click.echo(json.dumps(output.error_json(exc.format_message(), exc.exit_code), indent=2))
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except OSError as exc:
        # a path that turned out unreadable or unwritable after the up-front checks
        message, code = os_error_message(exc)
        return _failed(scrub(message), int(code), exc, as_json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
