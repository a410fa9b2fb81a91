"""The click root of the ``lockgate`` command.

The root lives in the shared core but must not import the CI or cluster halves, so their
commands plug in through the ``lockgate.commands`` entry-point group (declared in
pyproject.toml) and are loaded only when used. Every planned command is listed in
``PLANNED``; one whose issue has not landed is a stub that exits non-zero with
"not implemented yet" and prints nothing else.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points
from typing import Any

import click

from lockgate import __version__
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
    "keygen": "Create a cosign-compatible key pair.",
    "sign": "Sign an artifact by digest (key or Sigstore keyless).",
    "attest": "Attest a predicate about an artifact by digest (e.g. a manual approval).",
    "verify": "Verify an artifact's signature against a policy.",
    "images": "Scan registries for new image tags and update setter markers.",
    "reconcile": "Pull a verified artifact and converge the cluster (one pass).",
    "serve": "Run reconcile passes continuously and serve health and metrics.",
    "status": "Show what the runner last applied, its health and history.",
    "sync": "Ask lockgate serve for a pass of one sync now.",
    "rollback": "Roll a sync back to an earlier digest, verified again.",
}


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
    """A group whose commands come from entry points, falling back to planned stubs."""

    def _plugins(self) -> dict[str, Any]:
        return {ep.name: ep for ep in entry_points(group="lockgate.commands")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(PLANNED) | set(self._plugins()) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        plugin = self._plugins().get(cmd_name)
        if plugin is not None:
            command = plugin.load()
            if not isinstance(command, click.Command):
                raise TypeError(f"entry point {plugin.value} is not a click command")
            return command
        planned = PLANNED.get(cmd_name)
        if planned is not None:
            return _stub(cmd_name, planned)
        return None


@click.group(cls=CommandTree)
@click.version_option(__version__, prog_name="lockgate", message="%(prog)s %(version)s")
def root() -> None:
    """CI-native GitOps: signed Gitless OCI artifacts from CI, one-pass reconcile in the cluster."""


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI and map ``LockgateError`` to its exit code."""
    try:
        # a command may end with click.exceptions.Exit(n) (e.g. diff's 1 for "differences"),
        # which click turns into a return value when not in standalone mode
        result = root.main(args=argv, prog_name="lockgate", standalone_mode=False)
        if isinstance(result, int) and result != 0:
            return result
    except LockgateError as exc:
        click.echo(f"error: {exc.message}", err=True)
        return int(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return int(ExitCode.FAILURE)
    except click.ClickException as exc:
        # click quotes the value it refused, which may be a URL with credentials in it
        # (``message`` is typed Final in click, but show() reads it at call time)
        setattr(exc, "message", scrub(exc.message))  # noqa: B010
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except OSError as exc:
        # a path that turned out unreadable or unwritable after the up-front checks
        message, code = os_error_message(exc)
        click.echo(f"error: {scrub(message)}", err=True)
        return int(code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
