"""The update step: scope policies to an automation, rewrite the tree, render the message.

``setters_for`` decides (purely) which markers an automation may set, with Flux's
scoping: only policies in the automation's namespace that match its ``policySelector``.
Markers naming policies outside that scope (another namespace, defined in the files
read or not, or not selected) are left alone as Flux leaves them, and reported as
out-of-scope notices instead of being ignored silently (IAC #361); a repository often
carries markers for several automations or clusters. ``rewrite_tree`` reads the
``.yaml``/``.yml``/``Kustomization`` files under ``update.path`` that contain the marker
token and plans their rewrite with ``setters``; ``write`` applies the plan.
``commit_message`` renders the template from the change model.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from action.images import files, markers, message, setters
from action.images.model import Automation, Config, NamespacedName
from action.images.setters import FileResult, ProblemKind
from lockgate.errors import ExitCode, UsageError


@dataclass(frozen=True)
class LatestRef:
    """An ImagePolicy's ``status.latestRef``."""

    image: str
    tag: str
    digest: str = ""

    def __str__(self) -> str:
        return f"{self.image}:{self.tag}" + (f"@{self.digest}" if self.digest else "")


@dataclass(frozen=True)
class PolicyResult:
    key: NamespacedName
    latest: LatestRef | None
    error: str | None = None
    candidates: int = 0  #: tags the ordering considered (after exclusions and filterTags)
    exit_code: ExitCode | None = None  #: the failure's class when ``latest`` is None


def setters_for(
    config: Config, automation: Automation, results: Mapping[NamespacedName, PolicyResult]
) -> setters.Setters:
    values: dict[str, str] = {}
    skipped: dict[str, tuple[ProblemKind, str]] = {}
    for key, pol in sorted(config.policies.items()):
        selector = automation.policy_selector
        if key.namespace != automation.key.namespace:
            continue  # the table's namespace makes its markers out of scope, defined or not
        if selector is not None and not selector.matches(pol.labels):
            reason = f"policy {key} is not selected by the automation's policySelector"
            skipped[str(key)] = (ProblemKind.OUT_OF_SCOPE, reason)
        elif (result := results.get(key)) is None or result.latest is None:
            error = result.error if result is not None and result.error else "not evaluated"
            skipped[str(key)] = (ProblemKind.NO_VALUE, f"policy {key} has no latest image: {error}")
        else:
            latest = result.latest
            values.update(
                setters.Setters.for_policy(str(key), image=latest.image, tag=latest.tag, digest=latest.digest)
            )
    return setters.Setters(values, skipped, namespace=automation.key.namespace)


@dataclass(frozen=True)
class TreeResult:
    files: tuple[FileResult, ...] = ()

    @property
    def changed(self) -> tuple[FileResult, ...]:
        return tuple(f for f in self.files if f.changed)

    @property
    def problems(self) -> list[tuple[str, setters.Problem]]:
        return [(f.path, p) for f in self.files for p in f.problems]


def _resolve_update_path(root: Path, update_path: str) -> Path:
    base = root.resolve()
    target = (base / update_path).resolve()
    if target != base and base not in target.parents:
        raise UsageError(f"update.path {update_path!r} leaves the repository {root}")
    return target


def _marked(root: Path, update_path: str) -> list[tuple[str, bytes]]:
    """(path relative to ``root``, content) of the candidate files holding the marker token."""
    start = _resolve_update_path(root, update_path)
    base = str(root.resolve()) + os.sep
    token = setters.TOKEN.encode()
    paths = [str(start)] if start.is_file() else files.walk(start, names=("Kustomization",))
    found = []
    for path in paths:
        data = files.read(path)
        if token in data:
            found.append((path.removeprefix(base), data))
    return found


def rewrite_tree(root: Path, update_path: str, table: setters.Setters) -> TreeResult:
    return TreeResult(tuple(setters.rewrite(path, data, table) for path, data in _marked(root, update_path)))


@dataclass(frozen=True)
class Current:
    """A marker as it is in the repository now."""

    file: str
    line: int
    setter: str
    value: str


def current_values(root: Path, update_path: str = ".") -> dict[str, list[Current]]:
    """Markers under ``update_path`` by policy (``ns:name``), for the scan's CURRENT column."""
    found: dict[str, list[Current]] = {}
    for path, data in _marked(root, update_path):
        marked, _ = markers.find(data)
        for item in marked:
            policy = ":".join(item.setter.split(":")[:2])
            found.setdefault(policy, []).append(Current(path, item.line, item.setter, item.value))
    return found


def write(root: Path, tree: TreeResult) -> list[str]:
    """Write the changed files in place; returns their paths relative to ``root``."""
    for result in tree.changed:
        (root / result.path).write_bytes(result.updated)
    return [result.path for result in tree.changed]


def unified_diff(tree: TreeResult) -> str:
    chunks: list[str] = []
    for result in tree.changed:
        chunks.extend(
            difflib.unified_diff(
                result.original.decode().splitlines(keepends=True),
                result.updated.decode().splitlines(keepends=True),
                fromfile=f"a/{result.path}",
                tofile=f"b/{result.path}",
            )
        )
    return "".join(chunks)


# --- the data Flux's messageTemplate sees (field names as in Go) ------------------------
# Plain records, maps and lists of strings (see message.Record): the field names are the
# template's API, and nothing else is reachable from a template.


def _template_object(api_version: str, kind: str, namespace: str, name: str) -> message.Record:
    # field order is the sort order of ``range`` over ``.Changed.Objects``
    fields = {"APIVersion": api_version, "Kind": kind, "Namespace": namespace, "Name": name}
    return message.Record("ObjectIdentifier", fields)


def _template_change(old: str, new: str, setter: str) -> message.Record:
    return message.Record("Change", {"OldValue": old, "NewValue": new, "Setter": setter})


def template_data(automation: Automation, tree: TreeResult) -> message.Record:
    files: dict[str, dict[message.Record, list[message.Record]]] = {}
    objects: dict[message.Record, list[message.Record]] = {}
    changes: list[message.Record] = []
    for result in tree.changed:
        for change in result.changes:
            obj = change.object
            key = _template_object(obj.api_version, obj.kind, obj.namespace, obj.name)
            item = _template_change(change.old, change.new, change.setter)
            files.setdefault(result.path, {}).setdefault(key, []).append(item)
            objects.setdefault(key, []).append(item)
            if item not in changes:
                changes.append(item)
    namespace, name = automation.key.namespace, automation.key.name
    automation_object = message.Record(
        "NamespacedName", {"Name": name, "Namespace": namespace}, text=f"{namespace}/{name}"
    )
    changed = message.Record("Result", {"FileChanges": files, "Objects": objects, "Changes": changes})
    values = dict(automation.template_values)
    return message.Record(
        "TemplateData", {"AutomationObject": automation_object, "Changed": changed, "Values": values}
    )


def commit_message(automation: Automation, tree: TreeResult) -> str:
    try:
        return message.render(automation.message_template, template_data(automation, tree))
    except message.TemplateError as exc:
        raise message.TemplateError(f"{automation.where or automation.key}: {exc.message}") from None
