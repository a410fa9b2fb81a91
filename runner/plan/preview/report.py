"""A preview for people: the terminal table and the Markdown of the pull-request comment.

Pure, from the values of ``model``. Everything a manifest, a configuration or an attestation
wrote (names, field values, cluster names) is text from outside: the table escapes control
characters (``lockgate.terminal.shown``), the Markdown puts it in code spans whose fence is
longer than any run of backticks in it, with ``|`` escaped and newlines folded, so a value
cannot close a cell, a table, a ``<details>`` block or start HTML. A forge keeps a comment to
65,536 characters: the details are cut to fit (``LIMIT``), saying how many were left out.
"""

from __future__ import annotations

import re

from lockgate.diff.changeset import Action, Entry
from lockgate.terminal import shown
from runner.plan.preview.model import Basis, Preview, Target

#: GitHub keeps a comment to 65,536 characters; the rest goes to the marker and the cut note
LIMIT = 60_000
MARKS = {Action.CREATED: "+", Action.DELETED: "-", Action.CONFIGURED: "~", Action.SKIPPED: "="}
_WORDS = {Action.CREATED: "created", Action.CONFIGURED: "changed", Action.DELETED: "deleted"}
_TICKS = re.compile(r"`+")


def short(digest: str) -> str:
    algorithm, _, hexdigest = digest.partition(":")
    return f"{algorithm}:{hexdigest[:12]}" if hexdigest else digest


def running_text(target: Target) -> str:
    found = target.running
    if found.basis is Basis.ATTESTED:
        text = f"{short(found.digest)}, attested healthy at {found.attested_at or '?'} by {found.attested_by}"
    elif found.basis is Basis.TAG:
        text = f"{short(found.digest)} ({found.revision.split('@')[0]}), from the tag: not attested"
    else:
        text = "nothing (no attested digest, no tag)"
    if found.verified_by:
        text += f"; signed by {found.verified_by}"
    return text


def summary(target: Target) -> str:
    if target.error is not None:
        return "not previewed"
    counts = target.counts()
    parts = [f"{counts[a.value]} {word}" for a, word in _WORDS.items() if counts[a.value]]
    if target.hooks:
        parts.append(f"{len(target.hooks)} hooks run")
    return ", ".join(parts) or "no change"


# -- the terminal table ----------------------------------------------------------------------------


def _entry_lines(entry: Entry) -> list[str]:
    reason = f"  ({shown(entry.reason, limit=None)})" if entry.reason else ""
    lines = [f"    {MARKS[entry.action]} {shown(str(entry.key), limit=None)}  {entry.action.value}{reason}"]
    lines += [f"        {shown(str(change), limit=None)}" for change in entry.changes]
    return lines


def table(preview: Preview) -> str:
    lines: list[str] = []
    for target in preview.targets:
        head = f"{shown(target.cluster)} / {shown(target.sync)}  ({shown(target.config, limit=None)})"
        lines.append(head)
        if target.error is not None:
            lines += [f"  error: {shown(target.error.message, limit=None)}", ""]
            continue
        lines.append(f"  runs:  {shown(running_text(target), limit=None)}")
        lines.append(f"  next pass: {target.changeset.summary()}")
        if target.refused:
            lines.append(f"  REFUSED: {shown(target.refused, limit=None)}")
        for entry in target.changeset.entries:
            if entry.action is not Action.UNCHANGED:
                lines += _entry_lines(entry)
        for hook in target.hooks:
            lines.append(
                f"    > {shown(hook.object, limit=None)}  hook ({', '.join(hook.phases)}; wave {hook.wave})"
            )
        if target.hazards:
            lines.append("  hazards:")
            lines += [f"    ! {h.kind.value}: {shown(h.message, limit=None)}" for h in target.hazards]
        notes = (*target.running.notes, *target.notes)
        if notes:
            lines.append("  notes:")
            lines += [f"    - {shown(note, limit=None)}" for note in notes]
        lines.append("")
    lines += [f"note: {shown(note, limit=None)}" for note in preview.notes]
    changed = sum(1 for t in preview.targets if t.changed)
    lines.append(f"{changed} of {len(preview.targets)} syncs change")
    return "\n".join(lines)


# -- Markdown ----------------------------------------------------------------------------------------


def code(text: str) -> str:
    """``text`` as an inline code span no value can break out of (nor out of a table cell)."""
    flat = " ".join(text.split("\n")).replace("\r", " ").replace("|", "\\|")
    longest = max((len(m) for m in _TICKS.findall(flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat.strip() else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")


def plain(text: str) -> str:
    """``text`` as Markdown text: punctuation escaped, HTML's ``<``, ``>`` and ``&`` as entities."""
    flat = " ".join(text.split())
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", flat)


def _row(target: Target) -> str:
    counts = target.counts()
    if target.error is not None:
        runs, numbers = "error", " | | | "
    else:
        basis = {Basis.ATTESTED: "attested", Basis.TAG: "tag, not attested", Basis.NONE: "nothing"}
        runs = (
            f"{code(short(target.running.digest))} {basis[target.running.basis]}"
            if target.running.digest
            else "nothing"
        )
        numbers = " | ".join(
            str(counts[a.value]) for a in (Action.CREATED, Action.CONFIGURED, Action.DELETED)
        )
        numbers += f" | {counts[Action.UNCHANGED.value]}"
    hazards = ", ".join(sorted({h.kind.value for h in target.hazards}))
    flag = ("⛔ refused; " if target.refused else "") + (f"⚠️ {hazards}" if hazards else "")
    return f"| {code(target.cluster)} | {code(target.sync)} | {runs} | {numbers} | {flag} |"


def _details(target: Target) -> list[str]:
    title = f"<b>{plain(target.cluster)} / {plain(target.sync)}</b>: {plain(summary(target))}"
    out = [f"<details><summary>{title}</summary>", ""]
    if target.error is not None:
        out += [f"Not previewed: {code(target.error.message)}", "", "</details>", ""]
        return out
    out.append(f"Runs {code(running_text(target))}.")
    out.append("")
    if target.refused:
        out += [f"**The next pass stops before its first write:** {code(target.refused)}", ""]
    rows = [e for e in target.changeset.entries if e.action is not Action.UNCHANGED]
    if rows:
        out += ["| object | action | changes |", "|---|---|---|"]
        for entry in rows:
            action = entry.action.value + (f" ({plain(entry.reason)})" if entry.reason else "")
            changes = "<br>".join(code(str(c)) for c in entry.changes)
            out.append(f"| {code(str(entry.key))} | {action} | {changes} |")
        out.append("")
    if target.hooks:
        out.append(
            "**Hooks that run:** "
            + ", ".join(f"{code(h.object)} ({', '.join(h.phases)})" for h in target.hooks)
        )
        out.append("")
    if target.hazards:
        out.append("**Hazards**")
        out += [f"- ⚠️ {code(h.kind.value)}: {code(h.message)}" for h in target.hazards]
        out.append("")
    notes = (*target.running.notes, *target.notes)
    if notes:
        out.append("**Notes**")
        out += [f"- {code(note)}" for note in notes]
        out.append("")
    out += ["</details>", ""]
    return out


def markdown(preview: Preview, *, title: str = "lockgate preview") -> str:
    """A summary table first, then each cluster and sync folded, cut to ``LIMIT`` characters."""
    changed = sum(1 for t in preview.targets if t.changed)
    head = [
        f"### {plain(title)}",
        "",
        f"What the next pass of each cluster's runner does with {code(preview.path)}: "
        f"{changed} of {len(preview.targets)} syncs change.",
        "",
        "| cluster | sync | runs now | created | changed | deleted | unchanged | hazards |",
        "|---|---|---|---:|---:|---:|---:|---|",
        *(_row(t) for t in preview.targets),
        "",
    ]
    text = "\n".join(head)
    left_out = 0
    for target in preview.targets:
        block = "\n".join(_details(target))
        if len(text) + len(block) > LIMIT:
            left_out += 1
            continue
        text += "\n" + block
    if left_out:
        text += (
            f"\n_{left_out} syncs' details are left out to fit a comment: run `lockgate preview` for all._\n"
        )
    notes = "".join(f"\n_{plain(note)}_\n" for note in preview.notes)
    return text + notes
