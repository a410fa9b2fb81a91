"""Setter rewriting: replace exactly the marked scalars, byte for byte.

The second half of setter rewriting (``markers`` finds the markers). Flux reads marked
files with kyaml and writes them back re-serialised, which reformats them (IAC #68,
#616). Here the new text is the old text with each marked scalar's span replaced, so
comments, indentation, quoting, block scalars, line endings and other documents are
untouched by construction. The result is then re-parsed and compared event by event
with the original: anything but the marked values differing is a bug, and the file is
left alone. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import yaml

from action.images import markers, yamlvalues
from action.images.markers import BLOCKING, NOTICES, TOKEN, ObjectId, Problem, ProblemKind
from lockgate import bounded

__all__ = [
    "BLOCKING",
    "NOTICES",
    "TOKEN",
    "Change",
    "FileResult",
    "ObjectId",
    "Problem",
    "ProblemKind",
    "RewriteVerificationError",
    "Setters",
    "rewrite",
]

PARTS = ("tag", "name", "digest")


@dataclass(frozen=True)
class Change:
    setter: str
    old: str
    new: str
    object: ObjectId
    line: int  #: 1-based line of the rewritten scalar in the original file


@dataclass(frozen=True)
class Setters:
    """What markers may set: setter name -> value, and policies known but not applicable.

    ``namespace`` is the automation's: a marker naming a policy in another namespace,
    defined or not, is out of scope (Flux leaves it to that namespace's automation), while
    an unknown policy in this namespace is a mistake that keeps its file untouched.
    """

    values: Mapping[str, str]
    #: "ns:name" of policies that exist but are out of scope or have no result -> reason
    skipped: Mapping[str, tuple[ProblemKind, str]] = field(default_factory=dict)
    namespace: str | None = None

    @classmethod
    def for_policy(cls, key: str, *, image: str, tag: str, digest: str = "") -> dict[str, str]:
        """The four setters of one policy ``key`` ("ns:name"), as Flux defines them."""
        ref = f"{image}:{tag}" + (f"@{digest}" if digest else "")
        values = {key: ref, f"{key}:tag": tag, f"{key}:name": image}
        if digest:
            values[f"{key}:digest"] = digest
        return values


@dataclass(frozen=True)
class FileResult:
    path: str
    original: bytes
    updated: bytes
    changes: tuple[Change, ...] = ()
    problems: tuple[Problem, ...] = ()

    @property
    def changed(self) -> bool:
        return self.updated != self.original


def _resolve(name: str, setters: Setters, line: int) -> str | Problem:
    if name in setters.values:
        return setters.values[name]
    parts = name.split(":")
    key = ":".join(parts[:2])
    valid_shape = len(parts) == 2 or (len(parts) == 3 and parts[2] in PARTS)
    if valid_shape and key in setters.skipped:
        kind, reason = setters.skipped[key]
        return Problem(kind, f"marker {name!r} skipped: {reason}", line, name)
    if valid_shape and setters.namespace is not None and parts[0] != setters.namespace:
        reason = (
            f"policy {key} is outside the automation's namespace {setters.namespace!r}; "
            f"left for an automation in {parts[0]!r}, as Flux leaves it"
        )
        return Problem(ProblemKind.OUT_OF_SCOPE, f"marker {name!r} skipped: {reason}", line, name)
    if valid_shape and key in {":".join(k.split(":")[:2]) for k in setters.values}:
        return Problem(ProblemKind.NO_VALUE, f"marker {name!r} skipped: the policy has no digest", line, name)
    hint = (
        ""
        if valid_shape
        else " (expected '<namespace>:<name>' with an optional ':tag', ':name' or ':digest')"
    )
    return Problem(
        ProblemKind.UNKNOWN_POLICY, f"marker names unknown image policy {name!r}{hint}", line, name
    )


def _events(text: str) -> list[tuple[str, object, object]]:
    return [
        (type(e).__name__, getattr(e, "value", None), getattr(e, "anchor", None))
        for e in yaml.parse(text, Loader=markers.LOADER)
    ]


def rewrite(path: str, data: bytes, setters: Setters) -> FileResult:
    """Rewrite the marked scalars of one file; the file's other bytes never change."""
    unchanged = FileResult(path, data, data)
    if TOKEN.encode() not in data:
        return unchanged
    try:
        text = data.decode("utf-8")
        roots = markers.parse(text)
    except (UnicodeDecodeError, yaml.YAMLError, bounded.LimitExceeded) as exc:
        return FileResult(path, data, data, problems=(markers.unparsable(exc),))
    found, problems = markers.find_in(text, roots)
    edits: list[tuple[int, int, str]] = []
    changes: list[Change] = []
    for marked in found:
        node, line = marked.node, marked.line
        resolved = _resolve(marked.setter, setters, line)
        if isinstance(resolved, Problem):
            problems.append(resolved)
            continue
        if resolved == node.value:
            continue
        if node.style in ("|", ">"):
            problems.append(
                Problem(ProblemKind.UNSUPPORTED, "markers on block scalars are not supported", line)
            )
            continue
        start = markers.content_start(text, node)
        edits.append((start, int(node.end_mark.index), yamlvalues.render(resolved, style=node.style or None)))
        changes.append(Change(marked.setter, str(node.value), resolved, marked.obj, line))
    if any(problem.kind in BLOCKING for problem in problems) or not edits:
        return FileResult(path, data, data, problems=tuple(problems))
    new_text = text
    for start, end, replacement in sorted(edits, reverse=True):
        new_text = new_text[:start] + replacement + new_text[end:]
    _verify(text, new_text, changes)
    return FileResult(path, data, new_text.encode("utf-8"), tuple(changes), tuple(problems))


class RewriteVerificationError(AssertionError):
    """The rewritten text does not parse to the original plus the intended values."""


def _verify(old: str, new: str, changes: list[Change]) -> None:
    before, after = _events(old), _events(new)
    if len(before) != len(after):
        raise RewriteVerificationError("rewrite changed the document structure")
    expected = {(change.old, change.new) for change in changes}
    for was, now in zip(before, after, strict=True):
        if was != now and (was[0], was[2]) == (now[0], now[2]) and (was[1], now[1]) in expected:
            continue
        if was != now:
            raise RewriteVerificationError(f"rewrite changed {was!r} into {now!r}")
