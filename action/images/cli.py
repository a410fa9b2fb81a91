"""``lockgate images scan`` and ``lockgate images update``: one library call each, then render.

Both render from the report's ``to_json()`` rows, so the table and ``--output json`` say
the same thing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from action.images import run
from lockgate import output, terminal
from lockgate.errors import UsageError
from lockgate.forge import remote

_PATH = click.option(
    "--path",
    "path",
    default=".",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    show_default=True,
    help="The repository checkout holding the ImagePolicy and automation documents.",
)
_OUTPUT = output.output_option
_PAGE = click.option(
    "--page-size", default=1000, show_default=True, help="Tags per registry page (n=); pages follow Link."
)
_SECRETS = click.option(
    "--secrets-dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    envvar="LOCKGATE_SECRETS_DIR",
    help="Where secretRef names resolve: DIR/NAME/.dockerconfigjson or DIR/NAME.json "
    "[env LOCKGATE_SECRETS_DIR]. Without it, secretRef uses the job's Docker login.",
)


@click.group(context_settings=output.CONTEXT_SETTINGS)
def images() -> None:
    """Scan registries for new image tags and update setter markers."""


def _current(row: dict[str, Any]) -> str:
    values = sorted({c["value"] for c in row["current"]})
    return ", ".join(values) if values else "-"


def _why(why: dict[str, Any]) -> str:
    counts = f"{why['candidates']} candidates of {why['tags']} tags" if why["tags"] is not None else ""
    return f"{why['policy']}" + (f", {counts}" if counts else "")


def _scan_table(rows: list[dict[str, Any]]) -> str:
    table = [("POLICY", "CURRENT", "LATEST", "TAGS", "WHY / ERROR")]
    for row in rows:
        tags = "-" if row["tags"] is None else str(row["tags"])
        detail = f"error: {row['error']}" if row["error"] else _why(row)
        table.append((row["name"], _current(row), row["latest"] or "-", tags, detail))
    widths = [max(len(line[i]) for line in table) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line[:4], widths, strict=True)) + "  " + line[4]
        for line in table
    )


@images.command("scan", short_help="Evaluate every ImagePolicy; nothing is written.")
@_PATH
@_OUTPUT
@_PAGE
@_SECRETS
def scan_command(path: Path, output: str, page_size: int, secrets_dir: Path | None) -> None:
    """List tags and evaluate every ImagePolicy under --path (nothing is written)."""
    report = run.run_scan(path, page_size=page_size, secrets_dir=secrets_dir)
    rows = report.to_json()
    click.echo(json.dumps(rows, indent=2) if output == "json" else terminal.lines(_scan_table(rows)))
    failure = report.failure("scan")
    if failure is not None:
        failure.json_reported = output == "json"
        raise failure


def _update_summary(report: run.UpdateReport, dry_run: bool) -> None:
    for item, row in zip(report.automations, report.to_json()["automations"], strict=True):
        if row["suspended"]:
            terminal.echo(f"automation {row['automation']} is suspended (spec.suspend); skipped")
        if dry_run and item.diff:
            terminal.echo(item.diff, nl=False)
        for change in row["changes"]:
            where = f"{change['file']}:{change['line']}"
            terminal.echo(
                f"{where}: {change['setter']}: {change['old']} -> {change['new']} ({_why(change['why'])})"
            )
        for problem in row["problems"]:
            terminal.echo(
                f"{problem['file']}:{problem['line'] or '-'}: {problem['kind']}: {problem['message']}",
                err=True,
            )
        if row["commit"]:
            done = " and pushed" if row["pushed"] else ""
            how = ("signed, " if row["signed"] else "") + f"{row['attempts']} attempt(s)"
            terminal.echo(f"committed {row['commit'][:12]} ({how}) on {row['branch']}{done}")
        if row["pullRequest"]:
            pr = row["pullRequest"]
            terminal.echo(f"pull request #{pr['number']} {pr['action']}: {pr['url']}")
    for policy in report.scan.to_json():
        if policy["error"]:
            terminal.echo(f"policy {policy['name']}: {policy['error']}", err=True)
    total = _update_total(report, dry_run)
    if total:
        terminal.echo(total)


def _update_total(report: run.UpdateReport, dry_run: bool) -> str:
    """The run's last line: what changed, what would change (--dry-run), or that nothing did."""
    rows = report.to_json()["automations"]
    values = sum(len(row["changes"]) for row in rows)
    files = len({change["file"] for row in rows for change in row["changes"]})
    if not values:
        # after a failure the error says what happened; "nothing to update" would mislead
        return "" if report.failure() else "nothing to update: every marked value is its policy's latest"
    counted = f"{values} value(s) in {files} file(s)"
    return f"{counted} would change; nothing was written (--dry-run)" if dry_run else f"{counted} changed"


@images.command("update", short_help="Rewrite the setter markers' values (commit, push, PR).")
@_PATH
@_OUTPUT
@_PAGE
@_SECRETS
@click.option("--commit", is_flag=True, help="Commit the changes (the checkout must be clean).")
@click.option("--push", is_flag=True, help="Push the commit; retries when the remote moved.")
@click.option("--branch", default=None, help="Push to this update branch instead of the checkout's.")
@click.option(
    "--pr",
    "pull_request",
    is_flag=True,
    help="Open or update one pull/merge request from the update branch on the remote's forge "
    "(implies --commit --push; needs the forge's token, e.g. GITHUB_TOKEN or GITLAB_TOKEN).",
)
@click.option(
    "--forge",
    type=click.Choice(remote.FORGES),
    default=None,
    help="--pr: the forge, when the remote URL's host does not tell (a self-hosted GitLab or Gitea).",
)
@click.option("--label", "labels", multiple=True, help="--pr: a label of the pull request (repeatable).")
@click.option(
    "--signing-key",
    envvar="LOCKGATE_SIGNING_KEY",
    help="Sign commits: an SSH key file (gpg.format ssh) or a GPG key id [env LOCKGATE_SIGNING_KEY].",
)
@click.option("--dry-run", is_flag=True, help="Print a unified diff and change nothing.")
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 10 when a marker names a policy outside the automation's scope (by default a notice, "
    "as Flux leaves such markers alone).",
)
def update_command(
    path: Path,
    output: str,
    page_size: int,
    secrets_dir: Path | None,
    commit: bool,
    push: bool,
    branch: str | None,
    pull_request: bool,
    forge: str | None,
    labels: tuple[str, ...],
    signing_key: str | None,
    dry_run: bool,
    strict: bool,
) -> None:
    """Rewrite the values marked with {"$imagepolicy": "<namespace>:<name>"} under update.path."""
    writes = [flag for flag, on in (("--commit", commit), ("--push", push), ("--pr", pull_request)) if on]
    if dry_run and writes:
        raise UsageError(f"--dry-run changes nothing, so it cannot be combined with {', '.join(writes)}")
    if branch is not None and not writes:
        raise UsageError("--branch names the branch to commit to: add --commit (and --push) or --pr")
    git = run.GitOptions.defaults(
        commit=commit,
        push=push,
        branch=branch,
        signing_key=signing_key,
        pull_request=pull_request,
        forge=forge,
        labels=labels,
    )
    report = run.run_update(path, git=git, dry_run=dry_run, page_size=page_size, secrets_dir=secrets_dir)
    if output == "json":
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        _update_summary(report, dry_run)
    failure = report.failure(strict=strict, dry_run=dry_run)
    if failure is not None:
        failure.json_reported = output == "json"
        raise failure
