"""``lockgate diff PATH oci://...``: local manifests against a remote artifact, object by object.

Loads both sides with ``lockgate.manifests`` (after rendering the local side if asked),
pulls the remote artifact through the shared safe path (``lockgate.artifact.pull``) and
compares them with the shared diff engine (``lockgate.diff``), so the paths, the masks of
Secret values and the actions read as the runner's drift report does. Exit status 1 when
they differ, as diff(1) does.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from action.artifacts import source
from lockgate import manifests, registry
from lockgate.artifact import pull
from lockgate.diff import changeset
from lockgate.diff.changeset import Action, ChangeSet

MARKS = {Action.CREATED: "+", Action.DELETED: "-", Action.CONFIGURED: "~"}


def diff(
    path: str,
    client: registry.RegistryClient,
    ref: registry.Reference,
    *,
    options: source.BuildOptions | None = None,
    media_type: str | None = None,
) -> ChangeSet:
    """What changes from the artifact ``ref`` to the manifests at ``path``."""
    options = options or source.BuildOptions()
    with source.prepare(path, options) as root:
        base = root if root.is_dir() else root.parent
        local = manifests.load([root], relative_to=base)
        with tempfile.TemporaryDirectory(prefix="lockgate-diff-") as tmp:
            out = Path(tmp) / "remote"
            pull.pull(client, ref, out, media_type=media_type)
            remote = manifests.load([out], relative_to=out)
    return changeset.compare(remote, local)


def summary(result: ChangeSet) -> str:
    counts = result.counts()
    unchanged = counts[Action.UNCHANGED.value]
    if not result.changed:
        return f"no differences ({unchanged} objects unchanged)"
    differ = len(result.entries) - unchanged
    parts = ", ".join(f"{counts[a.value]} {a.value}" for a in MARKS)
    return f"{differ} objects differ: {parts}; {unchanged} unchanged"


def render_text(result: ChangeSet) -> str:
    """``+``/``-``/``~`` per object that differs, its field changes below it, then a summary."""
    lines: list[str] = []
    for entry in result.entries:
        if entry.action in MARKS:
            lines.append(f"{MARKS[entry.action]} {entry.key} ({entry.action.value})")
            lines.extend(f"    {change}" for change in entry.changes)
    lines.append(summary(result))
    return "\n".join(lines)


def to_json(result: ChangeSet) -> dict[str, object]:
    """The change set's JSON (``counts``, ``objects``) with ``equal`` on top."""
    return {"equal": not result.changed, **result.to_json()}
