"""Which ``oci-layout://`` directories a sync may read: the Runner's ``spec.layoutRoots``.

The runner reads whatever its Pod mounts, every team's mirror included, so a Sync naming a
directory is a way into another tenant's files (its database URL in a mirrored manifest)
unless the platform says where each namespace's layouts are. Namespaces are the tenancy
line lockgate already draws (``noCrossNamespaceRefs``, ``serviceAccountName``): a sync whose
runner namespace is the Runner's own is the platform's, and reads by default under the
config file's own directory (where the platform put its file, and its mirrors beside it); a
sync of any other namespace is a tenant's, and reads none until the Runner lists a root for
its namespace. An entry for a namespace replaces its default.

Checked twice: when the file is loaded, lexically (the directory is one of the roots or under
one, ``..`` resolved as written), so a refusal names file:line and the setting to change; and
at every read, through ``lockgate.registry.beneath.Tree`` rooted at the root chosen here,
which follows no symlink out of it (a mirror can change after the file was loaded).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import PurePath

from lockgate import registry
from lockgate.errors import LockgateError
from runner.pipeline.options import runner_namespace
from runner.pipeline.runnerdoc import RunnerSettings

FIELD = "spec.layoutRoots"


@dataclass(frozen=True)
class Allowed:
    """The root a sync's layout lies under, and how a person would change it."""

    root: str
    setting: str


def _absolute(path: str) -> str:
    return os.path.normpath(os.path.abspath(path))


def _under(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def roots(namespace: str, runner: RunnerSettings, directory: PurePath | None) -> tuple[str, ...]:
    """The roots the syncs of runner namespace ``namespace`` may read layouts under."""
    if any(entry.namespace == namespace for entry in runner.layout_roots):
        return tuple(_absolute(p) for e in runner.layout_roots if e.namespace == namespace for p in e.paths)
    platform = runner_namespace(runner.namespace)
    return (_absolute(str(directory)),) if namespace == platform and directory is not None else ()


def allowed(
    url: str, namespace: str, runner: RunnerSettings, directory: PurePath | None
) -> Allowed | str | None:
    """For a sync of ``namespace`` reading ``url``: None when it is no layout, the ``Allowed``
    root it lies under, or why it is refused (the path, the roots, the setting to change)."""
    try:
        ref = registry.parse(url)
    except LockgateError:
        return None  # the URL's own error is reported where it is parsed
    if ref.layout is None:
        return None
    wanted = _absolute(ref.layout)
    found = roots(namespace, runner, directory)
    setting = f"the Runner's {FIELD} for namespace {namespace}"
    for root in found:
        if _under(wanted, root):
            return Allowed(root, setting)
    platform = runner_namespace(runner.namespace)
    if found:
        where = f"only under {', '.join(found)}"
    elif namespace == platform:
        where = "none here: the Runner namespace's default root (its config file's directory) is unknown"
    else:
        where = (
            f"none: a tenant's sync (its namespace is not the Runner's, {platform}) reads no layout unless "
            "the Runner allows a root for its namespace"
        )
    return (
        f"oci-layout://{wanted}: the syncs of namespace {namespace} may read layouts {where}; "
        f"add a root holding it to the Runner's {FIELD} (- namespace: {namespace}, paths: "
        f"[{os.path.dirname(wanted)}]) if that namespace may read it"
    )


def problems(runner: RunnerSettings) -> list[tuple[int, int, str]]:
    """(entry, path, why) of each root that is not an absolute directory path."""
    return [
        (index, number, f"{path!r} is not absolute: a root is a directory of the runner's Pod, from /")
        for index, entry in enumerate(runner.layout_roots)
        for number, path in enumerate(entry.paths)
        if not path.startswith("/")
    ]
