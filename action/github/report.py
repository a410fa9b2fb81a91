"""The CLI's ``--output json`` -> step outputs and the Job Summary; its errors -> annotations.

Pure functions over the JSON each command prints (``push``: one result or a list with
``--each``; ``sign``/``verify``: the signature; ``diff``: the change set; ``images update``:
the automations; ``reconcile``: the pass). A failed command prints ``{"error": {"message",
"exitCode"}}`` instead (``lockgate.output.error_json``), or its rows with the failure among
them; every function here takes that shape too, so a failed step ends with its ``json``
output and an annotation, never a traceback. Outputs are strings, as GitHub keeps them;
``updated`` and ``json`` are JSON text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockgate import terminal

OUTPUTS = ("digest", "url", "revision", "changed", "signed-by", "updated", "json")

Result = Any  # the parsed JSON a command printed


def _bool(value: bool) -> str:
    return "true" if value else "false"


def failure(result: Result) -> Mapping[str, Any] | None:
    """The ``{"message", "exitCode"}`` of a command that failed before it had a result."""
    if isinstance(result, dict) and set(result) == {"error"} and isinstance(result["error"], dict):
        return result["error"]
    return None


def outputs(command: str, result: Result) -> dict[str, str]:
    """The step outputs for ``command``'s result; every name of ``OUTPUTS`` is set."""
    out = dict.fromkeys(OUTPUTS, "")
    out["json"] = json.dumps(result, sort_keys=True)
    out["changed"] = "false"
    out["updated"] = "[]"
    if failure(result) is not None:
        return out
    if command == "push":
        rows = result if isinstance(result, list) else [result]
        first = rows[0] if rows else {}
        out["digest"] = str(first.get("digest") or "")
        out["url"] = str(first.get("url") or "")
        out["revision"] = str(first.get("revision") or "")
        out["changed"] = _bool(any(row.get("status") == "pushed" for row in rows))
        out["signed-by"] = str((first.get("signed") or {}).get("signer") or "")
    elif command in ("sign", "verify"):
        out["digest"] = str(result.get("digest") or "")
        reference = str(result.get("reference") or "")
        name = reference.split("@", 1)[0].rsplit(":", 1)[0] if "@" in reference else reference
        out["url"] = f"{name}@{out['digest']}" if out["digest"] and name else reference
        out["signed-by"] = str(result.get("signer") or "")
        out["changed"] = _bool(command == "sign" and result.get("status") == "signed")
    elif command == "diff":
        out["changed"] = _bool(not result.get("equal", True))
    elif command == "images-update":
        updated = updates(result)
        out["updated"] = json.dumps(updated)
        out["changed"] = _bool(bool(updated))
    elif command == "reconcile":
        rows = result if isinstance(result, list) else [result]
        first = rows[0] if rows else {}
        out["digest"] = str(first.get("digest") or "")
        out["url"] = str(first.get("url") or "")
        out["revision"] = str(first.get("revision") or "")
        out["signed-by"] = str(first.get("verifiedBy") or "")
        out["changed"] = _bool(any(_counts_changed(row.get("counts") or {}) for row in rows))
    return out


def _counts_changed(counts: Mapping[str, int]) -> bool:
    return any(counts.get(action, 0) for action in ("created", "configured", "deleted"))


def updates(result: Result) -> list[dict[str, Any]]:
    """Every image update of an ``images update`` run: file, line, setter, old, new, automation."""
    return [
        {
            "automation": automation["automation"],
            "file": change["file"],
            "line": change["line"],
            "setter": change["setter"],
            "old": change["old"],
            "new": change["new"],
        }
        for automation in result.get("automations", [])
        for change in automation.get("changes", [])
    ]


def _cell(value: object) -> str:
    """A table cell: code-quoted, pipes escaped, never empty."""
    text = str(value) if value not in (None, "") else ""
    if not text:
        return "-"
    return "`" + text.replace("`", "'").replace("|", "\\|").replace("\n", " ") + "`"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _change_text(change: Mapping[str, Any]) -> str:
    before = json.dumps(change["before"]) if "before" in change else "(absent)"
    after = json.dumps(change["after"]) if "after" in change else "(absent)"
    return f"{change['path']}: {before} -> {after}"


def _objects_table(result: Mapping[str, Any]) -> list[str]:
    counts = result.get("counts") or {}
    line = ", ".join(f"{n} {action}" for action, n in counts.items() if n) or "no objects"
    rows = [
        (o["object"], o["action"], "; ".join(_change_text(c) for c in o.get("changes", [])))
        for o in result.get("objects", [])
        if o["action"] != "unchanged"
    ]
    return [line, "", *(_table(("Object", "Action", "Changes"), rows) if rows else [])]


def summary(command: str, result: Result) -> str:
    """The Job Summary markdown for ``command``'s result."""
    lines = [f"### lockgate {command}", ""]
    failed = failure(result)
    if failed is not None:
        lines += [f"Failed (exit {failed.get('exitCode')}): {failed.get('message')}"]
    elif command == "push":
        rows = result if isinstance(result, list) else [result]
        lines += _table(
            ("Artifact", "Digest", "Tags", "Status", "Revision", "Signer"),
            [
                (
                    row.get("repository") or row.get("path"),
                    row.get("digest"),
                    ", ".join(row.get("tags") or []),
                    row.get("status"),
                    row.get("revision") or row.get("error"),
                    (row.get("signed") or {}).get("signer"),
                )
                for row in rows
            ],
        )
    elif command in ("sign", "verify"):
        lines += _table(
            ("Artifact", "Digest", "Signer", "Mode"),
            [(result.get("reference"), result.get("digest"), result.get("signer"), result.get("mode"))],
        )
    elif command == "diff":
        lines += ["No differences." if result.get("equal") else "The manifests differ from the artifact.", ""]
        lines += _objects_table(result)
    elif command == "images-update":
        rows = [(u["file"], u["line"], u["setter"], u["old"], u["new"]) for u in updates(result)]
        lines += _table(("File", "Line", "Policy", "Old", "New"), rows) if rows else ["No image updates."]
        for automation in result.get("automations", []):
            if automation.get("commit"):
                pushed = " and pushed" if automation.get("pushed") else ""
                lines += ["", f"Committed `{automation['commit'][:12]}` on `{automation['branch']}`{pushed}."]
            pr = automation.get("pullRequest")
            if pr:
                lines += ["", f"Pull request [#{pr['number']}]({pr['url']}) {pr['action']}."]
    elif command == "reconcile":
        for row in result if isinstance(result, list) else [result]:
            lines += [f"**{row.get('name')}** `{row.get('revision') or row.get('digest')}`", ""]
            if row.get("error"):
                lines += [f"Failed (exit {row['error'].get('exitCode')}): {row['error'].get('message')}", ""]
            lines += _objects_table(row)
            lines.append("")
    # what the commands printed as JSON comes back raw here (a tenant's status message, a
    # forged revision): GitHub's page shows bidi overrides and its log viewer obeys ANSI codes
    return terminal.lines("\n".join(lines).rstrip() + "\n")


@dataclass(frozen=True)
class Annotation:
    """One ``::error``/``::warning`` workflow command."""

    level: str
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None
    title: str | None = None


#: ``error: FILE:LINE[:COL]: MESSAGE`` (manifests), ``error: FILE.yaml: MESSAGE`` (configuration)
_LOCATED = re.compile(r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+)(?::(?P<col>\d+))?: (?P<message>.+)$")
_FILE_ONLY = re.compile(r"^(?P<file>[^\s:][^:]*?\.ya?ml): (?P<message>.+)$")


def _relative(file: str, workspace: Path | None) -> str:
    path = Path(file)
    if workspace is not None and path.is_absolute():
        try:
            return str(path.relative_to(workspace))
        except ValueError:
            return file
    return file


def annotate(
    command: str, stderr: str, result: Result | None, *, failed: bool, workspace: Path | None
) -> list[Annotation]:
    """Annotations for a run: each ``error:`` line of the CLI, file and line when it names them,
    and each problem an ``images update`` reported in its JSON."""
    title = f"lockgate {command}"
    found: list[Annotation] = []
    for raw in stderr.splitlines():
        if not raw.startswith("error: "):
            continue
        text = raw[len("error: ") :]
        located = _LOCATED.match(text) or _FILE_ONLY.match(text)
        if located is None:
            found.append(Annotation("error", text, title=title))
            continue
        groups = located.groupdict()
        found.append(
            Annotation(
                "error",
                groups["message"],
                file=_relative(groups["file"], workspace),
                line=int(groups["line"]) if groups.get("line") else None,
                col=int(groups["col"]) if groups.get("col") else None,
                title=title,
            )
        )
    if command == "images-update" and isinstance(result, dict):
        for automation in result.get("automations", []):
            for problem in automation.get("problems", []):
                found.append(
                    Annotation(
                        "error" if failed else "warning",
                        f"{problem['kind']}: {problem['message']}",
                        file=_relative(problem["file"], workspace),
                        line=problem.get("line"),
                        title=title,
                    )
                )
    return found
