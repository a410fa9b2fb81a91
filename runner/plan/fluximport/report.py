"""What ``lockgate import`` could not carry: one row per Flux field, with its class.

Pure. A row names the Flux object (``Kustomization flux-system/apps``), the field path in
it (``spec.retryInterval``), a class and what it means for the user. The classes:

- ``dropped``: the field is not carried; the sync is written without it.
- ``semantic``: carried, but it means something else in lockgate (a default, a namespace).
- ``unsupported``: the object cannot be carried at all and is left out of the config
  (a replacement, when there is one, says what to do instead).
- ``renamed``: a name changed (sync names are one flat namespace).
- ``security``: carried with a weaker or different security posture than it had.

Rows are sorted, so two runs over the same objects give the same report.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from runner.plan.fluximport import render


class RowClass(enum.StrEnum):
    DROPPED = "dropped"
    SEMANTIC = "semantic"
    UNSUPPORTED = "unsupported"
    RENAMED = "renamed"
    SECURITY = "security"


@dataclass(frozen=True, order=True)
class Row:
    object: str
    field: str
    klass: RowClass
    message: str

    def to_json(self) -> dict[str, str]:
        return {
            "object": self.object,
            "field": self.field,
            "class": self.klass.value,
            "message": self.message,
        }


@dataclass(frozen=True)
class Replacement:
    """What replaces a Flux object a Sync cannot read (a GitRepository source, a HelmRelease):
    the CI commands that publish an artifact, and the Sync that then applies it."""

    object: str
    commands: tuple[str, ...]
    sync: dict[str, Any]
    #: what the replacement cannot carry, said once for the object
    notes: tuple[str, ...] = ()
    #: files the commands read (a chart's values), by name
    files: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "object": self.object,
            "commands": list(self.commands),
            "files": dict(self.files),
            "sync": self.sync,
            "notes": list(self.notes),
        }


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    replacements: list[Replacement] = field(default_factory=list)
    #: a GitHub Actions workflow running ``lockgate images`` on a schedule ("" : no image automation)
    workflow: str = ""
    #: the syncs written, and the Flux objects each one came from
    syncs: dict[str, str] = field(default_factory=dict)

    def add(self, obj: str, path: str, klass: RowClass, message: str) -> None:
        self.rows.append(Row(obj, path, klass, message))

    @property
    def empty(self) -> bool:
        return not self.rows

    def sorted(self) -> Report:
        return Report(
            rows=sorted(set(self.rows)),
            replacements=sorted(self.replacements, key=lambda r: r.object),
            workflow=self.workflow,
            syncs=dict(sorted(self.syncs.items())),
        )

    def to_json(self) -> dict[str, Any]:
        done = self.sorted()
        counts = {k.value: sum(1 for r in done.rows if r.klass is k) for k in RowClass}
        return {
            "syncs": done.syncs,
            "counts": counts,
            "rows": [r.to_json() for r in done.rows],
            "replacements": [r.to_json() for r in done.replacements],
            **({"workflow": done.workflow} if done.workflow else {}),
        }

    def json_text(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=False) + "\n"

    def table(self) -> str:
        """The report for a terminal: the rows grouped by object, then the replacements."""
        done = self.sorted()
        lines: list[str] = []
        if not done.rows:
            lines.append("everything was carried: the report is empty")
        else:
            width = max(len(r.klass.value) for r in done.rows)
            current = ""
            for row in done.rows:
                if row.object != current:
                    current = row.object
                    lines.append(f"{row.object}:")
                lines.append(f"  {row.klass.value:<{width}}  {row.field}: {row.message}")
        for replacement in done.replacements:
            lines.append("")
            lines.append(f"{replacement.object}: replace it in CI with")
            lines += [f"  {command}" for command in replacement.commands]
            for name, text in replacement.files.items():
                lines.append(f"  {name}:")
                lines += [f"    {line}" for line in text.splitlines()]
            lines.append("  and this Sync:")
            lines += [f"    {line}" for line in render.dump(replacement.sync).splitlines()]
            lines += [f"  note: {note}" for note in replacement.notes]
        if done.workflow:
            lines += ["", "image automation moves to CI: this workflow runs lockgate images on a schedule:"]
            lines += [f"  {line}" for line in done.workflow.splitlines()]
        counts = ", ".join(
            f"{n} {k.value}" for k in RowClass if (n := sum(1 for r in done.rows if r.klass is k))
        )
        lines += ["", f"{len(done.syncs)} sync(s) written; report: {counts or 'empty'}"]
        return "\n".join(lines) + "\n"
